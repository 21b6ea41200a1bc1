#include "service/cli/run_command.hpp"

#include "core/manifest.hpp"
#include "service/agents/providers/scripted.hpp"
#include "service/app/signals.hpp"
#include "service/app/wiring.hpp"
#include "service/cli/support.hpp"
#include "mcp/client/spawn_logged.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/stream_parser.hpp>

#include <spdlog/spdlog.h>

#include <fstream>
#include <future>
#include <iostream>
#include <sstream>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr char run_usage[] =
    "usage: airlock run MANIFEST --input JSON --config FILE [--provider NAME | --script FILE] [--json]\n"
    "  runs the agent MANIFEST declares once, to its end, with the configuration's upstreams, egress,\n"
    "  journal and signing key, and prints its status, output and run id. The run is journaled like\n"
    "  any other: `airlock runs` lists it and `airlock replay` replays it (with a configuration that\n"
    "  lists the agent under agents:). The input counts as trusted: it comes from the operator.\n"
    "  --input JSON      the run's input (a JSON value)\n"
    "  --config FILE     configuration (docs/configuration.md); required: airlock has no default file\n"
    "  --provider NAME   the model provider, by name from the configuration's providers:\n"
    "  --script FILE     or: the scripted provider playing FILE (docs/scripted-provider.md)\n"
    "                    with neither, the provider of the configuration's agent of the same name\n"
    "  --json            print one JSON object {run_id, status, reason, output, approvals}\n"
    "  exit 0: succeeded; 1: any other final status (failed, exhausted, quarantined, cancelled,\n"
    "  awaiting_approval: decide it over REST, POST /v1/runs/RUN/approvals/EFFECT); 2: a bad command\n"
    "  line, configuration, manifest or input. Ctrl-C cancels the run (a second one stops at once,\n"
    "  leaving the run to be resumed by the next `airlock serve`).\n";

struct run_args {
    std::string manifest;
    std::optional<std::string> input, config, provider, script;
    bool as_json = false;
};

// 0: parsed; otherwise the exit code (help printed: 0 via `done`).
int parse(std::vector<std::string> const& args, run_args& out, bool& done) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << run_usage;
            done = true;
            return 0;
        }
        if (a == "--json") {
            out.as_json = true;
            continue;
        }
        std::optional<std::string>* slot = a == "--input"      ? &out.input
                                           : a == "--config"   ? &out.config
                                           : a == "--provider" ? &out.provider
                                           : a == "--script"   ? &out.script
                                                               : nullptr;
        if (slot) {
            auto v = cli::flag_value(args, i, "run");
            if (!v) return 2;
            *slot = *v;
        } else if (a.starts_with("-")) {
            std::cerr << "airlock run: unknown option '" << a << "'\n" << run_usage;
            return 2;
        } else if (out.manifest.empty()) {
            out.manifest = a;
        } else {
            std::cerr << "airlock run: expected one MANIFEST, got another: '" << a << "'\n" << run_usage;
            return 2;
        }
    }
    if (out.manifest.empty() || !out.input) {
        std::cerr << "airlock run: MANIFEST and --input are required\n" << run_usage;
        return 2;
    }
    if (!out.config) {
        std::cerr << "airlock run: --config is required: the run needs the upstreams, egress and journal a "
                     "configuration names, and airlock has no default configuration file\n";
        return 2;
    }
    if (out.provider && out.script) {
        std::cerr << "airlock run: give --provider or --script, not both (an agent uses one model provider)\n";
        return 2;
    }
    return 0;
}

// The input as JSON, or a message naming the byte where it stops being JSON.
core::result<json::value> parse_input(std::string const& text) {
    json::stream_parser p;
    boost::system::error_code ec;
    auto used = p.write(text.data(), text.size(), ec);
    if (!ec) p.finish(ec);
    if (ec) return core::make_error(core::errc::invalid_input, "--input: not valid JSON at byte " + std::to_string(used) + " (" +
                                                         ec.message() + ")");
    return p.release();
}

core::result<std::string> read_file(std::filesystem::path const& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return core::make_error("unreadable", "cannot read " + file.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The agent the manifest file declares, with its provider chosen as the command line says.
core::result<agent_config> agent_of(run_args const& a, config const& c) {
    agent_config agent;
    agent.manifest_file = std::filesystem::absolute(a.manifest);
    auto text = read_file(agent.manifest_file);
    if (!text) return core::make_error("invalid_manifest", "MANIFEST: " + text.error().message);
    auto where = "MANIFEST (" + a.manifest + "): ";
    if (auto problems = core::manifest_problems(*text); !problems.empty())
        return core::make_error("invalid_manifest", where + problems.front().message);
    auto m = core::parse_manifest(*text);
    if (!m) return core::make_error("invalid_manifest", where + m.error().message);
    if (!m->execution)
        return core::make_error("invalid_manifest", where + "spec.execution is required for an agent airlock runs");
    agent.manifest = std::move(*m);
    agent.name = agent.manifest.name;
    if (a.script) {
        auto s = read_file(*a.script);
        if (!s) return core::make_error("invalid_script", "--script: " + s.error().message);
        auto parsed = parse_script(*s, *a.script);
        if (!parsed) return core::make_error("invalid_script", "--script: " + parsed.error().message);
        agent.script_file = std::filesystem::absolute(*a.script);
        agent.scripted = std::move(*parsed);
        return agent;
    }
    if (a.provider) {
        std::string names;
        for (auto const& p : c.providers) {
            if (p.name == *a.provider) {
                agent.provider = p.name;
                return agent;
            }
            names += (names.empty() ? "" : ", ") + p.name;
        }
        return core::make_error(core::errc::unknown_provider, "--provider: the configuration has no provider '" + *a.provider + "'" +
                                                        (names.empty() ? std::string(" (it configures none)")
                                                                       : " (it has: " + names + ")"));
    }
    for (auto const& configured : c.agents) {
        if (configured.name != agent.name) continue;
        agent.provider = configured.provider;
        agent.script_file = configured.script_file;
        agent.scripted = configured.scripted;
        return agent;
    }
    return core::make_error("missing_provider", "give --provider NAME or --script FILE: the configuration has no agent '" +
                                                    agent.name + "' to take the model provider from");
}

struct outcome {
    std::string run_id;
    run_view view;
    std::vector<pending_approval> approvals;
};

// Starts the run and waits for it to stop running; `started` learns the run id as soon as it exists.
asio::awaitable<core::result<outcome>> async_run_once(std::shared_ptr<runner> runs, run_request request,
                                                      std::function<void(std::string const&)> started) {
    auto ticket = co_await runs->async_start(std::move(request));
    if (!ticket) co_return ticket.error();
    started(ticket->run_id);
    outcome out;
    out.run_id = ticket->run_id;
    for (;;) {
        auto v = co_await runs->async_wait(ticket->run_id, std::chrono::hours(1));
        if (!v) co_return v.error();
        out.view = std::move(*v);
        if (out.view.summary.status != "running") break;
    }
    if (out.view.summary.status == "awaiting_approval") {
        auto pending = co_await runs->async_approvals(out.run_id);
        if (pending) out.approvals = std::move(*pending);
    }
    co_return out;
}

// An effect key as one path segment of the REST route (`RUN/000002/tool` → `RUN%2F000002%2Ftool`).
std::string path_segment(std::string const& key) {
    std::string out;
    for (char ch : key) out += ch == '/' ? std::string("%2F") : std::string(1, ch);
    return out;
}

void print(outcome const& o, bool as_json) {
    auto const& status = o.view.summary.status;
    if (as_json) {
        json::array approvals;
        for (auto const& p : o.approvals)
            approvals.push_back(json::object{{"effect_key", p.effect_key}, {"tool", p.tool}, {"arguments", p.arguments}});
        json::object out{{"run_id", o.run_id},
                         {"status", status},
                         {"reason", o.view.reason},
                         {"output", o.view.output},
                         {"approvals", std::move(approvals)}};
        std::cout << json::serialize(out) << "\n";
        return;
    }
    std::cout << "run: " << o.run_id << "\nstatus: " << status << "\n";
    if (!o.view.reason.empty()) std::cout << "reason: " << o.view.reason << "\n";
    std::cout << "output: " << json::serialize(o.view.output) << "\n";
    if (status == "awaiting_approval") {
        std::cout << "run " << o.run_id << " is awaiting approval; decide it over REST (airlock serve, this configuration,\n"
                  << "the agent listed under agents:) with {\"decision\": \"approve\"} or \"reject\":\n";
        for (auto const& p : o.approvals)
            std::cout << "  POST /v1/runs/" << o.run_id << "/approvals/" << path_segment(p.effect_key) << "  (" << p.tool << " "
                      << json::serialize(p.arguments) << ")\n";
    }
}

// What the run came to, printed, as the exit code: 0 when it succeeded.
int report(std::future<core::result<outcome>>& fut, std::string const& run_id, bool as_json) {
    if (fut.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        std::cerr << "airlock run: stopped before the run ended" << (run_id.empty() ? "" : "; run " + run_id)
                  << " is left to be resumed\n";
        return 1;
    }
    core::result<outcome> r = core::make_error(core::errc::internal, "");
    try {
        r = fut.get();
    } catch (std::exception const& e) {
        std::cerr << "airlock run: internal error: " << e.what() << "\n";
        return 1;
    }
    if (!r) {
        bool bad_input = r.error().code == "invalid_request";
        std::cerr << "airlock run: " << (bad_input ? "--" : "") << r.error().message << "\n";
        return bad_input ? 2 : 1;
    }
    print(*r, as_json);
    return r->view.summary.status == "succeeded" ? 0 : 1;
}

}  // namespace

int run_run(std::vector<std::string> const& args) {
    run_args a;
    bool done = false;
    if (int rc = parse(args, a, done); rc != 0 || done) return rc;
    auto input = parse_input(*a.input);
    if (!input) {
        std::cerr << "airlock run: " << input.error().message << "\n";
        return 2;
    }
    auto c = load_serving_config(a.config);
    if (!c) {
        std::cerr << "airlock run: " << *a.config << ": " << c.error().message << "\n";
        return 2;
    }
    // Text on stderr for a person at a terminal; the level, and the redaction of every secret, as configured.
    apply_logging(*c, log_flags{log_format::text, std::nullopt});
    auto agent = agent_of(a, *c);
    if (!agent) {
        std::cerr << "airlock run: " << agent.error().message << "\n";
        return 2;
    }
    // The manifest given is the agent run, in place of a configured agent of the same name.
    std::erase_if(c->agents, [&](agent_config const& x) { return x.name == agent->name; });
    c->agents.push_back(*agent);

    asio::io_context ioc;
    auto sc = build_core(*c, ioc.get_executor());
    if (!sc) {
        std::cerr << "airlock run: " << sc.error().message << "\n";
        return sc.error().code == "unknown_provider" ? 2 : 1;
    }
    run_request request;
    request.agent = agent->name;
    request.input = std::move(*input);
    request.input_label = core::label{{"operator"}, core::trust::trusted, core::sensitivity::public_};

    // The first SIGINT/SIGTERM cancels the run (observed at its next step); a second stops now,
    // leaving the run unsealed for the next `airlock serve` to resume.
    std::string run_id;
    bool cancel_asked = false;
    auto runs = sc->runs;
    auto cancel = [&] {
        if (run_id.empty()) return;
        asio::co_spawn(ioc, runs->async_cancel(run_id), [](std::exception_ptr e, core::result<void> r) {
            if (e) return mcp::log_task_end("cancel the run", e);
            if (!r) spdlog::warn("cannot cancel the run: {}", r.error().message);
        });
    };
    signal_watcher signals(ioc, signal_actions{[&](int sig) {
                                                   spdlog::info("signal {} received: cancelling the run "
                                                                "(a second one stops at once)",
                                                                sig);
                                                   cancel_asked = true;
                                                   cancel();
                                               },
                                               [&](int sig) {
                                                   spdlog::warn("signal {} received again: stopping now", sig);
                                                   runs->stop();
                                                   ioc.stop();
                                               },
                                               [] {}});
    auto on_start = [&](std::string const& id) {
        run_id = id;
        if (cancel_asked) cancel();
    };
    auto task = [&]() -> asio::awaitable<core::result<outcome>> {
        auto r = co_await async_run_once(runs, std::move(request), on_start);
        co_await async_close_upstreams(sc->clients);
        signals.cancel();  // the watcher's wait is the last work keeping the loop running
        co_return r;
    };
    auto fut = asio::co_spawn(ioc, task(), asio::use_future);
    ioc.run();
    signals.cancel();
    sc->journal->close();
    return report(fut, run_id, a.as_json);
}

}  // namespace airlock::service
