#include "service/app/stdio_command.hpp"

#include "service/app/signals.hpp"
#include "service/app/wiring.hpp"
#include "service/gateway/redacting_backend.hpp"
#include "service/mcp/stdio_endpoint.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <spdlog/spdlog.h>

#include <iostream>

namespace airlock::service {

namespace asio = boost::asio;

namespace {

constexpr char stdio_usage[] =
    "usage: airlock stdio --config FILE [--principal NAME] [--log-format json|text] [--log-level LEVEL]\n"
    "  serves one MCP client on stdin/stdout as NAME (default: the only principal in the file)\n"
    "  until end of input or SIGTERM/SIGINT; logs go to stderr\n";

struct stdio_args {
    std::optional<std::string> config_file, principal;
    log_flags logging;
};

// The command line; nullopt to go on, else the exit code (after printing usage or the problem).
std::optional<int> parse_stdio_args(std::vector<std::string> const& args, stdio_args& out) {
    auto& config_file = out.config_file;
    auto& principal = out.principal;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (auto ok = parse_log_flag(args, i, out.logging, "stdio")) {
            if (!*ok) return 2;
            continue;
        }
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << stdio_usage;
            return 0;
        }
        if ((a == "--config" || a == "--principal") && i + 1 < args.size()) {
            (a == "--config" ? config_file : principal) = args[++i];
        } else {
            std::cerr << "airlock stdio: unknown or incomplete option '" << a << "'\n" << stdio_usage;
            return 2;
        }
    }
    if (!config_file) {
        std::cerr << "airlock stdio: --config is required\n" << stdio_usage;
        return 2;
    }
    return std::nullopt;
}

// The principal the session is served as: --principal, or the file's only one; nullopt to go on,
// else the exit code.
std::optional<int> pick_principal(config const& c, std::optional<std::string>& principal) {
    if (!principal) {
        if (c.principals.size() != 1) {
            std::cerr << "airlock stdio: --principal is required when the configuration has "
                      << c.principals.size() << " principals\n";
            return 2;
        }
        principal = c.principals.front().name;
    } else {
        bool known = false;
        for (auto const& p : c.principals) known = known || p.name == *principal;
        if (!known) {
            std::cerr << "airlock stdio: --principal: no principal '" << *principal << "' in the configuration\n";
            return 2;
        }
    }
    return std::nullopt;
}

}  // namespace

int run_stdio(std::vector<std::string> const& args) {
    stdio_args a;
    if (auto exit = parse_stdio_args(args, a)) return *exit;
    auto const& config_file = a.config_file;
    auto& principal = a.principal;
    auto c = load_serving_config(config_file);
    if (!c) {
        std::cerr << "airlock stdio: " << *config_file << ": " << c.error().message << "\n";
        return 1;
    }
    apply_logging(*c, a.logging);
    if (auto exit = pick_principal(*c, principal)) return *exit;
    asio::io_context ioc;
    // SIGTERM or SIGINT ends the session as end of input does, so upstream children are stopped in
    // the spec's order rather than left running by the default action; a second one stops waiting
    // for requests still running. Watching from before any upstream can start.
    auto stop = std::make_shared<stdio_stop>();
    signal_watcher signals(ioc, signal_actions{[stop](int sig) {
                                                   spdlog::info("signal {} received: ending the session "
                                                                "(a second signal stops at once)",
                                                                sig);
                                                   stop->request();
                                               },
                                               [stop](int sig) {
                                                   spdlog::warn("signal {} received again: stopping now", sig);
                                                   stop->request();
                                               },
                                               [] { spdlog::info("SIGHUP ignored: airlock stdio has nothing to reload"); }});
    auto sc = build_core(*c, ioc.get_executor());
    if (!sc) {
        spdlog::error("cannot start: {}", sc.error().message);
        return 1;
    }
    stdio_endpoint_options so;
    so.principal = *principal;
    so.input_request_ttl = c->server.input_request_ttl;
    so.max_message_bytes = c->server.body_limit;
    so.drain_grace = c->server.drain_grace;
    so.stop = stop;
    auto task = [&]() -> asio::awaitable<void> {
        // Before the first request: a run left open by a process that is gone is sealed before this
        // session's own run is admitted.
        co_await async_close_interrupted_runs(sc->journal, sc->owner);
        sc->gw->start_run_upkeep();
        co_await async_serve_stdio(std::make_shared<redacting_backend>(sc->gw), so);
        // The session's run (and a 2026-07-28 caller's, keyed by principal) is sealed once the
        // calls in it have journaled their outcomes.
        sc->gw->close_all_runs();
        co_await async_close_upstreams(sc->clients);
        co_await sc->gw->async_runs_closed(std::chrono::seconds(2));
    };
    std::exception_ptr failure;
    // However the session ends, the watcher's wait is the last work keeping the loop running.
    auto finished = [&](std::exception_ptr e) {
        failure = e;
        signals.cancel();
    };
    asio::co_spawn(ioc, task(), finished);
    ioc.run();
    sc->journal->close();
    try {
        if (failure) std::rethrow_exception(failure);
    } catch (std::exception const& e) {
        spdlog::error("stdio session ended by an internal error: {}", e.what());
        return 1;
    }
    return 0;
}

}  // namespace airlock::service
