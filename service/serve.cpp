#include "service/serve.hpp"

#include "mcp/http_transport.hpp"
#include "mcp/router.hpp"
#include "mcp/stdio_transport.hpp"
#include "service/config.hpp"
#include "service/gateway.hpp"
#include "service/http_server.hpp"
#include "service/mcp_endpoint.hpp"
#include "service/rest_api.hpp"
#include "service/providers/factory.hpp"
#include "service/runner_control.hpp"
#include "service/runner_factory.hpp"
#include "service/stdio_endpoint.hpp"
#include "store/lmdb_store.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <functional>
#include <iostream>
#include <thread>

namespace airlock::service {

namespace asio = boost::asio;

namespace {

constexpr char serve_usage[] =
    "usage: airlock serve [--config FILE] [--listen HOST:PORT] [--threads N]\n"
    "  --config FILE        configuration (docs/configuration.md); without it, the embedded defaults:\n"
    "                       127.0.0.1:8787, journal in var/journal, no upstreams, no principals\n"
    "  --listen HOST:PORT   overrides server.listen (port 0 picks a free one)\n"
    "  --threads N          overrides server.threads\n";

constexpr char replay_usage[] =
    "usage: airlock replay --config FILE RUN\n"
    "  re-runs RUN from the journal alone (no model or tool calls) with the configured agents, and\n"
    "  prints its status and output; exit 1 when the current manifest or code would act differently\n";

constexpr char stdio_usage[] =
    "usage: airlock stdio --config FILE [--principal NAME]\n"
    "  serves one MCP client on stdin/stdout as NAME (default: the only principal in the file)\n";

bool parse_listen(std::string const& text, server_config& s) {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) return false;
    std::string host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    unsigned port = 0;
    auto ptext = std::string_view(text).substr(colon + 1);
    auto [p, ec] = std::from_chars(ptext.data(), ptext.data() + ptext.size(), port);
    if (ec != std::errc{} || p != ptext.data() + ptext.size() || port > 65535 || host.empty()) return false;
    s.host = host;
    s.port = static_cast<std::uint16_t>(port);
    s.unix_socket.reset();
    return true;
}

// The configuration with no file: every setting at its default, paths relative to the working directory.
config embedded_defaults() {
    config c;
    c.base_dir = std::filesystem::current_path();
    c.journal.directory = c.base_dir / "var" / "journal";
    return c;
}

core::result<config> load(std::optional<std::string> const& file) {
    if (!file) return embedded_defaults();
    auto c = load_config(*file, process_environment());
    if (!c) return c.error();
    if (auto made = create_missing_secrets(*c); !made) return made.error();
    for (auto const& w : c->warnings) spdlog::warn("config: {}", w);
    return c;
}

void apply_logging(logging_config const& l) {
    switch (l.level) {
        case log_level::trace: spdlog::set_level(spdlog::level::trace); break;
        case log_level::debug: spdlog::set_level(spdlog::level::debug); break;
        case log_level::info: spdlog::set_level(spdlog::level::info); break;
        case log_level::warn: spdlog::set_level(spdlog::level::warn); break;
        case log_level::error: spdlog::set_level(spdlog::level::err); break;
    }
}

// Everything that serves MCP, built from a configuration: journal, upstream clients, gateway.
struct service_core {
    std::shared_ptr<store::lmdb_store> journal;
    std::vector<std::shared_ptr<mcp::mcp_client>> clients;
    std::shared_ptr<gateway> gw;
    std::shared_ptr<runner> runs;  // the configured agents (REST /v1/runs, airlock replay)
};

core::result<service_core> build_core(config const& c, asio::any_io_executor exec) {
    service_core sc;
    auto opened = store::lmdb_store::open(c.journal);
    if (!opened) return opened.error();
    sc.journal = std::shared_ptr<store::lmdb_store>(std::move(*opened));

    gateway_options go;
    go.executor = exec;
    go.egress = c.egress;
    go.journal = sc.journal;
    go.list_page_size = c.server.list_page_size;
    go.pins = sc.journal;
    if (c.signing) {
        go.signer = c.signing->signer;
        go.provenance_lifetime = c.signing->lifetime;
    }
    go.server_info = {"airlock", AIRLOCK_VERSION, std::nullopt, std::nullopt};
    for (auto const& u : c.upstreams) {
        mcp::client_options co;
        co.server_name = u.name;
        co.call_deadline = u.deadline;
        co.client_info = {"airlock", AIRLOCK_VERSION, std::nullopt, std::nullopt};
        // airlock relays these server→client requests to its own clients (gateway.hpp says how);
        // a client that lacks one answers it with an error, as the spec has it. roots is not
        // declared: servers ask for it unprompted at start, when no client request could carry it.
        co.capabilities = {{"sampling", boost::json::object{}}, {"elicitation", boost::json::object{}}};
        std::unique_ptr<mcp::transport> t;
        if (u.kind == upstream_kind::stdio) {
            co.kind = mcp::transport_kind::stdio;
            t = std::make_unique<mcp::stdio_transport>(exec, u.stdio);
        } else {
            co.kind = mcp::transport_kind::http;
            auto ho = u.http;
            // Resolve once, refuse internal addresses unless that exact destination is granted,
            // and connect only to the address that was checked.
            auto const* remote = std::get_if<core::remote_destination>(&u.destination);
            if (remote) {
                ho.allow_address = [egress = c.egress, scheme = remote->scheme,
                                    port = remote->port](asio::ip::address const& a) {
                    return mcp::address_permitted(egress, scheme, port, a);
                };
            }
            t = std::make_unique<mcp::http_transport>(exec, std::move(ho));
        }
        auto client = std::make_shared<mcp::mcp_client>(std::move(t), co);
        sc.clients.push_back(client);
        go.upstreams.push_back({u.name, client, u.prefix == tool_prefix::server});
        go.call_deadline = std::max(go.call_deadline, u.deadline);
    }
    for (auto const& p : c.principals) go.principals.push_back({p.name, p.manifest, p.trusted, p.anonymous});
    auto g = gateway::make(std::move(go));
    if (!g) return g.error();
    sc.gw = *g;
    runner_parts parts{exec, sc.journal, sc.clients, {}};
    for (auto const& pc : c.providers) {
        auto p = providers::make_provider(exec, pc, c.egress);
        if (!p) return p.error();
        parts.providers[pc.name] = *p;
    }
    auto r = make_runner(c, std::move(parts));
    if (!r) return r.error();
    sc.runs = *r;
    return sc;
}

// Bearer tokens compared in constant time: digests of equal length, so neither content nor length
// leaks through timing.
std::function<std::optional<std::string>(std::string_view)> token_authenticator(config const& c) {
    std::vector<std::pair<core::sha256_digest, std::string>> tokens;
    for (auto const& p : c.principals)
        if (!p.token.empty()) tokens.emplace_back(core::sha256(p.token), p.name);
    return [tokens = std::move(tokens)](std::string_view presented) -> std::optional<std::string> {
        auto d = core::sha256(presented);
        std::optional<std::string> who;
        for (auto const& [digest, name] : tokens)
            if (CRYPTO_memcmp(digest.data(), d.data(), d.size()) == 0) who = name;
        return who;
    };
}

asio::awaitable<http_response> fallback_route(http_request& req) {
    auto target = req.target();
    auto path = target.substr(0, target.find('?'));
    if (path == "/healthz") {
        if (req.method() != http::verb::get && req.method() != http::verb::head)
            co_return json_error(http::status::method_not_allowed, "method_not_allowed", "use GET");
        co_return json_response(http::status::ok, R"({"status":"ok"})", req.version());
    }
    co_return json_error(http::status::not_found, "not_found", "no route for " + std::string(path), req.version());
}

asio::awaitable<void> async_resume_runs(std::shared_ptr<runner> runs) {
    auto resumed = co_await runs->async_resume_all();
    if (!resumed) spdlog::error("cannot resume runs: {}", resumed.error().message);
    else if (*resumed) spdlog::info("resumed {} runs from the journal", *resumed);
}

void close_clients(asio::io_context& ioc, std::vector<std::shared_ptr<mcp::mcp_client>> const& clients) {
    for (auto const& c : clients) asio::co_spawn(ioc, c->async_close(), asio::detached);
}

}  // namespace

int run_serve(std::vector<std::string> const& args) {
    std::optional<std::string> config_file, listen;
    std::optional<unsigned> threads_override;
    for (std::size_t i = 0; i < args.size(); ++i) {
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
            config_file = *v;
        } else if (a == "--listen") {
            auto v = value("--listen");
            if (!v) return 2;
            listen = *v;
        } else if (a == "--threads") {
            auto v = value("--threads");
            if (!v) return 2;
            unsigned n = 0;
            auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
            if (ec != std::errc{} || p != v->data() + v->size() || n == 0 || n > 256) {
                std::cerr << "airlock serve: --threads: '" << *v << "' is not a number from 1 to 256\n";
                return 2;
            }
            threads_override = n;
        } else {
            std::cerr << "airlock serve: unknown option '" << a << "'\n" << serve_usage;
            return 2;
        }
    }
    server_config probe;
    if (listen && !parse_listen(*listen, probe)) {
        std::cerr << "airlock serve: --listen: '" << *listen << "' is not HOST:PORT\n";
        return 2;
    }
    auto c = load(config_file);
    if (!c) {
        std::cerr << "airlock serve: " << (config_file ? *config_file + ": " : "") << c.error().message << "\n";
        return 1;
    }
    apply_logging(c->logging);
    if (listen) parse_listen(*listen, c->server);
    if (threads_override) c->server.threads = *threads_override;
    unsigned threads = c->server.threads ? c->server.threads : std::max(1u, std::thread::hardware_concurrency());

    asio::io_context ioc(static_cast<int>(threads));
    auto sc = build_core(*c, ioc.get_executor());
    if (!sc) {
        spdlog::error("cannot start: {}", sc.error().message);
        return 1;
    }
    mcp_endpoint_options eo;
    eo.allowed_hosts = c->server.allowed_hosts;
    eo.allowed_origins = c->server.allowed_origins;
    eo.input_request_ttl = c->server.input_request_ttl;
    eo.authenticate = token_authenticator(*c);
    for (auto const& p : c->principals) eo.allow_anonymous = eo.allow_anonymous || p.anonymous;
    auto endpoint = std::make_shared<mcp_endpoint>(sc->gw, eo);
    auto http_options = to_http_server_options(c->server);
    // The REST API: reads come from the journal; run actions need the agent runtime.
    rest_api_options ro;
    ro.journal = sc->journal;
    ro.authenticate = eo.authenticate;
    ro.allow_anonymous = eo.allow_anonymous;
    ro.allowed_hosts = c->server.allowed_hosts;
    ro.allowed_origins = c->server.allowed_origins;
    ro.tools = [gw = sc->gw](std::string principal) { return gw->async_tools_for(std::move(principal)); };
    std::map<std::string, bool> trusted;
    for (auto const& p : c->principals) trusted[p.name] = p.trusted;
    ro.runs = std::make_shared<runner_control>(sc->runs, std::move(trusted));
    auto rest = std::make_shared<rest_api>(std::move(ro));
    http_response_handler routes = [rest](http_request& req) -> asio::awaitable<http_response> {
        auto target = req.target();
        if (rest_api::owns(target.substr(0, target.find('?')))) co_return co_await rest->async_handle(req);
        co_return co_await fallback_route(req);
    };
    http_server server(ioc, http_options, make_mcp_handler(endpoint, routes));
    try {
        server.listen();
    } catch (boost::system::system_error const& e) {
        spdlog::error("cannot listen: {}", e.what());
        return 1;
    }
    std::string where;
    if (http_options.unix_socket) {
        endpoint->listening_on("", 0, true);
        where = "unix:" + http_options.unix_socket->string();
    } else {
        auto ep = server.local_endpoint();
        endpoint->listening_on(http_options.host, ep.port());
        rest->set_door(default_allowed_hosts(http_options.host, ep.port()),
                       default_allowed_origins(http_options.host, ep.port()));
        auto host = ep.address().to_string();
        where = std::string(http_options.tls ? "https://" : "http://") + (ep.address().is_v6() ? "[" + host + "]" : host) +
                ":" + std::to_string(ep.port());
    }
    server.start();
    // Capabilities and pins are known sooner when the upstreams are met before the first client.
    asio::co_spawn(ioc, sc->gw->async_connect_upstreams(), asio::detached);
    // Agent runs a previous process admitted and did not finish go on from their journals.
    asio::co_spawn(ioc, async_resume_runs(sc->runs), asio::detached);
    // The line tests and scripts wait for; it names the address actually bound (port 0 → a free one).
    spdlog::info("airlock {} listening on {} ({} upstreams, {} principals, journal {})", AIRLOCK_VERSION, where,
                 c->upstreams.size(), c->principals.size(), c->journal.directory.string());

    asio::signal_set signals(ioc, SIGINT, SIGTERM);
    auto grace = c->server.drain_grace;
    signals.async_wait([&](boost::system::error_code const& ec, int sig) {
        if (ec) return;
        spdlog::info("signal {} received: draining (grace {} ms)", sig, grace.count());
        endpoint->shutdown();
        sc->runs->stop();
        server.stop();
        close_clients(ioc, sc->clients);
        // In-flight requests get the grace period; the loop ends as soon as the last connection is
        // gone, or when the grace period runs out, whichever comes first.
        auto deadline = std::chrono::steady_clock::now() + grace;
        auto timer = std::make_shared<asio::steady_timer>(ioc);
        auto check = std::make_shared<std::function<void()>>();
        *check = [&ioc, &server, timer, deadline, check] {
            if (server.active_connections() == 0 || std::chrono::steady_clock::now() >= deadline) {
                // A moment for upstream children to be stopped by close_clients.
                timer->expires_after(std::chrono::milliseconds(300));
                timer->async_wait([&ioc](boost::system::error_code const&) { ioc.stop(); });
                *check = nullptr;  // break the self-reference
                return;
            }
            timer->expires_after(std::chrono::milliseconds(20));
            timer->async_wait([check](boost::system::error_code const&) {
                if (*check) (*check)();
            });
        };
        (*check)();
    });

    std::vector<std::thread> pool;
    for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&] { ioc.run(); });
    ioc.run();
    for (auto& t : pool) t.join();
    // The journal is closed last, and explicitly: work still referencing it when the loop stopped
    // must not find a writer running once the process begins to exit.
    sc->journal->close();
    spdlog::info("airlock stopped");
    return 0;
}

int run_stdio(std::vector<std::string> const& args) {
    std::optional<std::string> config_file, principal;
    for (std::size_t i = 0; i < args.size(); ++i) {
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
    auto c = load(config_file);
    if (!c) {
        std::cerr << "airlock stdio: " << *config_file << ": " << c.error().message << "\n";
        return 1;
    }
    apply_logging(c->logging);
    if (!principal) {
        if (c->principals.size() != 1) {
            std::cerr << "airlock stdio: --principal is required when the configuration has "
                      << c->principals.size() << " principals\n";
            return 2;
        }
        principal = c->principals.front().name;
    } else {
        bool known = false;
        for (auto const& p : c->principals) known = known || p.name == *principal;
        if (!known) {
            std::cerr << "airlock stdio: --principal: no principal '" << *principal << "' in the configuration\n";
            return 2;
        }
    }
    asio::io_context ioc;
    auto sc = build_core(*c, ioc.get_executor());
    if (!sc) {
        spdlog::error("cannot start: {}", sc.error().message);
        return 1;
    }
    stdio_endpoint_options so;
    so.principal = *principal;
    auto task = [&]() -> asio::awaitable<void> {
        co_await async_serve_stdio(sc->gw, so);
        for (auto const& client : sc->clients) co_await client->async_close();
    };
    auto done = asio::co_spawn(ioc, task(), asio::use_future);
    ioc.run();
    sc->journal->close();
    try {
        done.get();
    } catch (std::exception const& e) {
        spdlog::error("stdio session ended by an internal error: {}", e.what());
        return 1;
    }
    return 0;
}

int run_replay(std::vector<std::string> const& args) {
    std::optional<std::string> config_file, run;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << replay_usage;
            return 0;
        }
        if (a == "--config" && i + 1 < args.size()) config_file = args[++i];
        else if (!a.starts_with("-") && !run) run = a;
        else {
            std::cerr << "airlock replay: unknown or incomplete option '" << a << "'\n" << replay_usage;
            return 2;
        }
    }
    if (!config_file || !run) {
        std::cerr << "airlock replay: --config and RUN are required\n" << replay_usage;
        return 2;
    }
    // Not load(): a replay creates no key or token that is missing.
    auto c = load_config(*config_file, process_environment());
    if (!c) {
        std::cerr << "airlock replay: " << *config_file << ": " << c.error().message << "\n";
        return 1;
    }
    apply_logging(c->logging);
    asio::io_context ioc;
    auto sc = build_core(*c, ioc.get_executor());
    if (!sc) {
        std::cerr << "airlock replay: " << sc.error().message << "\n";
        return 1;
    }
    auto done = asio::co_spawn(ioc, sc->runs->async_replay(*run), asio::use_future);
    ioc.run();
    sc->journal->close();
    auto r = done.get();
    if (!r) {
        std::cerr << "airlock replay: " << r.error().code << ": " << r.error().message << "\n";
        return 1;
    }
    std::cout << "run " << *run << ": replayed " << r->records << " records from the journal alone (" << r->model_calls
              << " model calls, " << r->tool_calls << " tool calls)\n"
              << "status: " << core::to_string(r->status) << "\n";
    if (!r->reason.empty()) std::cout << "reason: " << r->reason << "\n";
    std::cout << "output: " << boost::json::serialize(r->output) << "\n";
    return 0;
}

}  // namespace airlock::service
