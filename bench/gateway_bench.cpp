// The gateway's cost, measured in one run: tools/call of a fast upstream tool (server-everything
// `get-sum`) sequentially and 64-concurrently, through airlock (durable and fast journal, stdio and
// HTTP upstream), against the same upstream called directly, and against mcp-proxy in front of the
// same stdio upstream; plus the time of one durable journal commit on the same disk. Prints a table
// and one JSON line; it never passes or fails on time.
//
//   build/bench/bench_gateway_bench [--calls N] [--concurrency C] [--per-task M] [--commits K]
//                                   [--airlock PATH] [--dir DIR] [--only TEXT] [--threads N] [--busy-poll US]
//                                   [--verbose]
//
// Defaults: 2,000 sequential calls, 64 callers × 100 calls, 200 timed commits. Every client here is
// airlock's own mcp_client, on one thread. Through airlock the upstream is configured with
// `prefix: none`, so the downstream sees `get-sum` (a `server__tool` wire name cannot be a ToolId
// component, which may not contain "__"); airlock signs each call's provenance, as a deployment
// would. The airlock binary is the real one, found next to this executable (../service/airlock)
// unless --airlock names another. DIR (default: the system temp directory) holds the generated
// configurations and journals and the commit measurement, so all fsyncs hit the same disk.
//
// Floors. The run also times a bare loopback HTTP round trip (to a forked child, blocking sockets,
// a fixed answer) and one Ed25519 provenance signature: every call through airlock pays
// both, so their sum is a reference for how much of airlock-added is not airlock's own work: what a
// signing gateway with blocking sockets pays on this machine under its load at the time. It is not
// a hard bound. On a virtual machine the round trip is mostly the wake-up of an idle virtual CPU:
// measured on an idle machine it is several times what it is on a busy one (and busy polling can
// save part of it), and so are the rows' p50s.
// --only measures just the rows whose name contains TEXT (and the commit), for a quick look.
// --threads N starts airlock with `--threads N` (its I/O threads; default: one per hardware thread).
// --busy-poll US configures airlock with one I/O thread and `server.busy_poll: USus` (docs/configuration.md).
//
// Attribution. The rows through airlock include one downstream HTTP hop (client → airlock's server)
// that the direct stdio row lacks; the "airlock http hop" rows time it alone (an MCP server/discover,
// answered by airlock's endpoint without gateway, journal or upstream) on the same client, so the
// summary says how much of airlock-added is that hop. Each row also reports the CPU time per call
// of the client, the gateway process (airlock or mcp-proxy) and the upstream; with every party on
// the same cores, their sum bounds the calls/s a setup can reach here (the "CPU ceiling" line).

#include "core/provenance.hpp"
#include "core/tool_id.hpp"
#include "mcp/client/client.hpp"
#include "mcp/client/http_transport.hpp"
#include "mcp/client/stdio_transport.hpp"
#include "store/lmdb_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/peers.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace peers = airlock::testing::peers;
using namespace airlock;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr char const* bench_token = "bench-7f3a9c2e51d84b06a9e1c3d5f7b2e4a8";

struct settings {
    int calls = 2000;        // sequential calls per target
    int concurrency = 64;    // concurrent callers
    int per_task = 100;      // calls per concurrent caller
    int commits = 200;       // durable single-record appends timed: half before the calls, half after
    int warmup = 50;         // untimed calls first: connect, list, JIT
    std::optional<fs::path> airlock;
    fs::path dir = fs::temp_directory_path();
    std::string only;      // measure only the targets whose name contains this (and the commit)
    bool verbose = false;  // airlock's own client logs at debug
    unsigned threads = 0;  // airlock's --threads; 0: its default
    unsigned busy_poll_us = 0;  // airlock's server.busy_poll (with server.threads: 1); 0: none
};

// CPU time (user + system) per call, by who spent it: the bench's own client, the gateway process
// between client and upstream (airlock or mcp-proxy; none for direct rows), and every other
// process the bench started (the upstream server, and mcp-proxy's child).
struct cpu_per_call {
    double client_us = 0, gateway_us = 0, upstream_us = 0;
    double total_us() const { return client_us + gateway_us + upstream_us; }
};

struct phase {
    std::string target;
    int concurrency = 1;
    std::string protocol;
    std::size_t calls = 0;
    std::size_t failures = 0;
    double seconds = 0, p50_us = 0, p99_us = 0;
    cpu_per_call cpu;
    double rate() const { return seconds > 0 ? static_cast<double>(calls) / seconds : 0; }
};

struct commit_sample {
    std::vector<double> latencies_us;
    std::size_t failures = 0;
    double seconds = 0;
};

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

double micros(clock_type::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// CPU accounting. Clients, gateways and upstreams share this machine's cores, so what each spends per
// call bounds the calls/s any of them can reach: a figure that does not drift with the load the way
// wall-clock latency does.
double cpu_seconds_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) return 0;
    std::istringstream fields(text.substr(close + 2));
    std::string f;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> f; ++i)
        if (i == 14 || i == 15) ticks += std::stod(f);  // utime, stime
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Every process below `pid`, from the children lists of each of its threads.
void add_descendants(pid_t pid, std::vector<pid_t>& out) {
    std::error_code ec;
    for (auto const& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        std::ifstream in(task.path() / "children");
        pid_t child;
        while (in >> child) {
            out.push_back(child);
            add_descendants(child, out);
        }
    }
}

struct cpu_sample {
    double client = 0, gateway = 0, others = 0;
};

cpu_sample sample_cpu(pid_t gateway) {
    cpu_sample c;
    rusage self{};
    ::getrusage(RUSAGE_SELF, &self);
    auto secs = [](timeval t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    c.client = secs(self.ru_utime) + secs(self.ru_stime);
    std::vector<pid_t> all;
    add_descendants(::getpid(), all);
    for (auto p : all) (p == gateway ? c.gateway : c.others) += cpu_seconds_of(p);
    return c;
}

cpu_per_call per_call(cpu_sample const& before, cpu_sample const& after, std::size_t calls) {
    cpu_per_call r;
    if (calls == 0) return r;
    auto us = [&](double a, double b) { return (b - a) * 1e6 / static_cast<double>(calls); };
    r.client_us = us(before.client, after.client);
    r.gateway_us = us(before.gateway, after.gateway);
    r.upstream_us = us(before.others, after.others);
    return r;
}

// Runs `ioc` until one coroutine has finished (rethrowing what it threw). Not ioc.run(): a client's
// transport keeps reading its upstream in the background until closed, so the context never runs
// out of work between phases.
// A context that ran out of work between phases (an HTTP client with only idle pooled connections
// has none) has stopped itself, so it is restarted first.
template <class T>
T run(asio::io_context& ioc, asio::awaitable<T> task) {
    ioc.restart();
    auto fut = asio::co_spawn(ioc, std::move(task), asio::use_future);
    while (fut.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
        if (ioc.run_one() == 0) throw std::runtime_error("the client stopped with its work unfinished");
    return fut.get();
}

// Children running now, for the signal handler: interrupted (Ctrl-C, timeout), the bench passes
// SIGTERM on, so airlock and mcp-proxy stop the upstreams they started instead of being orphaned.
std::array<std::atomic<pid_t>, 8> running_children{};

void forward_and_die(int sig) {
    for (auto& pid : running_children)
        if (pid_t p = pid.load(); p > 0) ::kill(p, SIGTERM);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void track(pid_t pid, bool running) {
    for (auto& slot : running_children) {
        pid_t expected = running ? 0 : pid;
        if (slot.compare_exchange_strong(expected, running ? pid : 0)) return;
    }
}

// A child (airlock, a Node peer) whose stderr is read continuously: a chatty child must never
// block on a full pipe mid-measurement. Stopped with SIGTERM first, so airlock and mcp-proxy stop
// the upstream children they started, then SIGKILL if it lingers; always, even on error.
class peer_process {
public:
    peer_process(std::string what, std::vector<std::string> argv, std::vector<std::string> env,
                 std::string const& ready_text)
        : what_(std::move(what)) {
        child_ = std::make_unique<testing::child_process>(std::move(argv), std::move(env));
        track(child_->pid(), true);
        auto line = child_->wait_for_stderr_line(ready_text, 60s);
        if (!line) {
            auto err = child_->stderr_text();
            stop();
            throw std::runtime_error(what_ + " did not start; its stderr:\n" + err);
        }
        ready_line_ = *line;
        drainer_ = std::thread([this] {
            // Only this thread touches child_ until stop() has joined it.
            while (!stopping_.load()) {
                child_->stderr_text();
                child_->stdout_text();
                std::this_thread::sleep_for(50ms);
            }
        });
    }
    ~peer_process() { stop(); }
    peer_process(peer_process const&) = delete;
    peer_process& operator=(peer_process const&) = delete;

    std::string const& ready_line() const { return ready_line_; }
    pid_t pid() const { return child_ ? child_->pid() : 0; }

    void stop() {
        if (!child_) return;
        stopping_ = true;
        if (drainer_.joinable()) drainer_.join();
        child_->signal(SIGTERM);
        int code = child_->wait(15s);
        if (code != 0 && code != 128 + SIGTERM)
            std::cerr << "note: " << what_ << " exited with " << code << "\n";
        track(child_->pid(), false);
        child_.reset();
    }

private:
    std::string what_;
    std::unique_ptr<testing::child_process> child_;
    std::string ready_line_;
    std::thread drainer_;
    std::atomic<bool> stopping_{false};
};

std::uint16_t port_in(std::string const& line, std::regex const& pattern) {
    std::smatch m;
    if (!std::regex_search(line, m, pattern)) throw std::runtime_error("no port in: " + line);
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}

// A Node peer pinned to 127.0.0.1 by tests/support/bind-loopback.mjs, which reports its port.
struct node_peer {
    std::unique_ptr<peer_process> process;
    std::uint16_t port = 0;

    node_peer(std::string what, std::vector<std::string> args, std::vector<std::string> env) {
        std::vector<std::string> argv{peers::node(), "--import",
                                      std::string(AIRLOCK_SOURCE_DIR) + "/tests/support/bind-loopback.mjs"};
        argv.insert(argv.end(), args.begin(), args.end());
        process = std::make_unique<peer_process>(std::move(what), std::move(argv), std::move(env),
                                                 "airlock-test-listening");
        port = port_in(process->ready_line(), std::regex(R"(airlock-test-listening 127\.0\.0\.1 (\d+))"));
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/mcp"; }
};

fs::path airlock_binary(settings const& s) {
    if (s.airlock) return *s.airlock;
    std::error_code ec;
    auto self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        auto beside = self.parent_path().parent_path() / "service" / "airlock";
        if (fs::exists(beside)) return beside;
    }
    return fs::path(AIRLOCK_SOURCE_DIR) / "build" / "service" / "airlock";
}

// A fresh directory, removed with everything in it when the bench ends (or fails).
struct scratch_dir {
    fs::path path;
    explicit scratch_dir(fs::path const& base) {
        std::random_device rd;
        for (int attempt = 0; attempt < 100 && path.empty(); ++attempt) {
            auto p = base / ("airlock-gateway-bench-" + std::to_string(rd()));
            if (fs::create_directories(p)) path = p;
        }
        if (path.empty()) throw std::runtime_error("cannot create a directory under " + base.string());
    }
    ~scratch_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    scratch_dir(scratch_dir const&) = delete;
    scratch_dir& operator=(scratch_dir const&) = delete;
};

enum class upstream_via { stdio, http };

// airlock serve with a generated configuration: one upstream (server-everything over stdio, or the
// given HTTP URL) under its own tool names, egress allowing exactly it, one principal whose manifest
// grants get.sum, calls signed, the journal in the given mode.
struct airlock_gateway {
    std::unique_ptr<peer_process> process;
    std::uint16_t port = 0;

    airlock_gateway(fs::path const& binary, fs::path const& dir, store::durability mode, upstream_via via,
                    std::uint16_t upstream_port, unsigned threads, unsigned busy_poll_us) {
        fs::create_directories(dir);
        {
            std::ofstream(dir / "bench.token") << bench_token << "\n";
        }
        ::chmod((dir / "bench.token").c_str(), 0600);
        std::ofstream(dir / "bench.yaml") << R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: gateway-bench, version: "1" }
spec:
  tools:
    - ref: tool://everything/get.sum
      mutates: false
  budgets: {}
)";
        std::ostringstream c;
        c << "journal: { dir: journal, durability: " << (mode == store::durability::durable ? "durable" : "fast")
          << " }\n"
          << "signing: { key_file: keys/provenance.key, create_if_missing: true }\n"
          << "upstreams:\n  - name: everything\n    prefix: none\n";
        std::string upstream_url = "http://127.0.0.1:" + std::to_string(upstream_port);
        if (via == upstream_via::stdio)
            c << "    stdio: { argv: [\"" << peers::node() << "\", \"" << peers::everything() << "\", stdio] }\n"
              << "egress:\n  - process: \"" << peers::node() << "\"\n";
        else
            c << "    url: " << upstream_url << "/mcp\n"
              << "egress:\n  - \"" << upstream_url << "\"\n";
        c << "principals:\n  - name: bench\n    token_file: bench.token\n    manifest: bench.yaml\n"
          << "logging: { level: info, format: text }\n";
        if (busy_poll_us > 0) c << "server: { threads: 1, busy_poll: " << busy_poll_us << "us }\n";
        std::ofstream(dir / "airlock.yaml") << c.str();
        std::vector<std::string> argv{binary.string(), "serve", "--config", (dir / "airlock.yaml").string(),
                                      "--listen", "127.0.0.1:0"};
        if (threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(threads)});
        process = std::make_unique<peer_process>("airlock", std::move(argv), std::vector<std::string>{},
                                                 "listening on http://");
        port = port_in(process->ready_line(), std::regex(R"(127\.0\.0\.1:(\d+))"));
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/mcp"; }
};

using client_factory = std::function<std::unique_ptr<mcp::mcp_client>(asio::any_io_executor)>;

client_factory stdio_client() {
    return [](asio::any_io_executor ex) {
        mcp::stdio_options so;
        so.server_name = "everything";
        so.argv = {peers::node(), peers::everything(), "stdio"};
        mcp::client_options co;
        co.server_name = "everything";
        return std::make_unique<mcp::mcp_client>(std::make_unique<mcp::stdio_transport>(ex, so), co);
    };
}

client_factory http_client(std::string server_name, std::string url, std::optional<std::string> token) {
    return [=](asio::any_io_executor ex) {
        mcp::http_transport_options ho;
        ho.server_name = server_name;
        ho.url = url;
        if (token) ho.headers.emplace_back("Authorization", "Bearer " + *token);
        // The 64 concurrent callers each keep a connection between calls.
        ho.pool_size = 128;
        mcp::client_options co;
        co.server_name = server_name;
        co.kind = mcp::transport_kind::http;
        return std::make_unique<mcp::mcp_client>(std::make_unique<mcp::http_transport>(ex, ho), co);
    };
}

// What each measured call is: the tool call, or (to time the downstream HTTP hop alone) an MCP
// server/discover, which airlock's endpoint answers itself without the gateway, journal or upstream.
enum class operation { tools_call, discover };

// Warm-up, then `calls` sequential calls, then `concurrency` callers of `per_task` calls each, all
// on one client on one thread; the client is closed (its child stopped) even when a phase throws.
// The concurrent callers share the client: over HTTP each takes a pooled keep-alive connection of
// its own (so 64 callers use 64 connections, one MCP session), the same for airlock and mcp-proxy.
// `gateway` is the process between client and upstream, whose CPU time is reported apart.
std::vector<phase> drive(std::string const& target, std::string const& server_name, client_factory const& make,
                         settings const& s, pid_t gateway = 0, operation op = operation::tools_call) {
    asio::io_context ioc;
    auto client = make(ioc.get_executor());
    auto const tool = *core::tool_id::parse("tool://" + server_name + "/get.sum");
    boost::json::value const args = {{"a", 2}, {"b", 3}};
    std::vector<phase> out;
    std::exception_ptr failed;

    // One measured operation; the text of its result, or nullopt when it failed.
    auto once = [&]() -> asio::awaitable<std::optional<std::string>> {
        if (op == operation::discover) {
            std::string method = "server/discover";
            boost::json::object params;
            auto r = co_await client->async_forward(std::move(method), std::move(params));
            if (!r) co_return std::nullopt;
            co_return boost::json::serialize(*r);
        }
        std::optional<core::provenance> unsigned_call;
        auto r = co_await client->async_call(tool, args, unsigned_call);
        if (!r) co_return std::nullopt;
        co_return boost::json::serialize(*r);
    };
    std::string const expected = op == operation::discover ? "supportedVersions" : "The sum of 2 and 3 is 5";

    try {
        auto sequential = [&]() -> asio::awaitable<phase> {
            for (int i = 0; i < s.warmup; ++i) {
                auto r = co_await once();
                if (!r) throw std::runtime_error(target + ": warm-up call failed");
                // The answer must be the real one, or the figures measure an error path.
                if (i == 0 && r->find(expected) == std::string::npos)
                    throw std::runtime_error(target + ": unexpected result " + *r);
            }
            phase p;
            p.target = target;
            std::vector<double> lat;
            lat.reserve(static_cast<std::size_t>(s.calls));
            auto cpu_before = sample_cpu(gateway);
            auto start = clock_type::now();
            for (int i = 0; i < s.calls; ++i) {
                auto t0 = clock_type::now();
                auto r = co_await once();
                lat.push_back(micros(clock_type::now() - t0));
                if (!r) ++p.failures;
            }
            p.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
            p.cpu = per_call(cpu_before, sample_cpu(gateway), lat.size());
            p.calls = lat.size();
            p.p50_us = percentile(lat, 0.50);
            p.p99_us = percentile(lat, 0.99);
            co_return p;
        };
        out.push_back(run(ioc, sequential()));

        phase p;
        p.target = target;
        p.concurrency = s.concurrency;
        std::vector<std::vector<double>> lat(static_cast<std::size_t>(s.concurrency));
        std::size_t failures = 0;
        std::exception_ptr worker_failed;
        // One closure for every caller, alive until the loop below has run them all: a coroutine
        // lambda reads its captures through the closure, so it must outlive the coroutine.
        auto worker = [&](std::size_t w) -> asio::awaitable<void> {
            auto& mine = lat[w];
            for (int i = 0; i < s.per_task; ++i) {
                auto t0 = clock_type::now();
                auto r = co_await once();
                mine.push_back(micros(clock_type::now() - t0));
                if (!r) ++failures;  // one thread runs every caller: no race
            }
        };
        int running = s.concurrency;
        auto done = [&](std::exception_ptr e) {
            --running;
            if (e && !worker_failed) worker_failed = e;
        };
        ioc.restart();
        auto cpu_before = sample_cpu(gateway);
        auto start = clock_type::now();
        for (int w = 0; w < s.concurrency; ++w) asio::co_spawn(ioc, worker(static_cast<std::size_t>(w)), done);
        while (running > 0)
            if (ioc.run_one() == 0)
                throw std::runtime_error(target + ": " + std::to_string(running) +
                                         " concurrent callers wait for something that can no longer happen");
        p.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
        auto cpu_after = sample_cpu(gateway);
        if (worker_failed) std::rethrow_exception(worker_failed);
        std::vector<double> all;
        for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
        p.cpu = per_call(cpu_before, cpu_after, all.size());
        p.calls = all.size();
        p.failures = failures;
        p.p50_us = percentile(all, 0.50);
        p.p99_us = percentile(all, 0.99);
        out.push_back(p);
    } catch (...) {
        failed = std::current_exception();
    }
    for (auto& p : out) p.protocol = client->protocol_version();
    try {
        run(ioc, client->async_close());
    } catch (std::exception const& e) {
        std::cerr << "note: closing the client for " << target << ": " << e.what() << "\n";
    }
    if (failed) std::rethrow_exception(failed);
    return out;
}

// One durable journal commit: sequential single-record appends to a fresh LMDB journal; each one
// completes only after its fsync. Latencies are added to `lat`.
commit_sample measure_commit(fs::path const& dir, int commits) {
    // Declared first, so destroyed last: the journal's writer thread may still be posting its last
    // completion to it when run() has seen the result (ThreadSanitizer).
    asio::io_context ioc;
    auto opened = store::lmdb_store::open({dir, std::size_t{64} << 20, store::durability::durable});
    if (!opened) throw std::runtime_error("cannot open a journal in " + dir.string() + ": " + opened.error().message);
    auto& journal = *opened;
    auto task = [&]() -> asio::awaitable<commit_sample> {
        boost::json::object admit;
        admit["agent"] = {{"name", "bench"}, {"version", "1"}, {"digest", std::string(64, '0')}};
        admit["input"] = "go";
        admit["admitted_at"] = "2026-11-30T00:00:00Z";
        std::vector<core::new_record> first{core::new_record{core::record_kind::run_admitted, admit}};
        std::string const run_id = "commit-bench";
        auto a = co_await journal->async_append(run_id, std::move(first));
        if (!a) throw std::runtime_error("journal append failed: " + a.error().message);
        commit_sample p;
        auto& lat = p.latencies_us;
        auto start = clock_type::now();
        for (int i = 0; i < commits; ++i) {
            boost::json::object body;
            body["effect_key"] = "e" + std::to_string(i);
            body["target"] = "tool";
            body["tool"] = "tool://everything/get.sum";
            body["arguments"] = {{"a", 2}, {"b", 3}};
            body["mutates"] = false;
            body["attempt"] = 1;
            std::vector<core::new_record> next{core::new_record{core::record_kind::effect_started, body}};
            auto t0 = clock_type::now();
            auto r = co_await journal->async_append(run_id, std::move(next));
            lat.push_back(micros(clock_type::now() - t0));
            if (!r) ++p.failures;
        }
        p.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
        co_return p;
    };
    return run(ioc, task());
}

// The floors of airlock-added on this machine, measured in the same run: what any HTTP gateway
// that signs each call pays before it does anything else.
//
// One loopback HTTP/1.1 round trip: a keep-alive request and a fixed 2-byte JSON answer between
// this process and a child over 127.0.0.1, blocking sockets, no parsing beyond finding the end of
// a message: the least an HTTP hop between two processes can cost here. (Two threads of one
// process measure far less on a virtual machine: a switch between processes costs more.)
double measure_http_floor(int round_trips) {
    int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener, 1) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        if (listener >= 0) ::close(listener);
        throw std::runtime_error("cannot listen on 127.0.0.1 for the HTTP floor");
    }
    // Reads until `buf` holds a whole message: a head, then `body` bytes. Plain buffers only: the
    // child of a threaded process may call nothing that allocates.
    auto read_message = [](int fd, char* buf, std::size_t& held, std::size_t cap, std::size_t body) {
        for (;;) {
            std::string_view have(buf, held);
            if (auto end = have.find("\r\n\r\n"); end != std::string_view::npos && held >= end + 4 + body) {
                auto whole = end + 4 + body;
                std::memmove(buf, buf + whole, held - whole);
                held -= whole;
                return true;
            }
            if (held == cap) return false;
            auto n = ::recv(fd, buf + held, cap - held, 0);
            if (n <= 0) return false;
            held += static_cast<std::size_t>(n);
        }
    };
    int const one = 1;
    pid_t const child = ::fork();
    if (child < 0) {
        ::close(listener);
        throw std::runtime_error("cannot fork the HTTP floor's server");
    }
    if (child == 0) {
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        int fd = ::accept(listener, nullptr, nullptr);
        if (fd < 0) ::_exit(1);
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        static char const answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        static char buf[8192];
        std::size_t held = 0;
        while (read_message(fd, buf, held, sizeof buf, 2))
            if (::send(fd, answer, sizeof answer - 1, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof answer - 1)) break;
        ::_exit(0);
    }
    ::close(listener);
    std::vector<double> lat;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        timeval const patience{5, 0};  // a child that stops answering ends the measurement, not the bench
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
        std::string const request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                    "Content-Length: 2\r\n\r\n{}";
        char buf[8192];
        std::size_t held = 0;
        for (int i = 0; i < round_trips + 100; ++i) {
            auto t0 = clock_type::now();
            if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()) ||
                !read_message(fd, buf, held, sizeof buf, 2))
                break;
            if (i >= 100) lat.push_back(micros(clock_type::now() - t0));  // the first 100 warm up
        }
    }
    if (fd >= 0) ::close(fd);  // the child reads end of stream and exits
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    if (lat.size() != static_cast<std::size_t>(round_trips)) throw std::runtime_error("the HTTP floor's round trips failed");
    return percentile(lat, 0.50);
}

// One Ed25519 provenance signature, as airlock signs each call: a block for get-sum's arguments.
double measure_signature(int signatures) {
    std::string const seed(32, '\x2a');
    auto signer = core::provenance_signer::from_raw_seed("bench", seed);
    auto tool = core::tool_id::parse("tool://everything/get.sum");
    if (!signer || !tool) throw std::runtime_error("cannot make a provenance signer");
    boost::json::value const arguments{{"a", 2}, {"b", 3}};
    auto const now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    std::vector<double> lat;
    for (int i = 0; i < signatures + 100; ++i) {
        auto block = core::make_provenance("run-bench", "run-bench/" + std::to_string(i) + "/tool", "bench",
                                           std::string(64, '0'), *tool, arguments, now, std::chrono::seconds(300),
                                           "nonce" + std::to_string(i));
        if (!block) throw std::runtime_error("cannot make a provenance block: " + block.error().message);
        auto t0 = clock_type::now();
        if (auto s = signer->sign(*block); !s) throw std::runtime_error("signing failed: " + s.error().message);
        if (i >= 100) lat.push_back(micros(clock_type::now() - t0));
    }
    return percentile(lat, 0.50);
}

// The disk's fsync time drifts with what else the machine does, so the commit is timed twice,
// before and after the calls, and the two samples are pooled.
phase pooled(commit_sample const& before, commit_sample const& after) {
    phase p;
    p.target = "durable journal commit";
    std::vector<double> all = before.latencies_us;
    all.insert(all.end(), after.latencies_us.begin(), after.latencies_us.end());
    p.calls = all.size();
    p.failures = before.failures + after.failures;
    p.seconds = before.seconds + after.seconds;
    p.p50_us = percentile(all, 0.50);
    p.p99_us = percentile(all, 0.99);
    return p;
}

phase const* find_row(std::vector<phase> const& rows, std::string const& target, int concurrency) {
    for (auto const& r : rows)
        if (r.target == target && r.concurrency == concurrency) return &r;
    return nullptr;
}

int usage() {
    std::cerr << "usage: gateway_bench [--calls N] [--concurrency C] [--per-task M] [--commits K] [--airlock PATH] "
                 "[--dir DIR] [--only TEXT] [--threads N] [--busy-poll US] [--verbose]\n";
    return 2;
}

int bench(settings const& s) {
    auto const binary = airlock_binary(s);
    if (!fs::exists(binary)) {
        std::cerr << "airlock binary not found at " << binary << " (build it, or pass --airlock PATH)\n";
        return 1;
    }
    scratch_dir scratch(s.dir);
    std::vector<phase> rows;
    auto wanted = [&](std::string const& target) { return s.only.empty() || target.find(s.only) != std::string::npos; };
    auto direct = [&](std::string const& target, std::string const& server_name, client_factory const& make) {
        if (!wanted(target)) return;
        std::cerr << target << "...\n";
        auto r = drive(target, server_name, make, s);
        rows.insert(rows.end(), r.begin(), r.end());
    };
    // The downstream HTTP hop alone is timed on the fast stdio gateway: the rows through airlock
    // include it, the direct rows do not, so it is the part of "airlock-added" that is transport.
    auto const hop_target = std::string("airlock http hop");
    auto through = [&](std::string const& target, store::durability mode, upstream_via via, std::uint16_t up_port) {
        bool hop = target == "airlock fast stdio" && wanted(hop_target);
        if (!wanted(target) && !hop) return;
        std::cerr << target << "...\n";
        airlock_gateway gw(binary, scratch.path / target, mode, via, up_port, s.threads, s.busy_poll_us);
        auto const pid = gw.process->pid();
        if (wanted(target)) {
            auto r = drive(target, "airlock", http_client("airlock", gw.url(), bench_token), s, pid);
            rows.insert(rows.end(), r.begin(), r.end());
        }
        if (hop) {
            std::cerr << hop_target << "...\n";
            auto r = drive(hop_target, "airlock", http_client("airlock", gw.url(), bench_token), s, pid,
                           operation::discover);
            rows.insert(rows.end(), r.begin(), r.end());
        }
    };

    std::cerr << "durable journal commits (before)...\n";
    auto const commit_before = measure_commit(scratch.path / "commit-journal-before", s.commits / 2);
    std::cerr << "loopback HTTP floor and one signature...\n";
    double const http_floor = measure_http_floor(s.calls);
    double const signature = measure_signature(s.calls);
    direct("direct stdio", "everything", stdio_client());
    through("airlock durable stdio", store::durability::durable, upstream_via::stdio, 0);
    through("airlock fast stdio", store::durability::fast, upstream_via::stdio, 0);
    if (wanted("direct http") || wanted("airlock durable http") || wanted("airlock fast http")) {
        node_peer upstream("server-everything (streamableHttp)", {peers::everything(), "streamableHttp"}, {"PORT=0"});
        direct("direct http", "everything", http_client("everything", upstream.url(), std::nullopt));
        through("airlock durable http", store::durability::durable, upstream_via::http, upstream.port);
        through("airlock fast http", store::durability::fast, upstream_via::http, upstream.port);
    }
    if (wanted("mcp-proxy stdio")) {
        node_peer proxy("mcp-proxy",
                        {peers::mcp_proxy(), "--host", "127.0.0.1", "--port", "0", "--server", "stream", "--",
                         peers::node(), peers::everything(), "stdio"},
                        {});
        std::cerr << "mcp-proxy stdio...\n";
        auto r = drive("mcp-proxy stdio", "proxy", http_client("proxy", proxy.url(), std::nullopt), s,
                       proxy.process->pid());
        rows.insert(rows.end(), r.begin(), r.end());
    }
    std::cerr << "durable journal commits (after)...\n";
    auto const commit_after = measure_commit(scratch.path / "commit-journal-after", s.commits - s.commits / 2);
    auto const commit = pooled(commit_before, commit_after);
    double const commit_before_p50 = percentile(commit_before.latencies_us, 0.50);
    double const commit_after_p50 = percentile(commit_after.latencies_us, 0.50);

    // CPU columns: microseconds of CPU per call spent by the bench's client, the gateway process
    // (airlock or mcp-proxy) and the upstream (with anything else the bench started).
    std::printf("%-24s %-11s %5s %7s %10s %10s %10s %9s %8s %8s %8s\n", "target", "protocol", "conc", "calls", "calls/s",
                "p50 us", "p99 us", "failures", "cpu cli", "cpu gw", "cpu up");
    boost::json::array json_rows;
    for (auto const& r : rows) {
        std::printf("%-24s %-11s %5d %7zu %10.0f %10.1f %10.1f %9zu %8.0f %8.0f %8.0f\n", r.target.c_str(),
                    r.protocol.c_str(), r.concurrency, r.calls, r.rate(), r.p50_us, r.p99_us, r.failures,
                    r.cpu.client_us, r.cpu.gateway_us, r.cpu.upstream_us);
        json_rows.push_back({{"target", r.target}, {"protocol", r.protocol}, {"concurrency", r.concurrency},
                             {"calls", r.calls}, {"calls_per_s", r.rate()}, {"p50_us", r.p50_us},
                             {"p99_us", r.p99_us}, {"failures", r.failures},
                             {"cpu_us_per_call", {{"client", r.cpu.client_us}, {"gateway", r.cpu.gateway_us},
                                                  {"upstream", r.cpu.upstream_us}}}});
    }
    std::printf("%-24s %-11s %5d %7zu %10.0f %10.1f %10.1f %9zu\n", commit.target.c_str(), "-", 1, commit.calls,
                commit.rate(), commit.p50_us, commit.p99_us, commit.failures);

    // Derived figures: what airlock adds to the median call, against the floor of one durable commit,
    // and throughput against mcp-proxy on the same upstream. A figure whose rows were not measured
    // (--only) is n/a, and null in the JSON.
    using figure = std::optional<double>;
    auto p50 = [&](std::string const& t) -> figure {
        auto r = find_row(rows, t, 1);
        return r ? figure(r->p50_us) : std::nullopt;
    };
    auto rate = [&](std::string const& t) -> figure {
        auto r = find_row(rows, t, s.concurrency);
        return r && r->rate() > 0 ? figure(r->rate()) : std::nullopt;
    };
    auto minus = [](figure a, figure b) -> figure { return a && b ? figure(*a - *b) : std::nullopt; };
    auto over = [](figure a, figure b) -> figure { return a && b ? figure(*a / *b) : std::nullopt; };
    figure const commit_p50 = commit.calls ? figure(commit.p50_us) : std::nullopt;
    figure const added_durable_stdio = minus(p50("airlock durable stdio"), p50("direct stdio"));
    figure const added_fast_stdio = minus(p50("airlock fast stdio"), p50("direct stdio"));
    figure const added_durable_http = minus(p50("airlock durable http"), p50("direct http"));
    figure const added_fast_http = minus(p50("airlock fast http"), p50("direct http"));
    figure const proxy_added = minus(p50("mcp-proxy stdio"), p50("direct stdio"));
    figure const durable_stdio_over_commit = minus(added_durable_stdio, commit_p50);
    figure const durable_http_over_commit = minus(added_durable_http, commit_p50);
    figure const ratio_durable = over(rate("airlock durable stdio"), rate("mcp-proxy stdio"));
    figure const ratio_fast = over(rate("airlock fast stdio"), rate("mcp-proxy stdio"));
    figure const hop = p50(hop_target);
    figure const beyond_hop_durable = minus(added_durable_stdio, hop);
    figure const beyond_hop_fast = minus(added_fast_stdio, hop);
    // The most calls/s the machine's cores allow a setup at 64 concurrent, from the CPU every party
    // spends per call there: no scheduling, waiting or I/O, just the arithmetic of shared cores.
    unsigned const cores = std::max(1u, std::thread::hardware_concurrency());
    auto ceiling = [&](std::string const& t) -> figure {
        auto r = find_row(rows, t, s.concurrency);
        return r && r->cpu.total_us() > 0 ? figure(cores * 1e6 / r->cpu.total_us()) : std::nullopt;
    };
    figure const ceiling_durable = ceiling("airlock durable stdio");
    figure const ceiling_fast = ceiling("airlock fast stdio");
    figure const ceiling_proxy = ceiling("mcp-proxy stdio");
    figure const ceiling_direct = ceiling("direct stdio");
    // A gateway that signs each call spends at least one signature's CPU on it; the client and the
    // upstream share the same cores: the most calls/s any signing gateway could reach in this setup.
    auto const* fast_row = find_row(rows, "airlock fast stdio", s.concurrency);
    figure const ceiling_signing_only =
        fast_row ? figure(cores * 1e6 / (fast_row->cpu.client_us + fast_row->cpu.upstream_us + signature)) : std::nullopt;
    figure const tenfold_proxy = rate("mcp-proxy stdio") ? figure(10 * *rate("mcp-proxy stdio")) : std::nullopt;
    double const floor_fast = http_floor + signature;

    auto text = [](figure f, char const* format) {
        if (!f) return std::string("n/a");
        char buf[64];
        std::snprintf(buf, sizeof buf, format, *f);
        return std::string(buf);
    };
    std::printf("\n");
    std::printf("airlock-added p50, stdio upstream, durable : %9s us  (minus one durable commit p50: %s us)\n",
                text(added_durable_stdio, "%.1f").c_str(), text(durable_stdio_over_commit, "%+.1f").c_str());
    std::printf("airlock-added p50, stdio upstream, fast    : %9s us\n", text(added_fast_stdio, "%.1f").c_str());
    std::printf("airlock-added p50, http upstream, durable  : %9s us  (minus one durable commit p50: %s us)\n",
                text(added_durable_http, "%.1f").c_str(), text(durable_http_over_commit, "%+.1f").c_str());
    std::printf("airlock-added p50, http upstream, fast     : %9s us\n", text(added_fast_http, "%.1f").c_str());
    std::printf("mcp-proxy-added p50, stdio upstream        : %9s us\n", text(proxy_added, "%.1f").c_str());
    std::printf("durable journal commit p50 / p99           : %9.1f / %.1f us  (p50 before the calls %.1f, after %.1f)\n",
                commit.p50_us, commit.p99_us, commit_before_p50, commit_after_p50);
    std::printf("downstream HTTP hop p50 (server/discover)  : %9s us  (airlock-added beyond it: durable %s us, fast %s us)\n",
                text(hop, "%.1f").c_str(), text(beyond_hop_durable, "%.1f").c_str(), text(beyond_hop_fast, "%.1f").c_str());
    std::printf("calls/s at %d concurrent, airlock / mcp-proxy (stdio upstream): durable %sx, fast %sx\n",
                s.concurrency, text(ratio_durable, "%.2f").c_str(), text(ratio_fast, "%.2f").c_str());
    std::printf("CPU ceiling on %u cores at %d concurrent (calls/s if the CPU per call were the only limit): "
                "direct stdio %s, airlock durable %s, airlock fast %s, mcp-proxy %s\n",
                cores, s.concurrency, text(ceiling_direct, "%.0f").c_str(), text(ceiling_durable, "%.0f").c_str(),
                text(ceiling_fast, "%.0f").c_str(), text(ceiling_proxy, "%.0f").c_str());
    std::printf("floors here: loopback HTTP round trip p50 %.1f us, one Ed25519 signature p50 %.1f us; together %.1f us "
                "of airlock-added p50 (fast; durable: one commit more) that is not airlock's own work\n",
                http_floor, signature, floor_fast);
    std::printf("calls/s at %d concurrent if airlock spent only one signature's CPU per call (with the client's and "
                "the upstream's): %s; 10x mcp-proxy: %s\n",
                s.concurrency, text(ceiling_signing_only, "%.0f").c_str(), text(tenfold_proxy, "%.0f").c_str());
    if (s.threads > 0) std::printf("airlock ran with --threads %u\n", s.threads);
    if (s.busy_poll_us > 0) std::printf("airlock ran with server.threads 1, busy_poll %u us\n", s.busy_poll_us);
    std::fflush(stdout);

    auto json = [](figure f) { return f ? boost::json::value(*f) : boost::json::value(nullptr); };
    boost::json::object derived{{"airlock_added_p50_us_durable_stdio", json(added_durable_stdio)},
                                {"airlock_added_p50_us_fast_stdio", json(added_fast_stdio)},
                                {"airlock_added_p50_us_durable_http", json(added_durable_http)},
                                {"airlock_added_p50_us_fast_http", json(added_fast_http)},
                                {"mcp_proxy_added_p50_us_stdio", json(proxy_added)},
                                {"durable_commit_p50_us", json(commit_p50)},
                                {"airlock_added_p50_us_durable_stdio_minus_commit", json(durable_stdio_over_commit)},
                                {"airlock_added_p50_us_durable_http_minus_commit", json(durable_http_over_commit)},
                                {"calls_per_s_ratio_airlock_durable_over_mcp_proxy", json(ratio_durable)},
                                {"calls_per_s_ratio_airlock_fast_over_mcp_proxy", json(ratio_fast)},
                                {"http_hop_p50_us", json(hop)},
                                {"airlock_added_p50_us_durable_stdio_beyond_hop", json(beyond_hop_durable)},
                                {"airlock_added_p50_us_fast_stdio_beyond_hop", json(beyond_hop_fast)},
                                {"cpu_ceiling_calls_per_s_direct_stdio", json(ceiling_direct)},
                                {"cpu_ceiling_calls_per_s_airlock_durable_stdio", json(ceiling_durable)},
                                {"cpu_ceiling_calls_per_s_airlock_fast_stdio", json(ceiling_fast)},
                                {"cpu_ceiling_calls_per_s_mcp_proxy_stdio", json(ceiling_proxy)},
                                {"http_floor_p50_us", http_floor},
                                {"signature_p50_us", signature},
                                {"airlock_added_floor_p50_us_fast", floor_fast},
                                {"calls_per_s_ceiling_signing_only", json(ceiling_signing_only)},
                                {"calls_per_s_tenfold_mcp_proxy", json(tenfold_proxy)},
                                {"cores", cores},
                                {"airlock_threads", s.threads > 0 ? boost::json::value(s.threads) : boost::json::value("default")},
                                {"airlock_busy_poll_us", s.busy_poll_us}};
    boost::json::object out{{"bench", "gateway"},
                            {"rows", json_rows},
                            {"commit", {{"p50_us", commit.p50_us}, {"p99_us", commit.p99_us}, {"appends", commit.calls},
                                        {"failures", commit.failures}, {"p50_us_before", commit_before_p50},
                                        {"p50_us_after", commit_after_p50}}},
                            {"derived", derived}};
    std::cout << boost::json::serialize(out) << std::endl;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto number = [&](int& into) {
            if (i + 1 >= argc) return false;
            into = std::max(1, std::atoi(argv[++i]));
            return true;
        };
        if (a == "--calls") { if (!number(s.calls)) return usage(); }
        else if (a == "--concurrency") { if (!number(s.concurrency)) return usage(); }
        else if (a == "--per-task") { if (!number(s.per_task)) return usage(); }
        else if (a == "--commits") { if (!number(s.commits)) return usage(); }
        else if (a == "--airlock" && i + 1 < argc) s.airlock = fs::path(argv[++i]);
        else if (a == "--dir" && i + 1 < argc) s.dir = argv[++i];
        else if (a == "--only" && i + 1 < argc) s.only = argv[++i];
        else if (a == "--threads") {
            int n = 0;
            if (!number(n)) return usage();
            s.threads = static_cast<unsigned>(n);
        }
        else if (a == "--busy-poll") {
            // airlock takes 0us to 10ms; 0 means no polling (the default), not the least polling.
            if (i + 1 >= argc) return usage();
            int const n = std::atoi(argv[++i]);
            if (n < 0 || n > 10'000) {
                std::cerr << "gateway_bench: --busy-poll takes microseconds from 0 to 10000\n";
                return 2;
            }
            s.busy_poll_us = static_cast<unsigned>(n);
        }
        else if (a == "--verbose") s.verbose = true;
        else return usage();
    }
    if (s.busy_poll_us > 0 && s.threads > 1) {
        std::cerr << "gateway_bench: --busy-poll runs airlock with one I/O thread; it cannot go with --threads "
                  << s.threads << "\n";
        return 2;
    }
    std::signal(SIGINT, forward_and_die);
    std::signal(SIGTERM, forward_and_die);
    spdlog::set_level(s.verbose ? spdlog::level::debug : spdlog::level::warn);
    // Every process started here is stopped by a destructor; exceptions are caught so they run.
    try {
        return bench(s);
    } catch (std::exception const& e) {
        std::cerr << "gateway_bench: " << e.what() << "\n";
        return 1;
    }
}
