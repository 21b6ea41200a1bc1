#include "service/app/serve_command.hpp"

#include "mcp/client/spawn_logged.hpp"
#include "service/app/cpus.hpp"
#include "service/app/lifecycle.hpp"
#include "service/app/ops_routes.hpp"
#include "service/app/pin_watch.hpp"
#include "service/app/reload.hpp"
#include "service/app/reload_plan.hpp"
#include "service/app/server_options.hpp"
#include "service/app/serving.hpp"
#include "service/app/shutdown.hpp"
#include "service/app/signals.hpp"
#include "service/app/wiring.hpp"
#include "service/gateway/redacting_backend.hpp"
#include "service/gateway/reloadable_backend.hpp"
#include "service/http/http_server.hpp"
#include "service/mcp/streamable_http_endpoint.hpp"
#include "service/ops/hints.hpp"
#include "service/ops/metrics.hpp"
#include "service/ops/request_observer.hpp"
#include "service/rest/rest_api.hpp"
#include "service/rest/runner_control.hpp"

#include <boost/asio/io_context.hpp>

#include <spdlog/spdlog.h>

#include <charconv>
#include <functional>
#include <iostream>
#include <map>
#include <thread>

#include <unistd.h>

namespace airlock::service {

namespace asio = boost::asio;

namespace {

constexpr char serve_usage[] =
    "usage: airlock serve [--config FILE] [--listen HOST:PORT] [--threads N] [--log-format json|text]\n"
    "                     [--log-level trace|debug|info|warn|error] [--hints | --no-hints]\n"
    "  --config FILE        configuration (docs/configuration.md); without it, the embedded defaults:\n"
    "                       127.0.0.1:8787, journal in var/journal, no upstreams, no principals\n"
    "  --listen HOST:PORT   overrides server.listen (port 0 picks a free one)\n"
    "  --threads N          overrides server.threads\n"
    "  --log-format F       overrides logging.format: json (one object per line) or text\n"
    "  --log-level L        overrides logging.level\n"
    "  --hints, --no-hints  print (or not) on stdout, once listening, what is served where and three\n"
    "                       commands to try; the default prints them when stdout is a terminal\n";

struct serve_args {
    std::optional<std::string> config_file, listen;
    std::optional<unsigned> threads_override;
    std::optional<bool> hints;
    log_flags logging;
};

// The command line; nullopt to go on, else the exit code (after printing usage or the problem).
std::optional<int> parse_serve_args(std::vector<std::string> const& args, serve_args& out) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (auto ok = parse_log_flag(args, i, out.logging, "serve")) {
            if (!*ok) return 2;
            continue;
        }
        auto const& a = args[i];
        auto value = [&](char const* name) -> std::string const* {
            if (i + 1 >= args.size()) {
                std::cerr << "airlock serve: " << name << " needs a value\n";
                return nullptr;
            }
            return &args[++i];
        };
        if (a == "--help" || a == "-h") {
            std::cout << serve_usage;
            return 0;
        } else if (a == "--config") {
            auto v = value("--config");
            if (!v) return 2;
            out.config_file = *v;
        } else if (a == "--hints" || a == "--no-hints") {
            out.hints = a == "--hints";
        } else if (a == "--listen") {
            auto v = value("--listen");
            if (!v) return 2;
            out.listen = *v;
        } else if (a == "--threads") {
            auto v = value("--threads");
            if (!v) return 2;
            unsigned n = 0;
            auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
            if (ec != std::errc{} || p != v->data() + v->size() || n == 0 || n > 256) {
                std::cerr << "airlock serve: --threads: '" << *v << "' is not a number from 1 to 256\n";
                return 2;
            }
            out.threads_override = n;
        } else {
            std::cerr << "airlock serve: unknown option '" << a << "'\n" << serve_usage;
            return 2;
        }
    }
    server_config probe;
    if (out.listen && !parse_listen(*out.listen, probe)) {
        std::cerr << "airlock serve: --listen: '" << *out.listen << "' is not HOST:PORT\n";
        return 2;
    }
    return std::nullopt;
}

// Runs the I/O context on this thread until it stops. With busy polling, after each burst of
// events the thread keeps asking for more (non-blocking) for `busy_poll` before it sleeps in the
// event poll: an event that comes meanwhile is handled without the wake-up of a sleeping thread,
// which on a virtual machine costs tens of microseconds. Only for a single I/O thread: with
// several, the one asleep in the event poll would take the events the polling one waits for.
void run_io(asio::io_context& ioc, std::chrono::microseconds busy_poll) {
    if (busy_poll.count() <= 0) {
        ioc.run();
        return;
    }
    using clock = std::chrono::steady_clock;
    while (!ioc.stopped()) {
        bool more = false;
        for (auto until = clock::now() + busy_poll; !more && !ioc.stopped() && clock::now() < until;)
            more = ioc.poll() > 0;
        if (!more && !ioc.stopped()) ioc.run_one();
    }
}

// The command line's overrides on the configuration; nullopt to go on, else the exit code.
std::optional<int> apply_overrides(config& c, serve_args const& a) {
    if (a.listen) parse_listen(*a.listen, c.server);
    if (a.threads_override) c.server.threads = *a.threads_override;
    if (c.server.busy_poll.count() > 0 && c.server.threads != 1) {
        std::cerr << "airlock serve: server.busy_poll needs one I/O thread: set server.threads: 1 or pass --threads 1 ("
                  << (c.server.threads ? "it is " + std::to_string(c.server.threads) : std::string("the default is one per CPU"))
                  << ")\n";
        return 2;
    }
    return std::nullopt;
}

// What a reload replaces, as it starts.
std::shared_ptr<serving> make_serving(asio::io_context& ioc, serve_args const& a, config const& c) {
    auto sv = std::make_shared<serving>(ioc);
    sv->config_file = a.config_file;
    sv->listen_override = a.listen;
    sv->threads_override = a.threads_override;
    sv->drain_grace = c.server.drain_grace;
    return sv;
}

void adopt_core(serving& sv, service_core const& sc, config const& c) {
    sv.journal = sc.journal;
    sv.instance = sc.owner->id();
    sv.run_tools = sc.run_tools;
    sv.backend = std::make_shared<reloadable_backend>(sc.gw);
    sv.tokens = std::make_shared<token_table>();
    sv.tokens->replace(c);
    sv.current = c;
    sv.clients = sc.clients;
}

mcp_endpoint_options endpoint_options(config const& c, serving const& sv) {
    mcp_endpoint_options eo;
    eo.allowed_hosts = c.server.allowed_hosts;
    eo.allowed_origins = c.server.allowed_origins;
    eo.authenticate = [tokens = sv.tokens](std::string_view presented) { return tokens->find(presented); };
    eo.allow_anonymous = has_anonymous(c);
    eo.input_request_ttl = c.server.input_request_ttl;
    eo.keep_alive_interval = c.server.sse_keep_alive;
    eo.max_sessions = c.server.sessions.max;
    eo.max_sessions_per_principal = c.server.sessions.max_per_principal;
    eo.session_idle_timeout = c.server.sessions.idle_timeout;
    return eo;
}

// The REST API: reads come from the journal; run actions need the agent runtime.
std::shared_ptr<rest_api> make_rest(config const& c, service_core const& sc, serving const& sv,
                                    mcp_endpoint_options const& eo) {
    rest_api_options ro;
    ro.journal = sc.journal;
    ro.authenticate = eo.authenticate;
    ro.oauth = eo.oauth;
    ro.allow_anonymous = eo.allow_anonymous;
    ro.anonymous_principal = [tokens = sv.tokens] { return tokens->anonymous(); };
    ro.is_operator = [tokens = sv.tokens](std::string_view name) { return tokens->is_operator(name); };
    ro.allowed_hosts = c.server.allowed_hosts;
    ro.allowed_origins = c.server.allowed_origins;
    // The gateway in force, after any reload (a replaced one stays alive: the backend keeps it).
    ro.tools = [backend = sv.backend](std::string principal) {
        return backend->current()->async_tools_for(std::move(principal));
    };
    ro.pins = sc.journal;
    ro.pin_accepted = [backend = sv.backend](std::string const& server) { backend->current()->pins_changed(server); };
    std::map<std::string, bool> trusted;
    for (auto const& p : c.principals) trusted[p.name] = p.trusted;
    ro.runs = std::make_shared<runner_control>(sc.runs, std::move(trusted));
    return std::make_shared<rest_api>(std::move(ro));
}

// What /healthz, /readyz, /metrics and the resource metadata read.
std::shared_ptr<ops_state> make_ops(config const& c, std::shared_ptr<serving> const& sv, lifecycle& life,
                                    std::shared_ptr<oauth_parts> oauth) {
    auto ops = std::make_shared<ops_state>();
    ops->metrics = sv->metrics;
    ops->sv = sv;
    ops->life = &life;
    ops->metrics_settings = c.metrics;
    ops->oauth = std::move(oauth);
    return ops;
}

// /v1 to the REST API, the rest to the ops routes (/mcp is the endpoint's, ahead of both).
http_response_handler make_routes(std::shared_ptr<rest_api> rest, std::shared_ptr<ops_state> ops) {
    return [rest, ops](http_request& req) -> asio::awaitable<http_response> {
        auto target = req.target();
        if (rest_api::owns(target.substr(0, target.find('?')))) {
            note_route(req, "/v1");
            co_return co_await rest->async_handle(req);
        }
        co_return co_await ops_route(ops, req);
    };
}

// How the HTTP server refuses: counted, in a body an MCP client can read, never for a probe.
void set_refusals(http_server_options& http_options, request_observer_options const& observer) {
    http_options.on_refused = observe_refusals(observer);
    // An MCP client shows a JSON-RPC error; a 413 or 431 with another body shape reads as garbage.
    http_options.refusal_body = mcp_refusal_body();
    // Probes and scrapes are answered even with every connection taken (a reserved slot; see
    // docs/operations.md): an orchestrator that cannot probe restarts a server that is only busy.
    http_options.served_over_capacity = [](std::string_view target) {
        auto path = target.substr(0, target.find('?'));
        return path == "/healthz" || path == "/readyz" || path == "/metrics";
    };
}

// Gauges whose truth lives elsewhere are read when Prometheus scrapes.
void sample_gauges(airlock_metrics& metrics, http_server& server, std::shared_ptr<mcp_endpoint> const& endpoint,
                   serving const& sv) {
    // The sampler holds the parts it reads weakly: they own the metrics (the gateway and the
    // journal record into them), so owning them back would make a cycle that kept the gateway, the
    // metrics and the journal, its LMDB environment never closed, past the end of the process.
    metrics.on_scrape([&server, weak_endpoint = std::weak_ptr<mcp_endpoint>(endpoint),
                        weak_backend = std::weak_ptr<reloadable_backend>(sv.backend),
                        journal = std::weak_ptr<store::served_journal>(sv.journal)](airlock_metrics& m) {
        auto endpoint = weak_endpoint.lock();
        auto backend = weak_backend.lock();
        if (!endpoint || !backend) return;
        m.active_connections.with({}).set(static_cast<std::int64_t>(server.active_connections()));
        m.active_sessions.with({}).set(static_cast<std::int64_t>(endpoint->session_count()));
        for (auto const& [name, state] : backend->current()->upstream_states())
            m.upstream_up.with({name}).set(state == gateway::upstream_state::up ? 1 : 0);
        // Weak: the journal's commit observer holds the metrics, so a strong hold here would be a cycle.
        auto j = journal.lock();
        if (auto use = j ? j->usage() : std::nullopt) {
            m.journal_map_used.with({}).set(static_cast<std::int64_t>(use->used_bytes));
            m.journal_map_size.with({}).set(static_cast<std::int64_t>(use->map_size));
            m.journal_file_bytes.with({}).set(static_cast<std::int64_t>(use->file_bytes));
        }
    });
}

// How often the pins are read for acceptances made by another process.
constexpr std::chrono::milliseconds pin_watch_interval{1000};

// Held weakly, like the scrape sampler: the backend owns what records into the journal.
std::function<void(std::string const&)> pin_watcher(std::shared_ptr<reloadable_backend> const& backend) {
    return [weak = std::weak_ptr<reloadable_backend>(backend)](std::string const& server) {
        if (auto b = weak.lock()) b->current()->pins_changed(server);
    };
}

// Binds the listener; the address it serves on ("http://127.0.0.1:8787", "unix:/run/airlock.sock"),
// or nullopt after logging why it cannot.
std::optional<std::string> listen_where(http_server& server, http_server_options const& http_options,
                                              mcp_endpoint& endpoint, rest_api& rest) {
    try {
        server.listen();
    } catch (boost::system::system_error const& e) {
        auto at = http_options.unix_socket ? "unix:" + http_options.unix_socket->string()
                                           : http_options.host + ":" + std::to_string(http_options.port);
        if (e.code() == boost::system::errc::address_in_use)
            spdlog::error("cannot listen on {}: the address is in use (another airlock?); stop that process, or pick "
                          "another address with --listen HOST:PORT or server.listen",
                          at);
        else
            spdlog::error("cannot listen on {}: {}", at, e.code().message());
        return std::nullopt;
    }
    std::string where;
    if (http_options.unix_socket) {
        endpoint.listening_on("", 0, true);
        where = "unix:" + http_options.unix_socket->string();
    } else {
        auto ep = server.local_endpoint();
        endpoint.listening_on(http_options.host, ep.port());
        rest.set_door(default_allowed_hosts(http_options.host, ep.port()),
                       default_allowed_origins(http_options.host, ep.port()));
        auto host = ep.address().to_string();
        where = std::string(http_options.tls ? "https://" : "http://") + (ep.address().is_v6() ? "[" + host + "]" : host) +
                ":" + std::to_string(ep.port());
    }
    return where;
}

asio::awaitable<void> async_resume_runs(std::shared_ptr<runner> runs, std::shared_ptr<core::journal_store> journal,
                                        std::shared_ptr<instance_lock> owner) {
    // Runs that cannot resume (unreadable ones) are quarantined first, so the resume skips them.
    co_await async_close_interrupted_runs(std::move(journal), std::move(owner));
    auto resumed = co_await runs->async_resume_all();
    if (!resumed) spdlog::error("cannot resume runs: {}", resumed.error().message);
    else if (*resumed) spdlog::info("resumed {} runs from the journal", *resumed);
}


// What runs beside the server from the start: the issuers' keys, the upstreams, the pin watch,
// the resumed runs and journal.retention. The retention is returned for shutdown to stop.
std::shared_ptr<ops::journal_retention> start_background(asio::any_io_executor exec, config const& c, service_core& sc,
                                                         serving& sv, std::shared_ptr<oauth_parts> const& oauth) {
    // The issuers' keys: readiness waits for them; a token that arrives first is refused (401).
    if (oauth) mcp::spawn_logged(exec, oauth->keys->async_start(), "oauth keys");
    // Capabilities and pins are known sooner when the upstreams are met before the first client.
    mcp::spawn_logged(exec, sc.gw->async_connect_upstreams(), "connect upstreams");
    sc.gw->start_run_upkeep();  // seals gateway runs past their limits or idle, until the stop
    // A pin accepted from another process (airlock pins accept) is served at once.
    mcp::spawn_logged(exec, async_watch_pins(sc.journal, pin_watcher(sv.backend), pin_watch_interval),
                      "pin watch");
    // Agent runs a previous process admitted and did not finish go on from their journals.
    mcp::spawn_logged(exec, async_resume_runs(sc.runs, sc.journal, sc.owner), "resume runs");
    // journal.retention: sealed runs past it are pruned now and then, while serving.
    std::shared_ptr<ops::journal_retention> retention;
    if (c.journal_retention) {
        // journal.retention is refused beside journal.postgres (config/journal.cpp): the journal is LMDB's.
        retention = std::make_shared<ops::journal_retention>(exec, sc.lmdb, *c.journal_retention);
        retention->start();
    }
    return retention;
}

}  // namespace

int run_serve(std::vector<std::string> const& args) {
    serve_args a;
    if (auto exit = parse_serve_args(args, a)) return *exit;
    auto c = load_serving_config(a.config_file);
    if (!c) {
        std::cerr << "airlock serve: " << (a.config_file ? *a.config_file + ": " : "") << c.error().message << "\n";
        return 1;
    }
    apply_logging(*c, a.logging);
    if (auto exit = apply_overrides(*c, a)) return *exit;
    unsigned threads = c->server.threads ? c->server.threads : usable_cpus();

    asio::io_context ioc(static_cast<int>(threads));
    lifecycle life;
    auto sv = make_serving(ioc, a, *c);
    // Watching from before the first listener: a SIGHUP or SIGTERM arriving while airlock starts
    // must not find the default action (which ends the process on the spot).
    std::function<void(int)> on_drain, on_stop_now;
    signal_watcher signals(ioc, signal_actions{[&](int sig) { on_drain(sig); }, [&](int sig) { on_stop_now(sig); },
                                               [&] { request_reload(sv); }});

    auto metrics = std::make_shared<airlock_metrics>();
    sv->metrics = metrics;
    auto sc = build_core(*c, ioc.get_executor(), metrics);
    if (!sc) {
        spdlog::error("cannot start: {}", sc.error().message);
        return 1;
    }
    adopt_core(*sv, *sc, *c);

    // auth.oauth: the doors take access tokens beside the static ones; the keys are fetched below.
    auto oauth = make_oauth(*c, ioc.get_executor(), metrics);
    auto eo = endpoint_options(*c, *sv);
    if (oauth) eo.oauth = oauth->door;
    // Whatever the gateway relays, the client sees no configured secret.
    auto endpoint = std::make_shared<mcp_endpoint>(std::make_shared<redacting_backend>(sv->backend), eo);
    auto http_options = to_http_server_options(c->server);
    auto rest = make_rest(*c, *sc, *sv, eo);
    auto ops = make_ops(*c, sv, life, oauth);
    request_observer_options observer;
    observer.metrics = metrics;
    set_refusals(http_options, observer);
    http_server server(ioc, http_options, observe_requests(make_mcp_handler(endpoint, make_routes(rest, ops)), observer));
    sample_gauges(*metrics, server, endpoint, *sv);
    auto where = listen_where(server, http_options, *endpoint, *rest);
    if (!where) return 1;
    server.start();
    auto retention = start_background(ioc.get_executor(), *c, *sc, *sv, oauth);
    // The line tests and scripts wait for; it names the address actually bound (port 0 → a free one).
    auto const polling =
        c->server.busy_poll.count() > 0 ? ", busy poll: " + std::to_string(c->server.busy_poll.count()) + " us" : std::string();
    spdlog::info("airlock {} listening on {} ({} upstreams, {} principals, journal {}, {} I/O thread{}{})", AIRLOCK_VERSION,
                 *where, c->upstreams.size(), c->principals.size(), journal_location(*c), threads,
                 threads == 1 ? "" : "s", polling);
    if (a.hints.value_or(::isatty(STDOUT_FILENO) == 1)) std::cout << start_hints(*c, *where) << std::flush;

    serve_shutdown stopping({ioc, server, life, sv, endpoint, sc->runs, c->server.drain_grace, oauth ? oauth->keys : nullptr,
                             retention});
    on_drain = [&stopping](int sig) { stopping.drain(sig); };
    on_stop_now = [&stopping](int sig) { stopping.stop_now(sig); };

    std::vector<std::thread> pool;
    for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&] { ioc.run(); });
    run_io(ioc, c->server.busy_poll);
    for (auto& t : pool) t.join();
    signals.cancel();
    // The journal is closed last, and explicitly: work still referencing it when the loop stopped
    // must not find a writer running once the process begins to exit.
    sc->journal->close();
    spdlog::info("airlock stopped");
    return 0;
}

}  // namespace airlock::service
