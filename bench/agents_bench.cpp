// The agent runtime at scale: N runs admitted at once through service::runner, each a tool-calling
// agent whose model (a scripted Chat Completions server on loopback HTTP, in this process) asks for
// three tool calls (ledger read, post, read) and then answers. The tools are either in-process (a
// core::toolbox routed by mcp::tool_router) or the example ledger MCP server
// (examples/ledger/server.mjs) over stdio, one Node process for every run. The journal is the real
// LMDB store in a temporary directory. Prints a table and one JSON line; it never passes or fails on
// time.
//
//   build/bench/bench_agents_bench [--runs N[,N...]] [--tools inproc|stdio|both]
//                                  [--durability durable|fast] [--threads T] [--connections C]
//                                  [--deadline SECS] [--dir DIR] [--quick]
//
// Defaults: 1,000 and 10,000 runs, both kinds of tools, durable journal, the runner on 1 thread,
// at most 256 connections to the model (a provider's default max_connections), 600 s per row.
// --quick (or AIRLOCK_BENCH_QUICK=1) is a smoke size: 50 and 200 runs.
//
// Per row (kind of tools × runs):
// - runs/s: runs that reached a terminal status, over the time from the first admission to the last
//   terminal status;
// - p50/p99 run latency: from the call to async_start to the return of async_wait (the run is no
//   longer running and its driver has let go of it). All N runs are admitted at once, so latency is
//   dominated by queueing behind the other runs: it is the time for the whole burst to drain, not
//   the cost of one run;
// - RSS: the baseline is VmRSS just before the row (after malloc_trim); the peak is VmHWM, reset
//   per row through /proc/self/clear_refs; "per run" is (peak − baseline) / N. The journal is an
//   mmap, so the pages of it this process touched are in RSS too ("file" part); "anon" is the
//   sampled peak of RssAnon (heap: coroutine frames, buffers, the loop states);
// - strict replay: async_replay of every run of the row, one after another on one coroutine;
//   records matched per second, and any replay whose status differs from the run's.
// Every run of a row is admitted at the start and waited for at most until the row's deadline
// (--deadline), after which the row reports what finished and counts the rest as unfinished. Replay
// stops at a deadline of the same length. Runs the model or a tool failed are counted, never hidden:
// "clean" runs succeeded with every tool call answered.
//
// Deviations from `airlock serve`: the tool schemas shown to the model come from the in-process
// toolbox for both kinds (serve's catalogue lists the upstream's tools once per run). The in-process
// ledger is examples/ledger/ledger_toolbox.hpp, the typed twin of examples/ledger/server.mjs.

#include "core/manifest.hpp"
#include "core/provenance.hpp"
#include "core/toolbox.hpp"
#include "examples/ledger/ledger_toolbox.hpp"
#include "mcp/client/client.hpp"
#include "mcp/client/router.hpp"
#include "mcp/client/stdio_transport.hpp"
#include "service/http/http_server.hpp"
#include "service/agents/providers/openai.hpp"
#include "service/agents/runner.hpp"
#include "store/lmdb_store.hpp"
#include "tests/support/peers.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;
using namespace airlock;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

struct settings {
    std::vector<int> sizes{1000, 10000};
    std::vector<std::string> kinds{"inproc", "stdio"};
    store::durability mode = store::durability::durable;
    unsigned threads = 1;
    std::size_t connections = 256;  // the provider's max_connections (and kept-alive pool)
    std::chrono::seconds deadline{600};
    fs::path dir = fs::temp_directory_path();
};

// ---- memory -----------------------------------------------------------------------------------

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM", "RssAnon", "RssFile").
std::size_t status_kib(std::string const& field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(field + ":", 0) == 0) {
            std::istringstream fields(line.substr(field.size() + 1));
            std::size_t kib = 0;
            fields >> kib;
            return kib;
        }
    }
    return 0;
}

// Makes VmHWM start again from the current RSS, so each row's peak is its own.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// Samples RssAnon while a row runs: the kernel keeps no peak of it.
class anon_sampler {
public:
    anon_sampler() : thread_([this] {
        while (!stop_) {
            auto now = status_kib("RssAnon");
            if (now > peak_) peak_ = now;
            std::this_thread::sleep_for(20ms);
        }
    }) {}
    ~anon_sampler() { finish(); }
    std::size_t finish() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
        return peak_;
    }

private:
    std::atomic<bool> stop_{false};
    std::atomic<std::size_t> peak_{0};
    std::thread thread_;
};

// ---- the scripted model over loopback HTTP -----------------------------------------------------

// A Chat Completions server on 127.0.0.1:0 with its own thread. It keeps no state per run: the turn
// is read from the conversation it is sent (how many tool results it holds), so every run plays the
// same script: read AC-1, post 1 to AC-1, read AC-1, then an answer that says how many tool results
// were errors and quotes the last one.
class scripted_chat_api {
public:
    scripted_chat_api() {
        service::http_server_options o;
        o.host = "127.0.0.1";
        o.port = 0;
        o.max_connections = 100'000;  // the bench wants to see how many the client opens, not refuse them
        server_ = std::make_unique<service::http_server>(
            ioc_, o, [this](service::http_request& req) { return answer(req); });
        server_->listen();
        server_->start();
        thread_ = std::thread([this] { ioc_.run(); });
    }
    ~scripted_chat_api() {
        asio::post(ioc_, [this] { server_->stop(); });
        for (int i = 0; i < 200 && !ioc_.stopped(); ++i) std::this_thread::sleep_for(10ms);
        ioc_.stop();
        thread_.join();
    }
    std::uint16_t port() const { return server_->local_endpoint().port(); }
    std::size_t requests() const { return requests_; }
    std::size_t peak_connections() const { return peak_connections_; }

private:
    asio::awaitable<service::http_response> answer(service::http_request& req) {
        ++requests_;
        auto open = server_->active_connections();
        if (open > peak_connections_) peak_connections_ = open;
        boost::system::error_code ec;
        auto body = json::parse(req.body(), ec);
        json::array const* messages = nullptr;
        if (!ec && body.is_object())
            if (auto const* m = body.as_object().if_contains("messages"); m && m->is_array()) messages = &m->as_array();
        if (!messages)
            co_return service::json_error(service::http::status::bad_request, "invalid_request",
                                          "messages: expected an array", req.version(), req.keep_alive());
        int results = 0, errors = 0;
        std::string last, first_error;
        for (auto const& m : *messages) {
            auto const* o = m.if_object();
            if (!o || !o->contains("role") || o->at("role") != "tool") continue;
            ++results;
            auto const* c = o->if_contains("content");
            last = c && c->is_string() ? std::string(c->as_string()) : std::string();
            if (last.rfind("Error", 0) == 0 && errors++ == 0) first_error = last;
        }
        json::object message{{"role", "assistant"}};
        std::string finish;
        if (results < 3) {
            static char const* const tools[] = {"ledger__read", "ledger__post", "ledger__read"};
            static char const* const arguments[] = {R"({"account":"AC-1"})", R"({"account":"AC-1","amount":1})",
                                                    R"({"account":"AC-1"})"};
            message["content"] = nullptr;
            message["tool_calls"] = json::array{json::object{
                {"id", "call_" + std::to_string(results + 1)},
                {"type", "function"},
                {"function", json::object{{"name", tools[results]}, {"arguments", arguments[results]}}}}};
            finish = "tool_calls";
        } else {
            message["content"] = "done; tool errors: " + std::to_string(errors) + "; last: " + last +
                                 (errors ? "; first error: " + first_error : std::string());
            finish = "stop";
        }
        json::object answer{{"id", "chatcmpl-bench-" + std::to_string(requests_.load())},
                            {"object", "chat.completion"},
                            {"model", "bench-1"},
                            {"choices", json::array{json::object{{"index", 0}, {"message", std::move(message)},
                                                                 {"finish_reason", finish}}}},
                            {"usage", json::object{{"prompt_tokens", 20}, {"completion_tokens", 8}, {"total_tokens", 28}}}};
        co_return service::json_response(service::http::status::ok, json::serialize(answer), req.version(),
                                         req.keep_alive());
    }

    asio::io_context ioc_;
    std::unique_ptr<service::http_server> server_;
    std::thread thread_;
    std::atomic<std::size_t> requests_{0};
    std::atomic<std::size_t> peak_connections_{0};
};

// ---- the agent and its tools ------------------------------------------------------------------

// Like examples/teller.yaml, except that the post's account may come from this model (whose
// output is labelled with what it read): every run makes all three calls.
constexpr char manifest_yaml[] = R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: bench-teller, version: "1.0.0" }
spec:
  identity: { role: "Answer questions about a ledger account." }
  capabilities: { provides: [ledger.ask] }
  models: { privileged: { provider: bench, model: bench-1 } }
  security: { max_sensitivity_egress: internal }
  tools:
    - { ref: tool://ledger/read, mutates: false, max_sensitivity: internal, description: "Read a ledger account's balance." }
    - ref: tool://ledger/post
      mutates: true
      max_sensitivity: internal
      description: Post an amount to an account.
      protected_fields: [{ path: /account, allowed_sources: [operator, "model://openai/bench-1", "tool://ledger/read"] }]
  execution: { kind: tool-calling, max_turns: 5 }
  budgets: { max_tokens: 100000 }
)";

// ---- one row ----------------------------------------------------------------------------------

struct row {
    std::string tools;
    int runs = 0;
    std::size_t admitted = 0, refused = 0, finished = 0, succeeded = 0, answered_cleanly = 0, unfinished = 0;
    std::map<std::string, std::size_t> statuses;
    std::string first_problem;
    double seconds = 0, p50_ms = 0, p99_ms = 0;
    std::size_t baseline_kib = 0, peak_kib = 0, peak_anon_kib = 0, end_file_kib = 0;
    std::size_t model_requests = 0, model_peak_connections = 0, tool_calls = 0;
    std::size_t replayed = 0, replay_records = 0, replay_mismatches = 0;
    double replay_seconds = 0;
    double rate() const { return seconds > 0 ? static_cast<double>(finished) / seconds : 0; }
    double per_run_kib() const {
        return runs > 0 && peak_kib > baseline_kib ? static_cast<double>(peak_kib - baseline_kib) / runs : 0;
    }
    double replay_rate() const { return replay_seconds > 0 ? static_cast<double>(replay_records) / replay_seconds : 0; }
};

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

struct run_outcome {
    std::string run_id;
    std::string status;
    bool clean = false;  // the model's answer says every tool result was a success
    std::string output;  // when it does not
    double ms = 0;
};

row measure(settings const& s, std::string const& kind, int n) {
    row out;
    out.tools = kind;
    out.runs = n;

    std::random_device rd;
    auto dir = s.dir / ("airlock-agents-bench-" + std::to_string(rd()));
    fs::create_directories(dir);
    store::lmdb_options lo;
    lo.directory = dir / "journal";
    lo.mode = s.mode;
    lo.map_size = std::size_t{16} << 30;  // a ceiling, not an allocation
    auto opened = store::lmdb_store::open(lo);
    if (!opened) throw std::runtime_error("journal: " + opened.error().message);
    std::shared_ptr<store::lmdb_store> journal = std::move(*opened);

    scripted_chat_api api;
    asio::io_context ioc;
    auto work = asio::make_work_guard(ioc);

    core::egress_allowlist egress;
    auto model_at = core::remote_destination{"http", "127.0.0.1", api.port()};
    (void)egress.add(core::local_destination{});
    (void)egress.add(core::process_destination{testing::peers::node()});
    (void)egress.add(model_at);

    service::providers::provider_settings ps;
    ps.name = "bench";
    ps.model = "bench-1";
    ps.http.base_url = "http://127.0.0.1:" + std::to_string(api.port()) + "/v1";
    ps.http.max_connections = s.connections;
    ps.http.pool_size = s.connections;
    (void)ps.http.egress.add(model_at);
    auto provider = std::make_shared<service::providers::http_provider>(ioc.get_executor(), ps,
                                                                         service::providers::openai_wire());

    auto state = std::make_shared<examples::ledger_state>();
    auto box = examples::make_ledger_toolbox(state);
    std::shared_ptr<mcp::mcp_client> upstream;
    auto router = std::make_shared<mcp::tool_router>(egress);
    if (kind == "stdio") {
        mcp::stdio_options so;
        so.server_name = "ledger";
        so.argv = {testing::peers::node(), std::string(AIRLOCK_SOURCE_DIR) + "/examples/ledger/server.mjs"};
        mcp::client_options co;
        co.server_name = "ledger";
        co.kind = mcp::transport_kind::stdio;
        co.call_deadline = std::chrono::duration_cast<std::chrono::milliseconds>(s.deadline);
        upstream = std::make_shared<mcp::mcp_client>(std::make_unique<mcp::stdio_transport>(ioc.get_executor(), so), co);
        (void)router->add_route("ledger", upstream);
    } else {
        (void)router->add_route("ledger", box);
    }
    std::vector<core::model_tool> catalogue;
    for (auto const& id : box->ids())
        if (auto const* d = box->find(id)) catalogue.push_back({id.wire_name(), d->description, json::value(d->schema)});

    auto manifest = core::parse_manifest(manifest_yaml);
    if (!manifest) throw std::runtime_error("manifest: " + manifest.error().message);
    auto signer = core::provenance_signer::from_raw_seed("bench", std::string(32, '\x2a'));
    if (!signer) throw std::runtime_error("signer: " + signer.error().message);

    service::runner_options o;
    o.executor = ioc.get_executor();
    o.agents = {{*manifest, "bench", provider}};
    o.tools = router;
    o.egress = egress;
    o.journal = journal;
    o.signer = std::make_shared<core::provenance_signer const>(std::move(*signer));
    o.max_concurrent_runs = static_cast<std::size_t>(n);
    o.catalogue = [catalogue](core::manifest const&) -> asio::awaitable<std::vector<core::model_tool>> {
        co_return catalogue;
    };
    auto made = service::runner::make(std::move(o));
    if (!made) throw std::runtime_error("runner: " + made.error().message);
    auto runner = *made;

    std::vector<std::thread> threads;
    for (unsigned t = 0; t < s.threads; ++t) threads.emplace_back([&ioc] { ioc.run(); });
    auto on_ioc = [&](auto task) { return asio::co_spawn(ioc, std::move(task), asio::use_future).get(); };

    // The upstream is started and initialized before the clock starts, as serve does at start-up.
    if (upstream) {
        auto ready = on_ioc(upstream->async_connect());
        if (!ready) throw std::runtime_error("ledger upstream: " + ready.error().detail);
    }

    ::malloc_trim(0);
    out.baseline_kib = status_kib("VmRSS");
    reset_peak_rss();
    anon_sampler anon;

    auto const row_start = clock_type::now();
    auto const row_deadline = row_start + s.deadline;
    std::vector<run_outcome> outcomes(static_cast<std::size_t>(n));
    std::atomic<int> remaining{n};
    std::promise<void> all_done;
    auto one = [&](std::size_t i) -> asio::awaitable<void> {
        service::run_request req;
        req.agent = "bench-teller";
        req.input = json::object{{"question", "what is in AC-1?"}, {"n", i}};
        req.input_label = core::label{{"operator"}, core::trust::trusted, core::sensitivity::public_};
        auto t0 = clock_type::now();
        auto ticket = co_await runner->async_start(std::move(req));
        if (!ticket) {
            outcomes[i].status = "refused: " + ticket.error().code + ": " + ticket.error().message;
        } else {
            outcomes[i].run_id = ticket->run_id;
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(row_deadline - clock_type::now());
            auto v = co_await runner->async_wait(ticket->run_id, std::max(left, 0ms));
            outcomes[i].ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
            if (!v) {
                outcomes[i].status = "error: " + v.error().message;
            } else {
                outcomes[i].status = v->summary.status;
                outcomes[i].clean = v->output.is_string() &&
                                    std::string_view(v->output.as_string()).find("tool errors: 0;") != std::string_view::npos;
                if (!outcomes[i].clean)
                    outcomes[i].output = (v->reason.empty() ? json::serialize(v->output) : v->reason).substr(0, 400);
            }
        }
        if (--remaining == 0) all_done.set_value();
    };
    for (int i = 0; i < n; ++i) asio::co_spawn(ioc, one(static_cast<std::size_t>(i)), asio::detached);
    all_done.get_future().wait();

    // The end of the row is the last terminal status seen.
    std::vector<double> latencies;
    double last_ms = 0;
    for (auto const& r : outcomes) {
        if (r.run_id.empty()) {
            ++out.refused;
            if (out.first_problem.empty()) out.first_problem = r.status;
            continue;
        }
        ++out.admitted;
        ++out.statuses[r.status];
        if (r.status == "running") {
            ++out.unfinished;
            continue;
        }
        ++out.finished;
        latencies.push_back(r.ms);
        last_ms = std::max(last_ms, r.ms);
        if (r.status == "succeeded") ++out.succeeded;
        if (r.status == "succeeded" && r.clean) ++out.answered_cleanly;
        if ((r.status != "succeeded" || !r.clean) && out.first_problem.empty()) out.first_problem = r.run_id + ": " + r.status + " " + r.output;
    }
    out.seconds = out.unfinished ? std::chrono::duration<double>(clock_type::now() - row_start).count() : last_ms / 1000;
    out.p50_ms = percentile(latencies, 0.50);
    out.p99_ms = percentile(latencies, 0.99);
    out.peak_kib = status_kib("VmHWM");
    out.peak_anon_kib = anon.finish();
    out.model_requests = api.requests();
    out.model_peak_connections = api.peak_connections();
    out.tool_calls = state->reads() + state->posts();

    // Strict replay of every run that ended, one after another, bounded like the runs.
    auto replay = [&]() -> asio::awaitable<void> {
        auto start = clock_type::now();
        auto stop_at = start + s.deadline;
        for (auto const& r : outcomes) {
            if (r.run_id.empty() || r.status == "running") continue;
            if (clock_type::now() >= stop_at) break;
            auto rep = co_await runner->async_replay(r.run_id);
            ++out.replayed;
            if (!rep || std::string(core::to_string(rep->status)) != r.status) {
                ++out.replay_mismatches;
                continue;
            }
            out.replay_records += rep->records;
        }
        out.replay_seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    };
    on_ioc(replay());
    out.end_file_kib = status_kib("RssFile");
    if (kind == "inproc") out.tool_calls = state->reads() + state->posts();

    if (upstream) on_ioc(upstream->async_close());
    runner->stop();
    work.reset();
    ioc.stop();
    for (auto& t : threads) t.join();
    journal->close();
    std::error_code ec;
    fs::remove_all(dir, ec);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    settings s;
    bool quick = false;
    if (auto const* q = std::getenv("AIRLOCK_BENCH_QUICK"); q && std::string(q) == "1") quick = true;
    auto usage = [] {
        std::cerr << "usage: agents_bench [--runs N[,N...]] [--tools inproc|stdio|both] [--durability durable|fast]\n"
                     "                    [--threads T] [--connections C] [--deadline SECS] [--dir DIR] [--quick]\n";
        return 2;
    };
    bool sizes_given = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        bool has_value = i + 1 < argc;
        if (a == "--quick") {
            quick = true;
        } else if (a == "--runs" && has_value) {
            s.sizes.clear();
            std::istringstream list(argv[++i]);
            std::string item;
            while (std::getline(list, item, ','))
                if (int v = std::atoi(item.c_str()); v > 0) s.sizes.push_back(v);
            if (s.sizes.empty()) return usage();
            sizes_given = true;
        } else if (a == "--tools" && has_value) {
            std::string t = argv[++i];
            if (t == "both") s.kinds = {"inproc", "stdio"};
            else if (t == "inproc" || t == "stdio") s.kinds = {t};
            else return usage();
        } else if (a == "--durability" && has_value) {
            std::string d = argv[++i];
            if (d == "durable") s.mode = store::durability::durable;
            else if (d == "fast") s.mode = store::durability::fast;
            else return usage();
        } else if (a == "--threads" && has_value) {
            s.threads = static_cast<unsigned>(std::max(1, std::atoi(argv[++i])));
        } else if (a == "--connections" && has_value) {
            s.connections = static_cast<std::size_t>(std::max(1, std::atoi(argv[++i])));
        } else if (a == "--deadline" && has_value) {
            s.deadline = std::chrono::seconds(std::max(1, std::atoi(argv[++i])));
        } else if (a == "--dir" && has_value) {
            s.dir = argv[++i];
        } else {
            return usage();
        }
    }
    if (quick && !sizes_given) s.sizes = {50, 200};
    spdlog::set_level(spdlog::level::err);

    // Every run holds a socket to the model while it waits for it, and the server end is in this
    // process too.
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &files);
    }

    std::string const durability = s.mode == store::durability::durable ? "durable" : "fast";
    std::vector<row> rows;
    for (auto const& kind : s.kinds) {
        for (int n : s.sizes) {
            std::cerr << "agents_bench: " << kind << " tools, " << n << " concurrent runs, " << durability
                      << " journal...\n";
            rows.push_back(measure(s, kind, n));
            auto const& r = rows.back();
            if (!r.first_problem.empty()) std::cerr << "  first problem: " << r.first_problem << "\n";
        }
    }

    std::printf("%-7s %-8s %6s %6s %6s %7s %8s %9s %9s %9s %9s %9s %8s %9s %12s\n", "tools", "journal", "runs", "done",
                "clean", "failed", "runs/s", "p50 ms", "p99 ms", "base MiB", "peak MiB", "anon MiB", "KiB/run",
                "replayed", "replay rec/s");
    json::array json_rows;
    for (auto const& r : rows) {
        auto mib = [](std::size_t kib) { return static_cast<double>(kib) / 1024; };
        std::size_t failed = r.finished - r.succeeded + r.refused;
        std::printf("%-7s %-8s %6d %6zu %6zu %7zu %8.0f %9.0f %9.0f %9.1f %9.1f %9.1f %8.1f %9zu %12.0f\n",
                    r.tools.c_str(), durability.c_str(), r.runs, r.finished, r.answered_cleanly, failed, r.rate(),
                    r.p50_ms, r.p99_ms, mib(r.baseline_kib), mib(r.peak_kib), mib(r.peak_anon_kib), r.per_run_kib(),
                    r.replayed, r.replay_rate());
        json::object statuses;
        for (auto const& [k, v] : r.statuses) statuses[k] = v;
        json_rows.push_back({{"tools", r.tools},
                             {"journal", durability},
                             {"runs", r.runs},
                             {"admitted", r.admitted},
                             {"refused", r.refused},
                             {"finished", r.finished},
                             {"unfinished", r.unfinished},
                             {"succeeded", r.succeeded},
                             {"answered_cleanly", r.answered_cleanly},
                             {"statuses", statuses},
                             {"seconds", r.seconds},
                             {"runs_per_s", r.rate()},
                             {"p50_ms", r.p50_ms},
                             {"p99_ms", r.p99_ms},
                             {"baseline_rss_mib", mib(r.baseline_kib)},
                             {"peak_rss_mib", mib(r.peak_kib)},
                             {"peak_anon_mib", mib(r.peak_anon_kib)},
                             {"rss_file_after_mib", mib(r.end_file_kib)},
                             {"rss_per_run_kib", r.per_run_kib()},
                             {"model_requests", r.model_requests},
                             {"model_peak_connections", r.model_peak_connections},
                             {"replayed", r.replayed},
                             {"replay_records", r.replay_records},
                             {"replay_mismatches", r.replay_mismatches},
                             {"replay_seconds", r.replay_seconds},
                             {"replay_records_per_s", r.replay_rate()}});
    }
    for (auto const& r : rows)
        if (r.unfinished || r.refused || r.replay_mismatches || r.answered_cleanly != r.finished)
            std::printf("%s × %d: %zu unfinished at the deadline, %zu refused, %zu not clean, %zu replay mismatches%s%s\n",
                        r.tools.c_str(), r.runs, r.unfinished, r.refused, r.finished - r.answered_cleanly,
                        r.replay_mismatches, r.first_problem.empty() ? "" : "; first: ", r.first_problem.c_str());
    std::cout << json::serialize(json::object{{"bench", "agents"},
                                              {"threads", s.threads},
                                              {"model_connections", s.connections},
                                              {"deadline_s", s.deadline.count()},
                                              {"rows", json_rows}})
              << std::endl;
    return 0;
}
