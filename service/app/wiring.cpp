#include "service/app/wiring.hpp"

#include "mcp/client/http_transport.hpp"
#include "mcp/client/router.hpp"
#include "mcp/client/stdio_transport.hpp"
#include "service/agents/providers/factory.hpp"
#include "service/agents/run_metrics.hpp"
#include "service/ops/log.hpp"
#include "service/ops/metrics.hpp"

#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <charconv>
#include <iostream>
#include <set>

namespace airlock::service {

namespace asio = boost::asio;

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

namespace {

// The configuration with no file: every setting at its default, paths relative to the working directory.
config embedded_defaults() {
    config c;
    c.base_dir = std::filesystem::current_path();
    c.journal.directory = c.base_dir / "var" / "journal";
    return c;
}

}  // namespace

core::result<config> load_serving_config(std::optional<std::string> const& file) {
    if (!file) return embedded_defaults();
    auto c = load_config(*file, process_environment());
    if (!c) return c.error();
    if (auto made = create_missing_secrets(*c); !made) return made.error();
    return c;
}

// Parses --log-format / --log-level at args[i] (advancing i); nullopt when args[i] is neither,
// false after printing the problem.
std::optional<bool> parse_log_flag(std::vector<std::string> const& args, std::size_t& i, log_flags& out,
                                   char const* command) {
    auto const& a = args[i];
    if (a != "--log-format" && a != "--log-level") return std::nullopt;
    if (i + 1 >= args.size()) {
        std::cerr << "airlock " << command << ": " << a << " needs a value\n";
        return false;
    }
    auto const& v = args[++i];
    if (a == "--log-format") {
        out.format = log::parse_format(v);
        if (!out.format) std::cerr << "airlock " << command << ": --log-format: '" << v << "' is not json or text\n";
        return out.format.has_value();
    }
    out.level = log::parse_level(v);
    if (!out.level)
        std::cerr << "airlock " << command << ": --log-level: '" << v << "' is not trace, debug, info, warn or error\n";
    return out.level.has_value();
}

void apply_logging(config const& c, log_flags const& flags) {
    log::install(flags.format.value_or(c.logging.format), flags.level.value_or(c.logging.level));
    register_secrets(c);
    for (auto const& w : c.warnings) spdlog::warn("config: {}", w);
}

std::shared_ptr<mcp::mcp_client> make_upstream_client(upstream_config const& u, core::egress_allowlist const& egress,
                                                      asio::any_io_executor exec) {
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
            ho.allow_address = [egress, scheme = remote->scheme, port = remote->port](asio::ip::address const& a) {
                return mcp::address_permitted(egress, scheme, port, a);
            };
        }
        t = std::make_unique<mcp::http_transport>(exec, std::move(ho));
    }
    return std::make_shared<mcp::mcp_client>(std::move(t), co);
}

// The gateway of a configuration over a journal and the upstreams' clients (clients[i] serves c.upstreams[i]).
core::result<std::shared_ptr<gateway>> make_gateway(config const& c, asio::any_io_executor exec,
                                                    std::shared_ptr<store::served_journal> const& journal,
                                                    std::vector<std::shared_ptr<mcp::mcp_client>> const& clients,
                                                    std::shared_ptr<airlock_metrics> metrics, std::string instance) {
    gateway_options go;
    go.instance = std::move(instance);
    go.metrics = std::move(metrics);
    go.executor = exec;
    go.egress = c.egress;
    go.journal = journal;
    go.list_page_size = c.server.list_page_size;
    go.pins = journal;
    if (c.signing) {
        go.signer = c.signing->signer;
        go.provenance_lifetime = c.signing->lifetime;
    }
    go.server_info = {"airlock", AIRLOCK_VERSION, std::nullopt, std::nullopt};
    for (std::size_t i = 0; i < c.upstreams.size(); ++i) {
        auto const& u = c.upstreams[i];
        // Each upstream's deadline is its client's (call_deadline stays unset).
        go.upstreams.push_back({u.name, clients[i], u.prefix == tool_prefix::server});
    }
    for (auto const& p : c.principals) go.principals.push_back({p.name, p.manifest, p.trusted, p.anonymous});
    if (c.auth.oauth) go.upstream_scopes = c.auth.oauth->upstream_scopes;
    go.run_limits = {c.session_runs.max_age, c.session_runs.max_calls, c.server.sessions.idle_timeout};
    return gateway::make(std::move(go));
}

namespace {

// The configured journal: LMDB at journal.dir, or PostgreSQL at journal.postgres.url. Its owner
// files live beside an LMDB journal, and in var/postgres for a PostgreSQL one (only one airlock
// serves it at a time, postgres_options::exclusive, so they need not be shared across hosts).
core::result<std::filesystem::path> open_journal(config const& c, std::shared_ptr<airlock_metrics> const& metrics,
                                                 service_core& sc) {
    std::function<void(std::size_t, std::chrono::steady_clock::duration)> on_commit;
    if (metrics)
        on_commit = [metrics](std::size_t writes, std::chrono::steady_clock::duration took) {
            metrics->journal_commit(writes, took);
        };
    if (c.journal_postgres) {
        auto o = *c.journal_postgres;
        o.on_commit = std::move(on_commit);
        o.exclusive = true;
        auto opened = store::postgres_store::open(std::move(o));
        if (!opened)
            return core::make_error(opened.error().code, "journal.postgres: " + opened.error().message);
        sc.journal = std::shared_ptr<store::postgres_store>(std::move(*opened));
        return c.base_dir / "var" / "postgres";
    }
    auto journal_options = c.journal;
    journal_options.on_commit = std::move(on_commit);
    auto opened = store::lmdb_store::open(journal_options);
    if (!opened) return opened.error();
    sc.lmdb = std::shared_ptr<store::lmdb_store>(std::move(*opened));
    sc.journal = sc.lmdb;
    return c.journal.directory;
}

}  // namespace

core::result<service_core> build_core(config const& c, asio::any_io_executor exec,
                                      std::shared_ptr<airlock_metrics> metrics) {
    service_core sc;
    auto owners_at = open_journal(c, metrics, sc);
    if (!owners_at) return owners_at.error();
    auto owner = instance_lock::acquire(*owners_at);
    if (!owner) return owner.error();
    sc.owner = std::move(*owner);
    for (auto const& u : c.upstreams) sc.clients.push_back(make_upstream_client(u, c.egress, exec));
    auto g = make_gateway(c, exec, sc.journal, sc.clients, metrics, sc.owner->id());
    if (!g) return g.error();
    sc.gw = *g;
    auto tools = runner_tools::make(c.egress, sc.clients);
    if (!tools) return tools.error();
    sc.run_tools = *tools;
    std::shared_ptr<core::journal_store> run_journal = sc.journal;
    if (metrics) {
        // airlock_runs{status}: counted once from the journal, then moved by each status record.
        std::set<std::string> agents;
        for (auto const& a : c.agents) agents.insert(a.name);
        if (auto counted = count_runs(*sc.journal, agents, *metrics); !counted)
            spdlog::warn("cannot count the journal's runs for airlock_runs: {}", counted.error().message);
        run_journal = std::make_shared<status_counting_journal>(sc.journal, metrics);
        sc.run_tools->count_calls_in(metrics);
    }
    runner_parts parts{exec, run_journal, sc.clients, {}, sc.run_tools};
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

asio::awaitable<void> async_close_interrupted_runs(std::shared_ptr<core::journal_store> journal,
                                                   std::shared_ptr<instance_lock> owner) {
    auto alive = [owner](std::string_view id) { return owner->alive(id); };
    try {
        auto sealed = co_await async_seal_interrupted_sessions(std::move(journal), std::move(alive));
        if (!sealed) spdlog::error("cannot close interrupted runs: {}", sealed.error().message);
        else if (*sealed) spdlog::info("sealed {} runs an earlier airlock left open", *sealed);
        owner->sweep();
    } catch (std::exception const& e) {
        spdlog::error("closing interrupted runs ended by an internal error: {}", e.what());
    }
}

asio::awaitable<void> async_close_upstreams(std::vector<std::shared_ptr<mcp::mcp_client>> clients) {
    if (clients.empty()) co_return;
    // One strand for the group's bookkeeping: the loop may run on several threads.
    auto strand = asio::make_strand(co_await asio::this_coro::executor);
    using close_op = decltype(asio::co_spawn(strand, std::declval<asio::awaitable<void>>(), asio::deferred));
    std::vector<close_op> closes;
    for (auto const& c : clients) closes.push_back(asio::co_spawn(strand, c->async_close(), asio::deferred));
    auto all = asio::experimental::make_parallel_group(std::move(closes));
    auto [order, failures] = co_await all.async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
    for (auto const& e : failures) {
        if (!e) continue;
        try {
            std::rethrow_exception(e);
        } catch (std::exception const& ex) {
            spdlog::error("closing an upstream ended by an internal error: {}", ex.what());
        }
    }
}

}  // namespace airlock::service
