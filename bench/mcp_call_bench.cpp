// Latency of sequential tools/call through airlock's MCP client to a real upstream
// (@modelcontextprotocol/server-everything get-sum), over stdio and over Streamable HTTP.
// Prints a table and one JSON line; never passes or fails on time.
//
//   build/bench/bench_mcp_call_bench [--calls N]

#include "mcp/client/client.hpp"
#include "mcp/client/http_transport.hpp"
#include "mcp/client/stdio_transport.hpp"
#include "tests/support/child_process.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace asio = boost::asio;
using namespace airlock;
using clock_type = std::chrono::steady_clock;

namespace {

std::string peers(std::string const& rel) { return std::string(AIRLOCK_PEERS_DIR) + "/" + rel; }
std::string node() { return peers("node_modules/.bin/node"); }
std::string everything() { return peers("node_modules/@modelcontextprotocol/server-everything/dist/index.js"); }

struct figures {
    std::string transport;
    std::size_t calls = 0;
    double seconds = 0, p50_us = 0, p99_us = 0;
    std::size_t failures = 0;
};

double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

figures measure(std::string name, mcp::mcp_client& client, asio::io_context& ioc, int calls) {
    figures f;
    f.transport = std::move(name);
    std::vector<double> lat;
    auto task = [&]() -> asio::awaitable<void> {
        auto tool = *core::tool_id::parse("tool://everything/get.sum");
        boost::json::value args = {{"a", 2}, {"b", 3}};
        // Warm-up: connect, list, and let the JIT settle.
        for (int i = 0; i < 50; ++i) co_await client.async_call(tool, args, std::nullopt);
        auto start = clock_type::now();
        for (int i = 0; i < calls; ++i) {
            auto t0 = clock_type::now();
            auto r = co_await client.async_call(tool, args, std::nullopt);
            lat.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
            if (!r) ++f.failures;
        }
        f.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
        co_await client.async_close();
    };
    auto fut = asio::co_spawn(ioc, task(), asio::use_future);
    ioc.run();
    ioc.restart();
    fut.get();
    f.calls = lat.size();
    f.p50_us = pct(lat, 0.5);
    f.p99_us = pct(lat, 0.99);
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    int calls = 1000;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--calls" && i + 1 < argc) calls = std::max(1, std::atoi(argv[++i]));
        else {
            std::cerr << "usage: mcp_call_bench [--calls N]\n";
            return 2;
        }
    }
    spdlog::set_level(spdlog::level::warn);
    std::vector<figures> rows;
    {
        asio::io_context ioc;
        mcp::stdio_options so;
        so.server_name = "everything";
        so.argv = {node(), everything(), "stdio"};
        mcp::client_options co;
        co.server_name = "everything";
        mcp::mcp_client c(std::make_unique<mcp::stdio_transport>(ioc.get_executor(), so), co);
        rows.push_back(measure("stdio", c, ioc, calls));
    }
    {
        testing::child_process server({node(), "--import", std::string(AIRLOCK_SOURCE_DIR) + "/tests/support/bind-loopback.mjs",
                                       everything(), "streamableHttp"},
                                      {"PORT=0"});
        auto line = server.wait_for_stderr_line("airlock-test-listening", std::chrono::seconds(60));
        if (!line) {
            std::cerr << "server-everything (HTTP) did not start\n";
            return 1;
        }
        std::istringstream in(line->substr(line->find("airlock-test-listening")));
        std::string tag, address;
        unsigned port = 0;
        in >> tag >> address >> port;
        asio::io_context ioc;
        mcp::http_transport_options ho;
        ho.server_name = "everything";
        ho.url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
        mcp::client_options co;
        co.server_name = "everything";
        co.kind = mcp::transport_kind::http;
        mcp::mcp_client c(std::make_unique<mcp::http_transport>(ioc.get_executor(), ho), co);
        rows.push_back(measure("http", c, ioc, calls));
        server.signal(SIGTERM);
        server.wait(std::chrono::seconds(10));
    }
    std::printf("%-10s %8s %10s %10s %10s %9s\n", "transport", "calls", "calls/s", "p50 us", "p99 us", "failures");
    boost::json::array out;
    for (auto const& r : rows) {
        double rate = static_cast<double>(r.calls) / r.seconds;
        std::printf("%-10s %8zu %10.0f %10.1f %10.1f %9zu\n", r.transport.c_str(), r.calls, rate, r.p50_us, r.p99_us, r.failures);
        out.push_back({{"transport", r.transport}, {"calls", r.calls}, {"calls_per_s", rate}, {"p50_us", r.p50_us},
                       {"p99_us", r.p99_us}, {"failures", r.failures}});
    }
    std::cout << boost::json::serialize(boost::json::object{{"bench", "mcp_call"}, {"rows", out}}) << "\n";
}
