// The model providers' own cost over loopback HTTP: completions per second and per-call latency
// through the OpenAI-compatible and Anthropic providers, one caller at a time and many at once,
// against the fake APIs of tests/fixtures/providers (Node). The fake server's own time is part of
// every figure; the point is the shape (keep-alive reuse, concurrency on one provider), not a
// model's speed. Prints a table and one JSON line; it never passes or fails on time.
//
//   build/bench/bench_providers_bench [--calls N] [--concurrency C]
//
// Defaults: 2,000 sequential completions, then C = 32 callers sharing one provider doing N
// completions between them.

#include "service/agents/providers/anthropic.hpp"
#include "service/agents/providers/openai.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/peers.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace asio = boost::asio;
using namespace airlock;
using namespace airlock::service::providers;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr char const* key = "sk-bench-0123456789abcdef";

struct figures {
    std::string name;
    int concurrency = 1;
    std::size_t calls = 0;
    std::size_t failures = 0;
    double seconds = 0;
    double p50_us = 0;
    double p99_us = 0;
};

core::completion_request question() {
    core::completion_request r;
    r.system = "You are a careful teller.";
    r.messages.push_back(core::model_message{core::message_role::user, "what is my balance?", {}, {}, false});
    return r;
}

figures measure(std::string name, std::uint16_t port, std::string const& base_path, wire_format wire, int calls,
                int concurrency) {
    asio::io_context ioc;
    provider_settings s;
    s.name = "bench";
    s.model = "plain";
    s.api_key = key;
    s.http.base_url = "http://127.0.0.1:" + std::to_string(port) + base_path;
    s.http.pool_size = static_cast<std::size_t>(concurrency);
    (void)s.http.egress.add(core::remote_destination{"http", "127.0.0.1", port});
    http_provider provider(ioc.get_executor(), s, std::move(wire));

    figures f;
    f.name = std::move(name);
    f.concurrency = concurrency;
    std::vector<double> lat;
    auto caller = [&](int n) -> asio::awaitable<void> {
        for (int i = 0; i < n; ++i) {
            auto t0 = clock_type::now();
            auto q = question();  // GCC 12: no aggregate temporary inside co_await
            auto r = co_await provider.async_complete(std::move(q));
            lat.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
            if (!r) ++f.failures;
        }
    };
    // Warm-up: connections opened, the JIT of the fake server settled.
    asio::co_spawn(ioc, caller(50), asio::detached);
    ioc.run();
    ioc.restart();
    lat.clear();
    f.failures = 0;
    auto start = clock_type::now();
    for (int c = 0; c < concurrency; ++c) asio::co_spawn(ioc, caller(calls / concurrency), asio::detached);
    ioc.run();
    f.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    f.calls = lat.size();
    std::sort(lat.begin(), lat.end());
    if (!lat.empty()) {
        f.p50_us = lat[lat.size() / 2];
        f.p99_us = lat[(lat.size() - 1) * 99 / 100];
    }
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    int calls = 2000;
    int concurrency = 32;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--calls" && i + 1 < argc) calls = std::max(1, std::atoi(argv[++i]));
        else if (a == "--concurrency" && i + 1 < argc) concurrency = std::max(1, std::atoi(argv[++i]));
        else {
            std::cerr << "usage: providers_bench [--calls N] [--concurrency C]\n";
            return 2;
        }
    }
    spdlog::set_level(spdlog::level::warn);
    struct api {
        char const* name;
        char const* script;
        char const* base_path;
        wire_format (*wire)();
    };
    api const apis[] = {{"openai", "openai_server.mjs", "/v1", openai_wire},
                        {"anthropic", "anthropic_server.mjs", "", anthropic_wire}};
    std::vector<figures> rows;
    for (auto const& a : apis) {
        testing::child_process server({testing::peers::node(), "--import",
                                       std::string(AIRLOCK_SOURCE_DIR) + "/tests/support/bind-loopback.mjs",
                                       std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/providers/" + a.script},
                                      {std::string("EXPECTED_KEY=") + key});
        auto line = server.wait_for_stderr_line("airlock-test-listening", std::chrono::seconds(60));
        if (!line) {
            std::cerr << a.script << " did not start\n";
            return 1;
        }
        std::istringstream in(line->substr(line->find("airlock-test-listening")));
        std::string tag, address;
        unsigned port = 0;
        in >> tag >> address >> port;
        auto p = static_cast<std::uint16_t>(port);
        rows.push_back(measure(a.name, p, a.base_path, a.wire(), calls, 1));
        rows.push_back(measure(a.name, p, a.base_path, a.wire(), calls, concurrency));
    }
    std::printf("%-10s %6s %7s %9s %12s %10s %10s\n", "provider", "conc", "calls", "failures", "completions/s",
                "p50 µs", "p99 µs");
    boost::json::array out;
    for (auto const& f : rows) {
        double rate = f.seconds > 0 ? static_cast<double>(f.calls) / f.seconds : 0;
        std::printf("%-10s %6d %7zu %9zu %12.0f %10.0f %10.0f\n", f.name.c_str(), f.concurrency, f.calls, f.failures,
                    rate, f.p50_us, f.p99_us);
        out.push_back({{"provider", f.name}, {"concurrency", f.concurrency}, {"calls", f.calls}, {"failures", f.failures},
                       {"completions_per_s", rate}, {"p50_us", f.p50_us}, {"p99_us", f.p99_us}});
    }
    std::cout << boost::json::serialize(boost::json::object{{"bench", "providers"}, {"rows", out}}) << "\n";
    return 0;
}
