#include "service/app/serve.hpp"

#include "mcp/client/http_transport.hpp"
#include "mcp/client/router.hpp"
#include "mcp/client/stdio_transport.hpp"
#include "service/config/config.hpp"
#include "service/app/server_options.hpp"
#include "service/app/cpus.hpp"
#include "service/gateway/gateway.hpp"
#include "service/ops/health.hpp"
#include "service/http/http_server.hpp"
#include "service/app/lifecycle.hpp"
#include "service/ops/log.hpp"
#include "service/mcp/streamable_http_endpoint.hpp"
#include "service/ops/hints.hpp"
#include "service/ops/metrics.hpp"
#include "service/agents/run_metrics.hpp"
#include "service/gateway/redacting_backend.hpp"
#include "service/gateway/reloadable_backend.hpp"
#include "service/ops/request_observer.hpp"
#include "service/rest/rest_api.hpp"
#include "service/agents/providers/factory.hpp"
#include "service/rest/runner_control.hpp"
#include "service/agents/runner_factory.hpp"
#include "service/app/signals.hpp"
#include "service/mcp/stdio_endpoint.hpp"
#include "store/lmdb_store.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <functional>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

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

constexpr char replay_usage[] =
    "usage: airlock replay --config FILE RUN\n"
    "  re-runs RUN from the journal alone (no model or tool calls) with the configured agents, and\n"
    "  prints its status and output; exit 1 when the current manifest or code would act differently\n";

constexpr char stdio_usage[] =
    "usage: airlock stdio --config FILE [--principal NAME] [--log-format json|text] [--log-level LEVEL]\n"
    "  serves one MCP client on stdin/stdout as NAME (default: the only principal in the file)\n"
    "  until end of input or SIGTERM/SIGINT; logs go to stderr\n";

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

}  // namespace

core::result<config> load_serving_config(std::optional<std::string> const& file) {
    if (!file) return embedded_defaults();
    auto c = load_config(*file, process_environment());
    if (!c) return c.error();
    if (auto made = create_missing_secrets(*c); !made) return made.error();
    return c;
}

namespace {

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

}  // namespace

// The configuration's logging with the flags on top, installed before anything is logged; every
// secret the configuration holds is redacted from then on.
void apply_logging(config const& c, log_flags const& flags) {
    log::install(flags.format.value_or(c.logging.format), flags.level.value_or(c.logging.level));
    register_secrets(c);
    for (auto const& w : c.warnings) spdlog::warn("config: {}", w);
}

namespace {

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

// An upstream whose client a reload can keep: everything the client was built from is unchanged
// (the egress list too, for HTTP upstreams, whose address check holds a copy of it).
bool same_client(upstream_config const& a, core::egress_allowlist const& ea, upstream_config const& b,
                 core::egress_allowlist const& eb) {
    if (a.name != b.name || a.kind != b.kind || a.deadline != b.deadline || !(a.destination == b.destination)) return false;
    if (a.kind == upstream_kind::stdio)
        return a.stdio.argv == b.stdio.argv && a.stdio.env == b.stdio.env && a.stdio.cwd == b.stdio.cwd &&
               a.stdio.max_message_bytes == b.stdio.max_message_bytes;
    return a.http.url == b.http.url && a.http.headers == b.http.headers && a.http.verify_peer == b.http.verify_peer &&
           a.http.ca_file == b.http.ca_file && ea.entries() == eb.entries();
}

// The gateway of a configuration over a journal and the upstreams' clients (clients[i] serves c.upstreams[i]).
core::result<std::shared_ptr<gateway>> make_gateway(config const& c, asio::any_io_executor exec,
                                                    std::shared_ptr<store::lmdb_store> const& journal,
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
    return gateway::make(std::move(go));
}

}  // namespace

core::result<service_core> build_core(config const& c, asio::any_io_executor exec,
                                      std::shared_ptr<airlock_metrics> metrics) {
    service_core sc;
    auto journal_options = c.journal;
    if (metrics)
        journal_options.on_commit = [metrics](std::size_t writes, std::chrono::steady_clock::duration took) {
            metrics->journal_commit(writes, took);
        };
    auto opened = store::lmdb_store::open(journal_options);
    if (!opened) return opened.error();
    sc.journal = std::shared_ptr<store::lmdb_store>(std::move(*opened));
    auto owner = instance_lock::acquire(c.journal.directory);
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

namespace {

// Bearer tokens compared in constant time: digests of equal length, so neither content nor length
// leaks through timing. A reload replaces the whole table at once.
class token_table {
public:
    void replace(config const& c) {
        std::vector<std::pair<core::sha256_digest, std::string>> tokens;
        std::set<std::string, std::less<>> operators;
        std::string anonymous;
        for (auto const& p : c.principals) {
            if (!p.token.empty()) tokens.emplace_back(core::sha256(p.token), p.name);
            if (p.is_operator) operators.insert(p.name);
            if (p.anonymous) anonymous = p.name;
        }
        std::lock_guard lock(mutex_);
        tokens_ = std::move(tokens);
        operators_ = std::move(operators);
        anonymous_ = std::move(anonymous);
    }
    bool is_operator(std::string_view name) const {
        std::lock_guard lock(mutex_);
        return operators_.contains(name);
    }
    std::string anonymous() const {
        std::lock_guard lock(mutex_);
        return anonymous_;
    }
    std::optional<std::string> find(std::string_view presented) const {
        auto d = core::sha256(presented);
        std::optional<std::string> who;
        std::lock_guard lock(mutex_);
        for (auto const& [digest, name] : tokens_)
            if (CRYPTO_memcmp(digest.data(), d.data(), d.size()) == 0) who = name;
        return who;
    }

private:
    mutable std::mutex mutex_;
    std::vector<std::pair<core::sha256_digest, std::string>> tokens_;
    std::set<std::string, std::less<>> operators_;  // principals[].operator, by name
    std::string anonymous_;                         // the anonymous principal's name, if any
};

bool has_anonymous(config const& c) {
    return std::any_of(c.principals.begin(), c.principals.end(), [](auto const& p) { return p.anonymous; });
}

// Settings a reload cannot change on a running server: they wait for the next restart.
std::vector<std::string> restart_only_changes(config const& before, config const& after) {
    std::vector<std::string> out;
    auto const &a = before.server, &b = after.server;
    if (a.host != b.host || a.port != b.port || a.unix_socket != b.unix_socket || a.unix_socket_mode != b.unix_socket_mode)
        out.push_back("server.listen/unix_socket");
    if (a.tls.has_value() != b.tls.has_value() ||
        (a.tls && (a.tls->cert_file != b.tls->cert_file || a.tls->key_file != b.tls->key_file)))
        out.push_back("server.tls");
    if (a.threads != b.threads) out.push_back("server.threads");
    if (a.busy_poll != b.busy_poll) out.push_back("server.busy_poll");
    if (a.header_limit != b.header_limit || a.body_limit != b.body_limit || a.read_timeout != b.read_timeout ||
        a.idle_timeout != b.idle_timeout || a.max_connections != b.max_connections ||
        a.max_connections_per_client != b.max_connections_per_client)
        out.push_back("server limits and timeouts");
    if (a.allowed_hosts != b.allowed_hosts || a.allowed_origins != b.allowed_origins) out.push_back("server.allowed_hosts/allowed_origins");
    if (a.trusted_proxies != b.trusted_proxies || a.forwarded_header != b.forwarded_header)
        out.push_back("server.trusted_proxies/forwarded_header");
    if (a.sse_keep_alive != b.sse_keep_alive) out.push_back("server.sse_keep_alive");
    if (a.list_page_size != b.list_page_size) out.push_back("server.list_page_size");
    if (a.input_request_ttl != b.input_request_ttl) out.push_back("server.input_request_ttl");
    if (a.sessions != b.sessions) out.push_back("server.sessions");
    if (before.journal.directory != after.journal.directory || before.journal.map_size != after.journal.map_size)
        out.push_back("journal");
    if (before.logging.format != after.logging.format) out.push_back("logging.format");
    // Agent runs under way hold their manifest and provider: both change at the next start, so a
    // run never continues under a manifest it was not admitted with.
    auto agents_of = [](config const& c) {
        std::vector<std::string> v;
        for (auto const& a : c.agents)
            v.push_back(a.name + " " + a.manifest.digest + " " + a.script_file.value_or("").string() + " " +
                        a.provider.value_or(""));
        return v;
    };
    if (agents_of(before) != agents_of(after)) out.push_back("agents");
    auto providers_of = [](config const& c) {
        std::vector<std::tuple<std::string, int, std::string, std::string, std::string, std::string>> v;
        for (auto const& p : c.providers)
            v.emplace_back(p.name, static_cast<int>(p.kind), p.base_url, p.model, p.api_key,
                           p.script.value_or("").string());
        return v;
    };
    if (providers_of(before) != providers_of(after)) out.push_back("providers");
    if (before.runs.max_concurrent_runs != after.runs.max_concurrent_runs) out.push_back("runs.max_concurrent_runs");
    return out;
}

// The tool lists two gateways show a principal are the same (names and definitions).
bool same_tools(std::vector<boost::json::object> a, std::vector<boost::json::object> b) {
    auto texts = [](std::vector<boost::json::object> const& v) {
        std::vector<std::string> out;
        for (auto const& t : v) out.push_back(boost::json::serialize(t));
        std::sort(out.begin(), out.end());
        return out;
    };
    return texts(a) == texts(b);
}

// What `airlock serve` runs on, and what a SIGHUP reload replaces.
struct serving {
    asio::io_context& ioc;
    std::optional<std::string> config_file;
    std::optional<std::string> listen_override;
    std::optional<unsigned> threads_override;
    std::shared_ptr<store::lmdb_store> journal;
    std::string instance;  // the gateway's instance id (service_core::owner)
    std::shared_ptr<reloadable_backend> backend;
    std::shared_ptr<token_table> tokens;
    std::shared_ptr<airlock_metrics> metrics;
    std::shared_ptr<runner_tools> run_tools;
    std::chrono::milliseconds drain_grace{};

    std::mutex mutex;
    config current;                                          // the configuration in force
    std::vector<std::shared_ptr<mcp::mcp_client>> clients;  // clients[i] serves current.upstreams[i]
    std::vector<std::shared_ptr<mcp::mcp_client>> retiring;  // replaced by a reload, closed after drain_grace
    bool reloading = false;
    bool reload_again = false;

    explicit serving(asio::io_context& i) : ioc(i) {}

    // Every client with an upstream that may still run: those in use and those being retired.
    std::vector<std::shared_ptr<mcp::mcp_client>> all_clients() {
        std::lock_guard lock(mutex);
        auto all = clients;
        all.insert(all.end(), retiring.begin(), retiring.end());
        return all;
    }
};

// Closes clients a reload no longer uses once calls in flight on them have had the grace period.
asio::awaitable<void> async_retire_clients(std::shared_ptr<serving> sv, std::vector<std::shared_ptr<mcp::mcp_client>> retired) {
    asio::steady_timer t(co_await asio::this_coro::executor, sv->drain_grace);
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    co_await async_close_upstreams(retired);
    std::lock_guard lock(sv->mutex);
    std::erase_if(sv->retiring, [&](auto const& c) { return std::find(retired.begin(), retired.end(), c) != retired.end(); });
}

// One reload: the file is read and checked whole; only a configuration that loads and builds
// replaces the running one. Upstreams whose settings did not change keep their client (a stdio
// child keeps running, sessions with it stay). Then every principal with an open notification
// stream whose tool list changed gets notifications/tools/list_changed.
asio::awaitable<void> async_reload_once(std::shared_ptr<serving> sv) {
    if (!sv->config_file) {
        spdlog::warn("reload: airlock runs on its embedded defaults (no --config); nothing to reload");
        co_return;
    }
    spdlog::info("reload: reading {}", *sv->config_file);
    auto next = load_serving_config(sv->config_file);
    if (!next) {
        spdlog::error("reload refused, the running configuration stays: {}: {}", *sv->config_file, next.error().message);
        co_return;
    }
    // Hidden from here on, before anything of the new configuration runs: a value once configured
    // stays hidden even if the reload is refused.
    register_secrets(*next);
    if (sv->listen_override) parse_listen(*sv->listen_override, next->server);
    config before;
    std::vector<std::shared_ptr<mcp::mcp_client>> old_clients;
    {
        std::lock_guard lock(sv->mutex);
        before = sv->current;
        old_clients = sv->clients;
    }
    if (has_anonymous(before) != has_anonymous(*next)) {
        spdlog::error("reload refused, the running configuration stays: adding or removing the anonymous principal "
                      "changes who is let in without a token, and needs a restart");
        co_return;
    }
    if (sv->threads_override) next->server.threads = *sv->threads_override;
    auto exec = sv->ioc.get_executor();
    std::vector<std::shared_ptr<mcp::mcp_client>> clients;
    std::vector<bool> kept(old_clients.size(), false);
    std::size_t added = 0;
    for (auto const& u : next->upstreams) {
        std::shared_ptr<mcp::mcp_client> reuse;
        for (std::size_t i = 0; i < before.upstreams.size(); ++i) {
            if (!kept[i] && same_client(before.upstreams[i], before.egress, u, next->egress)) {
                reuse = old_clients[i];
                kept[i] = true;
                break;
            }
        }
        if (!reuse) {
            reuse = make_upstream_client(u, next->egress, exec);
            ++added;
        }
        clients.push_back(reuse);
    }
    auto gw = make_gateway(*next, exec, sv->journal, clients, sv->metrics, sv->instance);
    if (!gw) {
        spdlog::error("reload refused, the running configuration stays: {}", gw.error().message);
        std::vector<std::shared_ptr<mcp::mcp_client>> fresh;
        for (auto const& client : clients)
            if (std::find(old_clients.begin(), old_clients.end(), client) == old_clients.end()) fresh.push_back(client);
        co_await async_close_upstreams(std::move(fresh));
        co_return;
    }
    std::vector<std::shared_ptr<mcp::mcp_client>> retired;
    for (std::size_t i = 0; i < old_clients.size(); ++i)
        if (!kept[i]) retired.push_back(old_clients[i]);

    for (auto const& what : restart_only_changes(before, *next))
        spdlog::warn("reload: {} changed; that takes effect at the next restart", what);
    // Agent runs call tools through the new upstreams from their next call on.
    if (auto replaced = sv->run_tools->replace(next->egress, clients); !replaced)
        spdlog::error("reload: agent runs keep the previous upstreams: {}", replaced.error().message);
    sv->tokens->replace(*next);
    auto previous = sv->backend->replace(*gw);
    // The format stays as it started (a collector parses it); the level follows the file.
    log::set_level(next->logging.level);
    {
        std::lock_guard lock(sv->mutex);
        // Settings that wait for a restart stay as they run, so the next reload compares with those.
        auto server = sv->current.server;
        auto journal = sv->current.journal;
        auto format = sv->current.logging.format;
        sv->current = *next;
        sv->current.server = server;
        sv->current.journal = journal;
        sv->current.logging.format = format;
        sv->clients = clients;
        sv->retiring.insert(sv->retiring.end(), retired.begin(), retired.end());
    }
    spdlog::info("reload: done ({} upstreams, {} new or changed, {} removed; {} principals)", next->upstreams.size(),
                 added, retired.size(), next->principals.size());
    if (!retired.empty()) {
        auto task = async_retire_clients(sv, std::move(retired));
        asio::co_spawn(exec, std::move(task), asio::detached);
    }
    // Startup meets the upstreams before the first client; a reload does so for the new ones.
    co_await (*gw)->async_connect_upstreams();

    std::size_t streams = 0;
    auto principals = sv->backend->listening_principals();
    for (auto const& principal : principals) {
        auto was = co_await previous->async_tools_for(principal);
        auto now = co_await (*gw)->async_tools_for(principal);
        if (same_tools(std::move(was), std::move(now))) continue;
        mcp::notification changed{"notifications/tools/list_changed", std::nullopt};
        streams += sv->backend->notify(principal, changed);
    }
    if (streams) spdlog::info("reload: tools/list_changed sent on {} notification streams", streams);
}

// Reloads one at a time: a SIGHUP during a reload runs one more after it, with the file as it is then.
asio::awaitable<void> async_reload(std::shared_ptr<serving> sv) {
    for (;;) {
        try {
            co_await async_reload_once(sv);
        } catch (std::exception const& e) {
            spdlog::error("reload failed: {}", e.what());
        }
        std::lock_guard lock(sv->mutex);
        if (!sv->reload_again) {
            sv->reloading = false;
            co_return;
        }
        sv->reload_again = false;
    }
}

void request_reload(std::shared_ptr<serving> const& sv) {
    {
        std::lock_guard lock(sv->mutex);
        if (sv->reloading) {
            sv->reload_again = true;
            spdlog::info("reload: SIGHUP during a reload; reloading again after it");
            return;
        }
        sv->reloading = true;
    }
    asio::co_spawn(asio::make_strand(sv->ioc), async_reload(sv), asio::detached);
}

// What /readyz and /metrics read: the service's parts, shared with the routes.
struct ops_state {
    std::shared_ptr<airlock_metrics> metrics;
    std::shared_ptr<serving> sv;  // the gateway and configuration in force, after any reload
    lifecycle* life = nullptr;
    metrics_config metrics_settings;
    std::atomic<bool> probing{false};
};

readiness_inputs readiness_of(ops_state& s) {
    readiness_inputs in;
    in.journal_open = s.sv->journal->is_open();
    if (auto fault = s.sv->journal->write_fault()) in.journal_fault = fault->code == "io_error" ? "write_failed" : fault->code;
    in.draining = s.life->draining();
    std::map<std::string, bool> optional;
    {
        std::lock_guard lock(s.sv->mutex);
        for (auto const& u : s.sv->current.upstreams) optional[u.name] = u.optional;
    }
    for (auto const& [name, state] : s.sv->backend->current()->upstream_states()) {
        readiness_inputs::upstream u{name, optional[name], readiness_inputs::upstream_state::unknown};
        if (state == gateway::upstream_state::up) u.state = readiness_inputs::upstream_state::up;
        if (state == gateway::upstream_state::down) u.state = readiness_inputs::upstream_state::down;
        if (state == gateway::upstream_state::refused) u.state = readiness_inputs::upstream_state::refused;
        in.upstreams.push_back(std::move(u));
    }
    return in;
}

asio::awaitable<void> async_probe(std::shared_ptr<ops_state> s) {
    try {
        // A journal that failed an append is tried again here: with no traffic sent to an unready
        // server, no append would come to find that it recovered.
        co_await s->sv->journal->async_probe_write();
        auto gw = s->sv->backend->current();
        co_await gw->async_probe_upstreams();
    } catch (std::exception const& e) {
        spdlog::warn("readiness probe of the upstreams failed: {}", e.what());
    }
    s->probing = false;
}

// /healthz, /readyz, /metrics, and 404 for everything else.
asio::awaitable<http_response> ops_route(std::shared_ptr<ops_state> s, http_request& req) {
    auto target = req.target();
    auto path = target.substr(0, target.find('?'));
    if (path == "/healthz") co_return healthz_response(req);
    if (path == "/readyz") {
        // Answered from what is known now; stale upstream states are refreshed in the background,
        // so a probe never waits on an upstream.
        if (!s->probing.exchange(true)) {
            auto exec = co_await asio::this_coro::executor;
            asio::co_spawn(exec, async_probe(s), asio::detached);
        }
        co_return readyz_response(req, readiness_of(*s));
    }
    if (path == "/metrics" && s->metrics_settings.enabled)
        co_return metrics_response(req, *s->metrics, s->metrics_settings.token);
    co_return json_error(http::status::not_found, "not_found", "no route for " + std::string(path), req.version());
}

asio::awaitable<void> async_resume_runs(std::shared_ptr<runner> runs, std::shared_ptr<core::journal_store> journal,
                                        std::shared_ptr<instance_lock> owner) {
    // Runs that cannot resume (unreadable ones) are quarantined first, so the resume skips them.
    co_await async_close_interrupted_runs(std::move(journal), std::move(owner));
    auto resumed = co_await runs->async_resume_all();
    if (!resumed) spdlog::error("cannot resume runs: {}", resumed.error().message);
    else if (*resumed) spdlog::info("resumed {} runs from the journal", *resumed);
}

// The last of serving: every upstream is stopped and its child reaped, and what was cancelled gets
// at least `settle` to write its journal records; then the loop may end.
asio::awaitable<void> async_wind_down(std::shared_ptr<serving> sv, std::chrono::milliseconds settle) {
    asio::steady_timer settled(co_await asio::this_coro::executor, settle);
    co_await async_close_upstreams(sv->all_clients());
    // Cut-off calls have journaled their outcomes by now, or do so within this bound; then their
    // runs are sealed.
    co_await sv->backend->async_runs_closed(std::chrono::seconds(2));
    co_await settled.async_wait(asio::as_tuple(asio::use_awaitable));
}

}  // namespace

int run_serve(std::vector<std::string> const& args) {
    std::optional<std::string> config_file, listen;
    std::optional<unsigned> threads_override;
    std::optional<bool> hints;
    log_flags logging;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (auto ok = parse_log_flag(args, i, logging, "serve")) {
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
            config_file = *v;
        } else if (a == "--hints" || a == "--no-hints") {
            hints = a == "--hints";
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
    auto c = load_serving_config(config_file);
    if (!c) {
        std::cerr << "airlock serve: " << (config_file ? *config_file + ": " : "") << c.error().message << "\n";
        return 1;
    }
    apply_logging(*c, logging);
    if (listen) parse_listen(*listen, c->server);
    if (threads_override) c->server.threads = *threads_override;
    if (c->server.busy_poll.count() > 0 && c->server.threads != 1) {
        std::cerr << "airlock serve: server.busy_poll needs one I/O thread: set server.threads: 1 or pass --threads 1 ("
                  << (c->server.threads ? "it is " + std::to_string(c->server.threads) : std::string("the default is one per CPU"))
                  << ")\n";
        return 2;
    }
    unsigned threads = c->server.threads ? c->server.threads : usable_cpus();

    asio::io_context ioc(static_cast<int>(threads));
    lifecycle life;
    auto sv = std::make_shared<serving>(ioc);
    sv->config_file = config_file;
    sv->listen_override = listen;
    sv->threads_override = threads_override;
    sv->drain_grace = c->server.drain_grace;
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
    sv->journal = sc->journal;
    sv->instance = sc->owner->id();
    sv->run_tools = sc->run_tools;
    sv->backend = std::make_shared<reloadable_backend>(sc->gw);
    sv->tokens = std::make_shared<token_table>();
    sv->tokens->replace(*c);
    sv->current = *c;
    sv->clients = sc->clients;

    mcp_endpoint_options eo;
    eo.allowed_hosts = c->server.allowed_hosts;
    eo.allowed_origins = c->server.allowed_origins;
    eo.authenticate = [tokens = sv->tokens](std::string_view presented) { return tokens->find(presented); };
    eo.allow_anonymous = has_anonymous(*c);
    eo.input_request_ttl = c->server.input_request_ttl;
    eo.keep_alive_interval = c->server.sse_keep_alive;
    eo.max_sessions = c->server.sessions.max;
    eo.max_sessions_per_principal = c->server.sessions.max_per_principal;
    eo.session_idle_timeout = c->server.sessions.idle_timeout;
    // Whatever the gateway relays, the client sees no configured secret.
    auto endpoint = std::make_shared<mcp_endpoint>(std::make_shared<redacting_backend>(sv->backend), eo);
    auto http_options = to_http_server_options(c->server);
    // The REST API: reads come from the journal; run actions need the agent runtime.
    rest_api_options ro;
    ro.journal = sc->journal;
    ro.authenticate = eo.authenticate;
    ro.allow_anonymous = eo.allow_anonymous;
    ro.anonymous_principal = [tokens = sv->tokens] { return tokens->anonymous(); };
    ro.is_operator = [tokens = sv->tokens](std::string_view name) { return tokens->is_operator(name); };
    ro.allowed_hosts = c->server.allowed_hosts;
    ro.allowed_origins = c->server.allowed_origins;
    // The gateway in force, after any reload (a replaced one stays alive: the backend keeps it).
    ro.tools = [backend = sv->backend](std::string principal) {
        return backend->current()->async_tools_for(std::move(principal));
    };
    std::map<std::string, bool> trusted;
    for (auto const& p : c->principals) trusted[p.name] = p.trusted;
    ro.runs = std::make_shared<runner_control>(sc->runs, std::move(trusted));
    auto rest = std::make_shared<rest_api>(std::move(ro));
    auto ops = std::make_shared<ops_state>();
    ops->metrics = metrics;
    ops->sv = sv;
    ops->life = &life;
    ops->metrics_settings = c->metrics;
    http_response_handler routes = [rest, ops](http_request& req) -> asio::awaitable<http_response> {
        auto target = req.target();
        if (rest_api::owns(target.substr(0, target.find('?')))) {
            note_route(req, "/v1");
            co_return co_await rest->async_handle(req);
        }
        co_return co_await ops_route(ops, req);
    };
    request_observer_options observer;
    observer.metrics = metrics;
    http_options.on_refused = observe_refusals(observer);
    // An MCP client shows a JSON-RPC error; a 413 or 431 with another body shape reads as garbage.
    http_options.refusal_body = mcp_refusal_body();
    // Probes and scrapes are answered even with every connection taken (a reserved slot; see
    // docs/operations.md): an orchestrator that cannot probe restarts a server that is only busy.
    http_options.served_over_capacity = [](std::string_view target) {
        auto path = target.substr(0, target.find('?'));
        return path == "/healthz" || path == "/readyz" || path == "/metrics";
    };
    http_server server(ioc, http_options, observe_requests(make_mcp_handler(endpoint, routes), observer));
    // Gauges whose truth lives elsewhere are read when Prometheus scrapes.
    // The sampler holds the parts it reads weakly: they own the metrics (the gateway and the
    // journal record into them), so owning them back would make a cycle that kept the gateway, the
    // metrics and the journal, its LMDB environment never closed, past the end of the process.
    metrics->on_scrape([&server, weak_endpoint = std::weak_ptr<mcp_endpoint>(endpoint),
                        weak_backend = std::weak_ptr<reloadable_backend>(sv->backend),
                        journal = std::weak_ptr<store::lmdb_store>(sv->journal)](airlock_metrics& m) {
        auto endpoint = weak_endpoint.lock();
        auto backend = weak_backend.lock();
        if (!endpoint || !backend) return;
        m.active_connections.with({}).set(static_cast<std::int64_t>(server.active_connections()));
        m.active_sessions.with({}).set(static_cast<std::int64_t>(endpoint->session_count()));
        for (auto const& [name, state] : backend->current()->upstream_states())
            m.upstream_up.with({name}).set(state == gateway::upstream_state::up ? 1 : 0);
        // Weak: the journal's commit observer holds the metrics, so a strong hold here would be a cycle.
        if (auto j = journal.lock()) {
            auto use = j->map_usage();
            m.journal_map_used.with({}).set(static_cast<std::int64_t>(use.used_bytes));
            m.journal_map_size.with({}).set(static_cast<std::int64_t>(use.map_size));
        }
    });
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
    asio::co_spawn(ioc, async_resume_runs(sc->runs, sc->journal, sc->owner), asio::detached);
    // The line tests and scripts wait for; it names the address actually bound (port 0 → a free one).
    auto const polling =
        c->server.busy_poll.count() > 0 ? ", busy poll: " + std::to_string(c->server.busy_poll.count()) + " us" : std::string();
    spdlog::info("airlock {} listening on {} ({} upstreams, {} principals, journal {}, {} I/O thread{}{})", AIRLOCK_VERSION,
                 where, c->upstreams.size(), c->principals.size(), c->journal.directory.string(), threads,
                 threads == 1 ? "" : "s", polling);
    if (hints.value_or(::isatty(STDOUT_FILENO) == 1)) std::cout << start_hints(*c, where) << std::flush;

    auto timer = std::make_shared<asio::steady_timer>(ioc);
    std::atomic<bool> cut_short{false};
    // Stopping: the loop ends once every upstream has been closed (a stdio child stopped in the
    // spec's order and reaped: none outlives airlock) and `settle` has passed.
    // The wind-down is bounded: past this, the loop stops whatever is still closing (a stdio child
    // takes at most its two 2 s graces and a SIGKILL; an HTTP upstream's DELETE may hang).
    static constexpr auto wind_down_limit = std::chrono::seconds(15);
    auto hard_stop = std::make_shared<asio::steady_timer>(ioc);
    auto winding_down = std::make_shared<std::atomic<bool>>(false);
    auto finish = [&ioc, sv, endpoint, runs = sc->runs, hard_stop, winding_down](std::chrono::milliseconds settle) {
        if (winding_down->exchange(true)) {
            // Asked again while winding down (a second signal): only the closing of upstreams is left,
            // and it gets a short while more.
            hard_stop->expires_after(std::chrono::seconds(2));
            hard_stop->async_wait([&ioc](boost::system::error_code const& ec) {
                if (!ec) ioc.stop();
            });
            return;
        }
        // What is still in flight is cancelled (an effect started and not finished reads as in
        // doubt in the journal); sessions end and their runs are sealed. The runs are closed first,
        // so that they are sealed as stopped by airlock, not as ended by their clients. From the
        // first of these on, no run of any kind is admitted (a REST run is refused by the agent
        // runtime, a gateway run by the gateway): one admitted after the seals would stay running.
        runs->stop();
        sv->backend->close_all_runs();
        endpoint->shutdown();
        auto stop_loop = [&ioc](std::exception_ptr e) {
            if (e) spdlog::error("stopping the upstreams ended by an internal error; stopping anyway");
            ioc.stop();
        };
        asio::co_spawn(ioc, async_wind_down(sv, settle), std::move(stop_loop));
        hard_stop->expires_after(settle + wind_down_limit);
        hard_stop->async_wait([&ioc](boost::system::error_code const& ec) {
            if (ec) return;
            spdlog::warn("stopping: upstreams still closing after {} s; stopping without them", wind_down_limit.count());
            ioc.stop();
        });
    };
    on_drain = [&, grace = c->server.drain_grace](int sig) {
        life.begin_drain();
        spdlog::info("signal {} received: draining (grace {} ms; a second signal stops at once)", sig, grace.count());
        // Notification streams end now (they have no natural end); requests in flight go on.
        endpoint->close_streams();
        server.stop();
        // In-flight requests and agent runs get the grace period; the loop ends as soon as the last
        // connection and run are gone, or when the grace period runs out, whichever comes first.
        auto deadline = std::chrono::steady_clock::now() + grace;
        auto check = std::make_shared<std::function<void()>>();
        *check = [&server, &cut_short, timer, deadline, check, finish, runs = sc->runs] {
            if (cut_short) return;
            auto open = server.active_connections();
            auto running = runs->active_runs();
            if ((open == 0 && running == 0) || std::chrono::steady_clock::now() >= deadline) {
                if (open || running)
                    spdlog::warn("drain: grace period over with {} connections and {} runs still going; stopping them", open,
                                 running);
                finish(std::chrono::milliseconds(300));
                *check = nullptr;  // breaks the self-reference, and destroys this lambda: nothing after it
                return;
            }
            timer->expires_after(std::chrono::milliseconds(20));
            timer->async_wait([check](boost::system::error_code const& ec) {
                if (!ec && *check) (*check)();
            });
        };
        (*check)();
    };
    on_stop_now = [&](int sig) {
        spdlog::warn("signal {} received while draining: stopping now ({} connections still open)", sig,
                     server.active_connections());
        cut_short = true;
        finish(std::chrono::milliseconds(0));
    };

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

int run_stdio(std::vector<std::string> const& args) {
    std::optional<std::string> config_file, principal;
    log_flags logging;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (auto ok = parse_log_flag(args, i, logging, "stdio")) {
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
    auto c = load_serving_config(config_file);
    if (!c) {
        std::cerr << "airlock stdio: " << *config_file << ": " << c.error().message << "\n";
        return 1;
    }
    apply_logging(*c, logging);
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
    // Not load_serving_config(): a replay creates no key or token that is missing.
    auto c = load_config(*config_file, process_environment());
    if (!c) {
        std::cerr << "airlock replay: " << *config_file << ": " << c.error().message << "\n";
        return 1;
    }
    apply_logging(*c, log_flags{});
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
