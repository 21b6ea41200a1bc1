#include "service/gateway/gateway.hpp"
#include "core/rfc3339.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"
#include "core/visible_text.hpp"
#include "store/lmdb_store.hpp"
#include "service/ops/metrics.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <regex>
#include <algorithm>
#include <map>
#include <set>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// Catalogues are re-read after this long, and a failed read is retried after the backoff.
constexpr auto catalogue_ttl = std::chrono::seconds(30);
constexpr auto retry_backoff = std::chrono::seconds(5);
// Readiness probes ping an upstream that was up at most this often, and wait this long for it.
constexpr auto ping_interval = std::chrono::seconds(3);
constexpr auto ping_deadline = std::chrono::milliseconds(3000);

void csprng(std::uint8_t* out, std::size_t n) {
    if (RAND_bytes(out, static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
}

json::object refusal_result(std::string_view text) {
    json::object r;
    r["content"] = json::array{json::object{{"type", "text"}, {"text", text}}};
    r["isError"] = true;
    return r;
}

mcp::error_object invalid_params(std::string message) {
    return mcp::error_object{mcp::rpc_code::invalid_params, std::move(message), std::nullopt};
}

// What a request is told when the run it would journal to could not be had: airlock is stopping
// (in the words of the endpoints' message for a request cut off by the stop), or the journal failed.
mcp::error_object no_run(core::error const& e, std::string_view refused) {
    if (e.code == "stopping") {
        spdlog::info("{} refused: airlock is stopping", refused);
        return mcp::error_object{mcp::rpc_code::internal_error,
                                 "airlock is stopping: this request was refused before it started (nothing was done); "
                                 "send it again once airlock is back",
                                 std::nullopt};
    }
    spdlog::error("journal unavailable, {} refused: {}", refused, e.message);
    return mcp::error_object{mcp::rpc_code::internal_error, "the journal is unavailable", std::nullopt};
}

// The spec's code for a resource that does not exist (or that this caller may not see).
constexpr std::int64_t resource_not_found = -32002;

mcp::error_object no_such_resource(std::string const& uri) {
    return mcp::error_object{resource_not_found, "Resource not found: " + uri, json::value(json::object{{"uri", uri}})};
}

// A caller's cancellation passed on to the call it cancels, remembering that it came.
struct cancellation_seen {
    asio::cancellation_signal inner;
    bool seen = false;
};

// Runs `op` as a child that the client's cancellation reaches (the transport then tells the
// upstream); nullopt when it was cancelled before it finished. The slot is cleared afterwards: it
// outlives the child, and a late cancellation must find nothing to call.
template <class T>
asio::awaitable<std::optional<T>> async_cancellable(asio::cancellation_slot slot, asio::awaitable<T> op) {
    auto exec = co_await asio::this_coro::executor;
    std::optional<T> out;
    try {
        auto token = asio::bind_cancellation_slot(slot, asio::use_awaitable);
        out = co_await asio::co_spawn(exec, std::move(op), token);
    } catch (boost::system::system_error const& e) {
        slot.clear();
        if (e.code() != asio::error::operation_aborted) throw;
        co_return std::nullopt;
    }
    slot.clear();
    co_return out;
}

// A URI template (RFC 6570) as a pattern that matches the URIs it expands to: a simple expression
// matches up to the next '/', reserved ones ({+x}, {#x}) anything, query forms ({?x}, {&x}) an
// optional query. Enough to tell which upstream a templated URI belongs to.
std::optional<std::regex> template_pattern(std::string const& tmpl) {
    std::string re;
    for (std::size_t i = 0; i < tmpl.size();) {
        if (tmpl[i] == '{') {
            auto close = tmpl.find('}', i);
            if (close == std::string::npos) return std::nullopt;
            char op = close > i + 1 ? tmpl[i + 1] : '\0';
            if (op == '+' || op == '#') re += ".*";
            else if (op == '?' || op == '&') re += "([?&].*)?";
            else if (op == '/') re += "(/[^?#]*)?";
            else re += "[^/?#]*";
            i = close + 1;
            continue;
        }
        if (std::strchr(".^$|()[]*+?\\{}", tmpl[i])) re += '\\';
        re += tmpl[i++];
    }
    try {
        return std::regex(re);
    } catch (std::regex_error const&) {
        return std::nullopt;
    }
}

// Sends through `notify` while holding it: the coroutine it returns may refer to the callable
// (a capturing coroutine lambda does), which must outlive it.
asio::awaitable<void> async_send_holding(std::function<asio::awaitable<void>(mcp::notification)> notify,
                                         mcp::notification n) {
    co_await notify(std::move(n));
}

// What the caller reads of a failed call: the kind, whether it may have taken effect, and why.
std::string failure_text(core::tool_error const& e) {
    std::string kind(core::to_string(e.kind));
    switch (core::disposition_of(e.kind)) {
        case core::disposition::did_not_happen: return kind + " (the call was not made): " + e.detail;
        case core::disposition::in_doubt: return kind + " (the call may or may not have taken effect): " + e.detail;
        case core::disposition::landed: break;
    }
    return kind + ": " + e.detail;
}

// The label of everything a principal sends: one source, and its trust as configured.
core::label label_of(gateway_principal const& p) {
    core::label l;
    l.sources = {"principal:" + p.name};
    l.trust = p.trusted ? core::trust::trusted : core::trust::untrusted;
    return l;
}

bool is_method_not_found(mcp::handler_result const& r) {
    return !r && r.error().code == mcp::rpc_code::method_not_found;
}

// A call's outcome record, written after the reply. Nobody waits for it, so on LMDB it rides in the
// transaction of the next effect_started (one fsync instead of two on the next call's path) or is
// committed within the store's defer_limit.
// `hold` keeps the run open (unsealed) until the record is written.
asio::awaitable<void> async_journal_outcome(std::shared_ptr<core::journal_store> journal, std::string run,
                                            core::new_record rec, std::shared_ptr<void> hold) {
    auto batch = core::one_record(std::move(rec));
    core::result<std::vector<core::record>> r = core::make_error("internal", "not written");
    if (auto* lmdb = dynamic_cast<store::lmdb_store*>(journal.get()))
        r = co_await lmdb->async_append_deferred(run, std::move(batch));
    else
        r = co_await journal->async_append(run, std::move(batch));
    if (!r) spdlog::error("journal: run {}: {}", run, r.error().message);
    hold.reset();
}

// What the effect_done record keeps of a call's result: the result itself, or, when that would not
// fit in one journal record, its SHA-256 and size. The effect then still reads as landed, and a copy
// of the output kept by the caller can be matched against the record.
// A tool result's _meta as the client gets it: the upstream's, unchanged (hosts keep data there, MCP
// Apps their UI's), but for keys in airlock's own namespace (dev.airlock/...), which only airlock
// writes: a client can then trust such a key to come from airlock, never from a tool server.
std::optional<json::object> relayed_meta(std::optional<json::object> const& meta) {
    if (!meta) return std::nullopt;
    json::object out = *meta;
    std::vector<std::string> own;
    for (auto const& kv : out)
        if (kv.key().starts_with("dev.airlock/")) own.emplace_back(kv.key());
    for (auto const& k : own) out.erase(k);
    if (out.empty() && !meta->empty()) return std::nullopt;
    return out;
}

json::value journaled_output(json::object const& result) {
    constexpr std::size_t room = core::max_record_bytes - 4096;  // the rest of the record: key, label
    json::value output = result;
    if (core::canonical_size_bound(output) <= room) return output;
    auto text = core::canonical(output);
    if (!text || text->size() <= room) return output;
    spdlog::warn("journal: a call's output of {} bytes exceeds the {}-byte record limit; its SHA-256 and size "
                 "are journaled in its place",
                 text->size(), core::max_record_bytes);
    return json::object{{"omitted", "larger than a journal record"},
                        {"sha256", core::sha256_hex(*text)},
                        {"canonical_bytes", text->size()}};
}

}  // namespace

std::string tool_definition_digest(mcp::tool const& t) {
    json::object def{{"name", t.name},
                     {"description", t.description ? json::value(*t.description) : json::value(nullptr)},
                     {"inputSchema", t.input_schema}};
    auto text = core::canonical(def);
    // A schema that cannot be canonicalized still needs a stable digest; its serialization is one.
    return core::sha256_hex(text ? *text : json::serialize(def));
}

namespace {

// The copy of a tool definition that callers see loses the characters no reviewer can see (see
// core/visible_text.hpp). The pin covers the definition as the upstream sent it.
core::hidden_characters remove_hidden_characters(mcp::tool& t) {
    core::hidden_characters removed;
    for (auto* text : {&t.title, &t.description})
        if (*text)
            if (auto cleaned = core::without_hidden_characters(**text, removed)) **text = std::move(*cleaned);
    if (t.annotations && t.annotations->title)
        if (auto cleaned = core::without_hidden_characters(*t.annotations->title, removed))
            t.annotations->title = std::move(*cleaned);
    json::value schema(std::move(t.input_schema));
    core::remove_hidden_characters(schema, removed);
    t.input_schema = std::move(schema.as_object());
    if (t.output_schema) {
        json::value out(std::move(*t.output_schema));
        core::remove_hidden_characters(out, removed);
        t.output_schema = std::move(out.as_object());
    }
    return removed;
}

}  // namespace

core::result<std::shared_ptr<gateway>> gateway::make(gateway_options options) {
    if (!options.journal) return core::make_error("invalid_gateway", "the gateway needs a journal");
    std::map<std::string, int> seen;
    for (auto const& u : options.upstreams) {
        if (!u.client) return core::make_error("invalid_gateway", "upstream '" + u.name + "' has no client");
        if (seen[u.name]++) return core::make_error("invalid_gateway", "upstream '" + u.name + "' is configured twice");
    }
    std::map<std::string, int> names;
    for (auto const& p : options.principals)
        if (names[p.name]++) return core::make_error("invalid_gateway", "principal '" + p.name + "' is configured twice");
    auto g = std::shared_ptr<gateway>(new gateway(std::move(options)));
    std::weak_ptr<gateway> weak = g;
    for (auto const& u : g->options_.upstreams) {
        auto server = u.name;
        u.client->set_notification_handler([weak, server](mcp::notification const& n) {
            if (auto self = weak.lock()) self->upstream_notification(server, n);
        });
        u.client->set_server_request_handler(
            [weak, server](mcp::request r) { return async_upstream_request(weak, server, std::move(r)); });
    }
    return g;
}

namespace {
gateway_options with_defaults(gateway_options o) {
    if (!o.random) o.random = csprng;
    return o;
}
}  // namespace

gateway::gateway(gateway_options options)
    : options_(with_defaults(std::move(options))),
      ids_([clock = options_.clock] {
               return static_cast<std::uint64_t>(
                   std::chrono::duration_cast<std::chrono::milliseconds>(clock().time_since_epoch()).count());
           },
           options_.random) {
    // A fresh key per process: a cursor from before a restart is refused, and the client lists anew.
    std::array<std::uint8_t, 32> key{};
    options_.random(key.data(), key.size());
    cursors_.emplace(key);
    if (options_.list_page_size == 0) options_.list_page_size = 1;
    // Nothing at all goes to a destination egress does not allow: not a handshake, not a listing,
    // not a ping. Such an upstream is never contacted (a reload with it in egress makes a new gateway).
    for (auto const& u : options_.upstreams) {
        auto where = u.client->destination();
        if (options_.egress.permits(where)) continue;
        auto& c = catalogues_[u.name];
        c.refused_by_egress = true;
        c.failed = true;
        c.retry_after = std::chrono::steady_clock::time_point::max();
        spdlog::warn("upstream {}: its destination {} is not in egress; it is never contacted and calls to its tools "
                     "are refused (add it to egress to use it)",
                     u.name, core::to_string(where));
    }
}

// Registers a downstream request as in flight on an upstream for as long as it is forwarded there.
class gateway::inflight_guard {
public:
    inflight_guard(gateway& g, std::string server, mcp::request_context const& ctx, asio::any_io_executor exec)
        : g_(g), server_(std::move(server)), f_(std::make_shared<inflight>()) {
        f_->executor = std::move(exec);
        f_->notify = ctx.notify;
        f_->ask_client = ctx.ask_client;
        // A legacy session is one client. Stateless (2026-07-28) requests of one principal count as
        // one caller: a request waiting for its retry (MRTR) stays in flight beside the retry.
        f_->caller = ctx.principal + '\n' + ctx.session_id;
        std::lock_guard lock(g_.mutex_);
        g_.inflight_[server_].push_back(f_);
    }
    ~inflight_guard() {
        std::lock_guard lock(g_.mutex_);
        auto it = g_.inflight_.find(server_);
        if (it == g_.inflight_.end()) return;
        std::erase(it->second, f_);
        if (it->second.empty()) g_.inflight_.erase(it);
    }
    inflight_guard(inflight_guard const&) = delete;
    inflight_guard& operator=(inflight_guard const&) = delete;

private:
    gateway& g_;
    std::string server_;
    std::shared_ptr<inflight> f_;
};

mcp::implementation gateway::server_info() const { return options_.server_info; }

json::object gateway::server_capabilities(std::string const& principal_name) const {
    json::object caps{{"tools", {{"listChanged", true}}}};
    auto const* p = principal(principal_name);
    if (!p) return caps;
    bool resources = false, subscribe = false, prompts = false, logging = false, completions = false;
    for (auto const* up : visible_upstreams(*p)) {
        auto known = up->client->server_capabilities();
        if (!known) {
            // Not connected yet: promise what airlock can relay; an upstream without it answers
            // lists with nothing and other requests with its own error.
            resources = subscribe = prompts = logging = completions = true;
            continue;
        }
        if (auto const* r = known->if_contains("resources"); r && r->is_object()) {
            resources = true;
            if (auto const* sub = r->as_object().if_contains("subscribe"); sub && sub->is_bool() && sub->get_bool())
                subscribe = true;
        }
        prompts = prompts || known->contains("prompts");
        logging = logging || known->contains("logging");
        completions = completions || known->contains("completions");
    }
    // listChanged is ours to promise: airlock relays the upstreams' and re-lists on demand.
    if (resources) caps["resources"] = {{"subscribe", subscribe}, {"listChanged", true}};
    if (prompts) caps["prompts"] = {{"listChanged", true}};
    if (logging) caps["logging"] = json::object{};
    if (completions) caps["completions"] = json::object{};
    return caps;
}

namespace {

// An upstream's instructions as callers see them: they are model-facing, like tool descriptions, so
// the characters nobody can read are removed, and they are bounded, since they land in every
// client's context.
std::string shown_instructions(std::string text) {
    core::hidden_characters removed;
    if (auto cleaned = core::without_hidden_characters(text, removed)) text = std::move(*cleaned);
    constexpr std::size_t limit = 16 * 1024;
    if (text.size() > limit) {
        auto cut = limit;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
        text.resize(cut);
        text += " [cut at 16 KiB by airlock]";
    }
    return text;
}

}  // namespace

std::optional<std::string> gateway::instructions(std::string const& principal_name) const {
    // What each upstream the principal sees says of how to use it, with the characters nobody can
    // read removed (they are model-facing, like tool descriptions). A lone unprefixed upstream's
    // text goes as it is; otherwise each is headed by its server, whose tools carry its prefix.
    auto const* p = principal(principal_name);
    if (!p) return std::nullopt;
    std::vector<std::pair<gateway_upstream const*, std::string>> said;
    for (auto const* up : visible_upstreams(*p)) {
        auto text = up->client->instructions();
        if (!text) continue;
        std::optional<std::string> cached;
        {
            std::lock_guard lock(instructions_mutex_);
            if (auto it = shown_instructions_.find(up->name); it != shown_instructions_.end() && it->second.first == *text)
                cached = it->second.second;
        }
        if (!cached) {
            // Cleaned outside the lock: a long text must not hold up other threads' discovers.
            cached = shown_instructions(*text);
            std::lock_guard lock(instructions_mutex_);
            shown_instructions_[up->name] = {std::move(*text), *cached};
        }
        text = std::move(cached);
        if (text->find_first_not_of(" \t\r\n") == std::string::npos) continue;
        said.emplace_back(up, std::move(*text));
    }
    if (said.empty()) return std::nullopt;
    if (said.size() == 1 && !said.front().first->prefixed) return std::move(said.front().second);
    std::string out;
    for (auto& [up, text] : said) {
        if (!out.empty()) out += "\n\n";
        out += "From the upstream server '" + up->name + "'" +
               (up->prefixed ? " (its tools are named " + up->name + "__TOOL here):\n" : ":\n") + text;
    }
    return out;
}

bool gateway::first_configured(std::string const& a, std::string const& b) const {
    // Which of two upstreams comes first in the configuration: a URI or prompt two of them offer
    // belongs to that one, whichever listed it last, so a restart elsewhere cannot take it over.
    for (auto const& u : options_.upstreams) {
        if (u.name == a) return a != b;
        if (u.name == b) return false;
    }
    return false;
}

gateway_principal const* gateway::principal(std::string const& name) const {
    for (auto const& p : options_.principals)
        if (p.name == name || (name.empty() && p.anonymous)) return &p;
    return nullptr;
}

bool gateway::sees(gateway_principal const& p, std::string const& server) {
    // A grant the gates refuse whatever its arguments is not offered as a tool; it opens nothing
    // else of its upstream either (resources, prompts, completion, the upstream's log).
    auto const label = label_of(p);
    for (auto const& g : p.grants.tools)
        if (g.ref.server() == server && core::refused_whatever_the_arguments(g, label)) return true;
    return false;
}

std::vector<gateway_upstream const*> gateway::visible_upstreams(gateway_principal const& p) const {
    std::vector<gateway_upstream const*> out;
    std::lock_guard lock(mutex_);
    for (auto const& u : options_.upstreams) {
        // An upstream egress refuses is never asked anything, so it offers nothing.
        if (auto it = catalogues_.find(u.name); it != catalogues_.end() && it->second.refused_by_egress) continue;
        if (sees(p, u.name)) out.push_back(&u);
    }
    return out;
}

gateway_upstream const* gateway::upstream(std::string const& name) const {
    for (auto const& u : options_.upstreams)
        if (u.name == name) return &u;
    return nullptr;
}

std::string gateway::nonce() {
    std::uint8_t b[16];
    options_.random(b, sizeof b);
    return core::to_hex(b, sizeof b);
}

bool gateway::upstream_available(std::string const& server) const {
    std::lock_guard lock(mutex_);
    auto it = catalogues_.find(server);
    // Unknown yet counts as available: the call path reads the catalogue before deciding.
    return it == catalogues_.end() || !it->second.failed;
}

void gateway::upstream_list_changed(std::string const& server) {
    spdlog::debug("upstream {}: tool list changed", server);
    {
        std::lock_guard lock(mutex_);
        auto& c = catalogues_[server];
        c.retry_after = {};  // re-read on next use
        ++c.generation;      // and a read under way may have missed the change
        // With no stream to tell, the next read (by whoever needs the tools) is the new baseline:
        // reading now would only load an upstream that may be busy starting up or going away.
        bool const heard = std::ranges::any_of(listeners_, [&](auto const& kv) {
            auto const* p = principal(kv.second.principal);
            return p && sees(*p, server);
        });
        if (!heard) {
            c.announced.reset();
            return;
        }
        // Servers send several in a row (one per tool they register): one more read answers them all.
        auto [it, fresh] = rereads_.try_emplace(server, false);
        if (!fresh) {
            it->second = true;
            return;
        }
    }
    if (!options_.executor) return;
    auto task = async_reread_tools(shared_from_this(), server);
    asio::co_spawn(options_.executor, std::move(task), asio::detached);
}

// A list_changed passed on as it came would make every client list again for each notice, even
// when nothing it sees changed (a tool it is not granted, the same definitions re-announced).
asio::awaitable<void> gateway::async_reread_tools(std::shared_ptr<gateway> self, std::string server) {
    auto const* up = self->upstream(server);
    for (;;) {
        catalogue_snapshot now;
        if (up) now = co_await self->async_catalogue(*up);
        std::vector<notification_sink> sinks;
        {
            std::lock_guard lock(self->mutex_);
            auto& c = self->catalogues_[server];
            // A failed read says nothing about the list: the streams hear when it answers again.
            if (now && !c.failed) {
                if (c.announced) sinks = self->sinks_seeing_change(server, *c.announced, *now);
                c.announced = now;
            } else {
                c.announce_pending = true;
            }
        }
        if (!sinks.empty()) spdlog::info("upstream {}: tool list changed; telling {} notification stream(s)", server, sinks.size());
        mcp::notification n{"notifications/tools/list_changed", std::nullopt};
        for (auto const& s : sinks) s(n);
        std::lock_guard lock(self->mutex_);
        auto it = self->rereads_.find(server);
        if (it == self->rereads_.end() || !it->second) {
            if (it != self->rereads_.end()) self->rereads_.erase(it);
            co_return;
        }
        it->second = false;
        auto& c = self->catalogues_[server];
        c.retry_after = {};
        ++c.generation;
    }
}

std::vector<gateway::notification_sink> gateway::sinks_seeing_change(std::string const& server, std::vector<catalogue_entry> const& was,
                                                            std::vector<catalogue_entry> const& now) const {
    // What a principal is shown of one upstream: its granted, served tools as they are listed.
    auto shown = [](gateway_principal const& p, std::vector<catalogue_entry> const& entries) {
        std::vector<json::value> out;
        for (auto const& e : entries) {
            if (!e.withheld.empty() || !p.grants.grant_for(e.id)) continue;
            auto t = json::value_from(e.spec);
            t.as_object()["name"] = e.exposed_name;
            out.push_back(std::move(t));
        }
        return out;
    };
    std::map<std::string, bool> changed;  // by principal
    std::vector<notification_sink> sinks;
    for (auto const& [id, l] : listeners_) {
        auto const* p = principal(l.principal);
        if (!p || !sees(*p, server)) continue;
        auto [it, fresh] = changed.try_emplace(l.principal, false);
        if (fresh) it->second = shown(*p, was) != shown(*p, now);
        if (it->second) sinks.push_back(l.sink);
    }
    return sinks;
}

void gateway::broadcast(std::string const& server, mcp::notification const& n) {
    std::vector<notification_sink> sinks;
    {
        std::lock_guard lock(mutex_);
        for (auto const& [id, l] : listeners_) {
            auto const* p = principal(l.principal);
            if (p && sees(*p, server)) sinks.push_back(l.sink);
        }
    }
    for (auto const& s : sinks) s(n);
}

std::uint64_t gateway::add_listener(std::string const& principal, notification_sink sink) {
    return add_session_listener(principal, "", std::move(sink));
}

std::uint64_t gateway::add_session_listener(std::string const& principal_name, std::string const& session_id,
                                            notification_sink sink) {
    std::lock_guard lock(mutex_);
    auto id = ++next_listener_;
    // The same keys session_key() gives subscriptions, so an update finds the streams it concerns.
    auto key = session_id.empty() ? "principal:" + principal_name : "session:" + session_id;
    listeners_[id] = listener{principal_name, std::move(key), std::move(sink)};
    return id;
}

void gateway::remove_listener(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    listeners_.erase(id);
}

bool gateway::catalogue_fresh(catalogue const& c, gateway_upstream const& up, std::chrono::steady_clock::time_point now) const {
    // Fresh until its TTL (retry_after) passes; a failed read waits out its backoff the same way.
    // A reconnected upstream (a restarted child, a new HTTP session) is read again at once: its
    // tools are checked against their pins before any call is sent on the new connection.
    return now < c.retry_after && (c.failed || c.connection == up.client->connection());
}

void gateway::start_read(gateway_upstream const& up, catalogue& c, asio::any_io_executor const& exec) {
    if (c.reading || c.refused_by_egress) return;
    c.reading = true;
    c.read_started = std::chrono::steady_clock::now();
    c.late_reported = false;
    // Posted: mutex_ is held here, and co_spawn may start the read at once, which takes it.
    asio::post(exec, [exec, self = shared_from_this(), up = &up] {
        asio::co_spawn(exec, async_read_catalogue(self, up), asio::detached);
    });
}

void gateway::start_stale_reads(asio::any_io_executor const& exec) {
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    for (auto const& up : options_.upstreams) {
        auto& c = catalogues_[up.name];
        if (!catalogue_fresh(c, up, now)) start_read(up, c, exec);
    }
}

bool gateway::passed_over(gateway_upstream const& up) const {
    std::lock_guard lock(mutex_);
    auto it = catalogues_.find(up.name);
    if (it == catalogues_.end()) return false;
    auto const& c = it->second;
    if (c.refused_by_egress) return true;
    // Connected: it answers requests, whatever its tools/list said (a server may serve only resources).
    if (up.client->connection() != 0) return false;
    return c.failed || (c.reading && std::chrono::steady_clock::now() >= c.read_started + options_.upstream_wait);
}

asio::awaitable<gateway::catalogue_snapshot> gateway::async_catalogue(gateway_upstream const& up, catalogue_wait wait) {
    auto here = co_await asio::this_coro::executor;
    // Reads run on the gateway's executor when it has one: they outlive the caller who began them.
    auto exec = options_.executor ? options_.executor : here;
    static auto const none = std::make_shared<std::vector<catalogue_entry> const>();
    // Bounded: a read outdated by a list_changed is followed by another, but not forever.
    for (int reads = 0;;) {
        auto now = std::chrono::steady_clock::now();
        {
            std::lock_guard lock(mutex_);
            auto& c = catalogues_[up.name];
            if (catalogue_fresh(c, up, now) || c.refused_by_egress) co_return c.entries;
            if (!c.reading) {
                if (reads++ == 3) co_return c.entries;
                start_read(up, c, exec);
            }
            if (wait == catalogue_wait::merged) {
                // Down: its tools are out until a read succeeds, which this one may do meanwhile.
                if (c.failed) co_return c.entries;
                // Only due for its TTL re-read, on the connection it was read on and with no change
                // announced since: still what it serves.
                if (c.answered && c.listed_generation == c.generation && c.connection == up.client->connection())
                    co_return c.entries;
                if (now >= c.read_started + options_.upstream_wait) {
                    if (!std::exchange(c.late_reported, true))
                        spdlog::warn("upstream {}: its tools have not been read within {} ms; lists go on without "
                                     "them until it answers",
                                     up.name, options_.upstream_wait.count());
                    co_return none;
                }
            }
        }
        // Polled, as mcp_client waits for a handshake: reads are rare, and a timer per waiter is simple.
        asio::steady_timer t(here, std::chrono::milliseconds(10));
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

asio::awaitable<void> gateway::async_read_catalogue(std::shared_ptr<gateway> self, gateway_upstream const* up) {
    std::chrono::steady_clock::time_point started;
    std::uint64_t generation = 0;
    {
        std::lock_guard lock(self->mutex_);
        auto const& c = self->catalogues_[up->name];
        started = c.read_started;
        generation = c.generation;
    }
    // Whichever way the read ends, the next caller may begin another.
    struct read_ends {
        gateway& g;
        std::string const& name;
        ~read_ends() {
            std::lock_guard lock(g.mutex_);
            g.catalogues_[name].reading = false;
        }
    } ends{*self, up->name};
    try {
        co_await self->async_read_tools(*up, started, generation);
    } catch (std::exception const& e) {
        spdlog::error("upstream {}: reading its tools failed: {}; retrying in {}s", up->name, e.what(), retry_backoff.count());
        std::lock_guard lock(self->mutex_);
        auto& c = self->catalogues_[up->name];
        c.entries = std::make_shared<std::vector<catalogue_entry> const>();
        c.failed = true;
        c.retry_after = started + retry_backoff;
    }
}

asio::awaitable<void> gateway::async_read_tools(gateway_upstream const& up, std::chrono::steady_clock::time_point now,
                                                std::uint64_t generation) {
    auto listed = co_await up.client->async_list_tools();
    if (!listed) {
        // One upstream down must not break the others: its tools drop out until it answers again.
        spdlog::warn("upstream {}: tools unavailable ({}: {}); retrying in {}s", up.name, core::to_string(listed.error().kind),
                     listed.error().detail, retry_backoff.count());
        std::lock_guard lock(mutex_);
        auto& c = catalogues_[up.name];
        c.entries = std::make_shared<std::vector<catalogue_entry> const>();
        c.failed = true;
        c.retry_after = now + retry_backoff;
        co_return;
    }
    std::vector<catalogue_entry> entries;
    std::size_t first_pins = 0;
    for (auto& t : *listed) {
        catalogue_entry e{t.id, up.prefixed ? t.id.wire_name() : t.spec.name, t.spec, {}, false};
        // airlock does not run tool calls as tasks: it offers no `tasks` capability, and a tool that
        // can only be called as one could only fail.
        e.spec.execution.reset();
        if (mcp::requires_task(t.spec)) {
            e.withheld = "it can only be called as a task, which airlock does not offer";
            if (report_once("task " + up.name + "/" + t.upstream_name))
                spdlog::warn("upstream {}: {} can only be called as a task (execution.taskSupport \"required\"), "
                             "which airlock does not offer; the tool is withheld",
                             up.name, t.upstream_name);
        } else if (auto declared = mcp::param_headers_of(t.spec); !declared) {
            // A definition whose x-mcp-header annotations break the spec's rules is left out, as
            // the 2026-07-28 transport asks of clients; the other tools stay. Logged once per definition.
            e.withheld = "its x-mcp-header annotations break the 2026-07-28 rules";
            if (report_once("x-mcp-header " + up.name + "/" + t.upstream_name + " " +
                                                            declared.error().message))
                spdlog::warn("upstream {}: {}; the tool is withheld", up.name, declared.error().message);
        } else if (!declared->empty()) {
            e.param_headers = true;
        }
        if (options_.pins) {
            auto digest = tool_definition_digest(t.spec);
            // Arguments are named before co_await throughout: GCC 12 mishandles temporaries there.
            auto pin_key = up.name + "/" + t.upstream_name;
            auto verdict = co_await options_.pins->async_check_pin(pin_key, digest);
            if (!verdict) {
                spdlog::error("upstream {}: cannot check the pin of {}: {}; withheld", up.name, t.upstream_name,
                              verdict.error().message);
                e.withheld = "its pin could not be checked";
            } else if (*verdict == core::pin_verdict::changed) {
                // Rug-pull protection: a tool whose definition changed under the operator is withheld
                // until someone accepts the new definition (airlock pins accept).
                spdlog::warn("upstream {}: the definition of {} changed since it was pinned; withheld until accepted",
                             up.name, t.upstream_name);
                e.withheld = "its definition changed since it was pinned (airlock pins accept)";
                if (report_once(pin_key + " " + digest)) {
                    // Journaled once per new definition: an operator can see when a tool changed
                    // under them, and what it changed to, before accepting it.
                    auto run = co_await async_gateway_run();
                    if (run) {
                        json::object note{{"event", "tool_definition_changed"},
                                          {"server", up.name},
                                          {"tool", t.upstream_name},
                                          {"pending_digest", digest},
                                          {"definition", json::value_from(t.spec)}};
                        core::new_record rec{core::record_kind::note, std::move(note)};
                        co_await async_journal(*run, std::move(rec));
                    }
                }
            } else if (*verdict == core::pin_verdict::first_seen) {
                spdlog::debug("upstream {}: pinned {} ({})", up.name, t.upstream_name, digest.substr(0, 12));
                ++first_pins;
            }
        }
        if (auto removed = remove_hidden_characters(e.spec); !removed.empty()) {
            if (report_once("hidden " + up.name + "/" + t.upstream_name + " " +
                                                            core::describe(removed)))
                spdlog::warn("upstream {}: the definition of {} holds characters a reader cannot see ({}); they are "
                             "removed from what callers are shown",
                             up.name, t.upstream_name, core::describe(removed));
        }
        entries.push_back(std::move(e));
    }
    // One line, not one per tool: `airlock pins list` shows each pin.
    if (first_pins)
        spdlog::info("upstream {}: {} tools listed, {} pinned for the first time (airlock pins list)", up.name,
                     entries.size(), first_pins);
    std::lock_guard lock(mutex_);
    auto& c = catalogues_[up.name];
    c.entries = std::make_shared<std::vector<catalogue_entry> const>(std::move(entries));
    c.failed = false;
    c.answered = true;
    c.listed_generation = generation;
    if (!c.announced) c.announced = c.entries;
    c.connection = up.client->connection();
    // Re-read after the TTL even without list_changed: not every server sends it. A change
    // announced while this read was under way may not be in it: the next use reads again.
    c.retry_after = c.generation == generation ? now + catalogue_ttl : std::chrono::steady_clock::time_point{};
    // A change announced while the upstream could not be read is told now that it can be.
    // Posted: mutex_ is held here, and the re-read takes it.
    if (std::exchange(c.announce_pending, false) && options_.executor && !rereads_.contains(up.name)) {
        rereads_.try_emplace(up.name, false);
        auto exec = options_.executor;
        asio::post(exec, [exec, self = shared_from_this(), server = up.name] {
            asio::co_spawn(exec, async_reread_tools(self, server), asio::detached);
        });
    }
}

asio::awaitable<std::vector<gateway::tools_of_upstream>> gateway::async_tools_by_upstream(std::string principal_name) {
    std::vector<tools_of_upstream> out;
    auto const* p = principal(principal_name);
    if (!p) co_return out;
    auto const label = label_of(*p);
    // A name two upstreams expose (both `prefix: none`, or one unprefixed tool named like another
    // server's prefixed one) cannot be called unambiguously: neither is listed. Every granted tool
    // counts, listed or not, as it does when a call is resolved.
    std::map<std::string, std::string> first_server;
    std::set<std::string> ambiguous;
    // Every stale catalogue is read at once, and none is waited for past upstream_wait: one slow
    // or hung upstream leaves the list without its tools rather than holding up everyone's.
    auto here = co_await asio::this_coro::executor;
    start_stale_reads(options_.executor ? options_.executor : here);
    for (auto const& up : options_.upstreams) {
        auto entries = co_await async_catalogue(up, catalogue_wait::merged);
        tools_of_upstream group{up.name, {}};
        for (auto const& e : *entries) {
            auto const* grant = p->grants.grant_for(e.id);
            if (!grant) continue;
            auto [it, fresh] = first_server.try_emplace(e.exposed_name, up.name);
            if (!fresh && it->second != up.name) {
                ambiguous.insert(e.exposed_name);
                report_ambiguous(e.exposed_name, it->second, up.name);
            }
            // A tool the gates refuse whatever its arguments is not offered: a call could only be refused.
            if (!e.withheld.empty() || !core::refused_whatever_the_arguments(*grant, label)) continue;
            auto t = json::value_from(e.spec).as_object();
            t["name"] = e.exposed_name;
            if (!grant->description.empty()) t["description"] = grant->description;
            group.second.push_back(std::move(t));
        }
        out.push_back(std::move(group));
    }
    if (!ambiguous.empty())
        for (auto& group : out)
            std::erase_if(group.second, [&](json::object const& t) {
                return ambiguous.contains(std::string(t.at("name").get_string()));
            });
    co_return out;
}

bool gateway::report_once(std::string key) {
    std::lock_guard lock(mutex_);
    return reported_definitions_.insert(std::move(key)).second;
}

void gateway::report_ambiguous(std::string const& name, std::string const& first, std::string const& second) {
    if (!report_once("ambiguous " + name + " " + first + " " + second)) return;
    spdlog::error("tool name '{}' is exposed by both upstream {} and upstream {}; neither is listed or callable under it "
                  "(keep the default prefix on one of them)",
                  name, first, second);
}

asio::awaitable<std::vector<json::object>> gateway::async_tools_for(std::string principal_name) {
    std::vector<json::object> out;
    auto groups = co_await async_tools_by_upstream(std::move(principal_name));
    for (auto& g : groups)
        for (auto& t : g.second) out.push_back(std::move(t));
    co_return out;
}

asio::awaitable<core::result<std::shared_ptr<gateway::catalogue_entry const>>> gateway::async_resolve(
    gateway_principal const& p, std::string const& name) {
    // Byte-for-byte among the principal's grants: no trimming, no case folding, no near misses.
    std::shared_ptr<catalogue_entry const> found;
    bool const any_unprefixed = std::ranges::any_of(options_.upstreams, [](auto const& u) { return !u.prefixed; });
    // A prefixed name says which upstream serves it: only that one is waited for (as long as it
    // takes), and the unprefixed ones, which could expose the same name, no longer than a merged
    // list waits for them. Other upstreams are not asked at all.
    auto const named = core::tool_id::from_wire_name(name);
    for (auto const& up : options_.upstreams) {
        bool const owner = up.prefixed && named && named->server() == up.name;
        if (up.prefixed && !owner) continue;
        auto entries = co_await async_catalogue(up, owner ? catalogue_wait::own : catalogue_wait::merged);
        for (auto const& e : *entries) {
            if (e.exposed_name != name || !p.grants.grant_for(e.id)) continue;
            if (found && found->id.server() != e.id.server()) {
                report_ambiguous(name, found->id.server(), e.id.server());
                co_return core::make_error("ambiguous", "tool name exposed by both upstream " + found->id.server() +
                                                            " and upstream " + e.id.server());
            }
            if (!found) found = std::shared_ptr<catalogue_entry const>(entries, &e);
        }
        // Prefixed names are unique among prefixed upstreams: only an unprefixed one can repeat them.
        if (found && !any_unprefixed) break;
    }
    co_return found;
}

core::result<std::optional<mcp::list_position>> gateway::cursor_of(mcp::request const& req, std::string_view list,
                                                                   std::string const& principal_name) const {
    if (!req.params) return std::optional<mcp::list_position>{};
    auto const* c = req.params->if_contains("cursor");
    if (!c) return std::optional<mcp::list_position>{};
    if (!c->is_string()) return core::make_error("invalid_cursor", "invalid cursor: params.cursor must be a string");
    auto pos = cursors_->open(c->get_string(), list, principal_name);
    if (!pos) return pos.error();
    return std::optional<mcp::list_position>{std::move(*pos)};
}

asio::awaitable<mcp::handler_result> gateway::async_list(mcp::request const& req, mcp::request_context& ctx) {
    // Pages follow the upstreams in configuration order; a cursor names the upstream and how many
    // of its tools were shown, so a page boundary does not move when another upstream's list changes.
    auto start = cursor_of(req, "tools/list", ctx.principal);
    if (!start) co_return invalid_params(start.error().message);
    auto groups = co_await async_tools_by_upstream(ctx.principal);
    std::size_t g = 0, skip = 0;
    if (*start) {
        while (g < groups.size() && groups[g].first != (*start)->upstream) ++g;
        if (g == groups.size()) co_return invalid_params("invalid cursor: it points into an upstream this caller no longer sees");
        skip = static_cast<std::size_t>((*start)->skip);
    }
    auto const page = options_.list_page_size;
    json::array list;
    for (; g < groups.size(); ++g, skip = 0) {
        auto& tools = groups[g].second;
        for (std::size_t i = skip; i < tools.size(); ++i) {
            if (list.size() == page) {
                json::object result{{"tools", std::move(list)}};
                mcp::list_position next{groups[g].first, std::nullopt, i};
                result["nextCursor"] = cursors_->seal("tools/list", ctx.principal, next);
                co_return result;
            }
            list.push_back(std::move(tools[i]));
        }
    }
    co_return json::object{{"tools", std::move(list)}};
}

std::optional<std::string> gateway::run_of(std::string const& session_id, std::string const& principal) const {
    std::lock_guard lock(mutex_);
    auto key = session_id.empty() ? "principal:" + principal : "session:" + session_id;
    auto it = runs_.find(key);
    if (it == runs_.end() || !it->second.admitted) return std::nullopt;
    return it->second.run;
}

asio::awaitable<core::result<std::string>> gateway::async_admitted_run(std::string key, json::object admitted_body) {
    // The first caller admits the run; callers that arrive meanwhile wait until run_admitted is
    // durable, since the store refuses any other record before it. Admission is rare (once per
    // session), so waiting by polling a short timer is simpler than an async condition variable.
    std::string run;
    bool mine = false;
    for (int spins = 0;; ++spins) {
        {
            std::lock_guard lock(mutex_);
            auto it = runs_.find(key);
            if (it == runs_.end()) {
                // Once close_all_runs has begun, a run admitted now would be left running.
                if (stopping_) co_return core::make_error("stopping", "airlock is stopping: no run is admitted");
                run = ids_.next().str();
                runs_[key] = run_slot{run, false};
                mine = true;
            } else if (it->second.admitted) {
                co_return it->second.run;
            }
        }
        if (mine) break;
        if (spins > 5000) co_return core::make_error("journal_timeout", "the run of " + key + " was not admitted in time");
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(2));
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    admitted_body["mode"] = "gateway";
    if (!options_.instance.empty()) admitted_body["instance"] = options_.instance;
    admitted_body["admitted_at"] = rfc3339(options_.clock());
    auto admit = core::one_record(core::record_kind::run_admitted, std::move(admitted_body));
    auto r = co_await options_.journal->async_append(run, std::move(admit));
    bool ended_meanwhile = false, stopped_meanwhile = false;
    {
        std::lock_guard lock(mutex_);
        auto it = runs_.find(key);
        if (!r) {
            if (it != runs_.end() && it->second.run == run) runs_.erase(it);
            co_return r.error();
        }
        if (it != runs_.end() && it->second.run == run) {
            it->second.admitted = true;
        } else {
            // Its session ended, or airlock began stopping, during admission: close_all_runs did
            // not see it admitted, so it is sealed here.
            ended_meanwhile = true;
            stopped_meanwhile = stopping_;
        }
    }
    if (stopped_meanwhile) {
        close_run(run, "airlock stopped");
        co_return core::make_error("stopping", "airlock began stopping while the run was being admitted");
    }
    if (ended_meanwhile) {
        close_run(run, "session ended");
        co_return core::make_error("run_ended", "the session ended while its run was being admitted");
    }
    co_return run;
}

asio::awaitable<core::result<std::string>> gateway::async_run_for(mcp::request_context const& ctx,
                                                                  gateway_principal const& p) {
    auto key = ctx.session_id.empty() ? "principal:" + p.name : "session:" + ctx.session_id;
    // Every call but a session's first finds its run admitted: no admission body to build.
    {
        std::lock_guard lock(mutex_);
        if (auto it = runs_.find(key); it != runs_.end() && it->second.admitted) co_return it->second.run;
    }
    json::object body;
    body["agent"] = {{"name", p.grants.name}, {"version", p.grants.version}, {"digest", p.grants.digest}};
    body["input"] = {{"principal", p.name}, {"session", ctx.session_id}, {"era", mcp::to_string(ctx.client_era)},
                     {"protocol_version", ctx.protocol_version}};
    body["input_label"] = {{"trust", p.trusted ? "trusted" : "untrusted"}, {"sources", json::array{"principal:" + p.name}}};
    co_return co_await async_admitted_run(std::move(key), std::move(body));
}

asio::awaitable<core::result<std::string>> gateway::async_gateway_run() {
    json::object body;
    body["agent"] = {{"name", "airlock-gateway"}, {"version", options_.server_info.version}, {"digest", ""}};
    body["input"] = {{"purpose", "events of the gateway itself"}};
    body["input_label"] = {{"trust", "trusted"}, {"sources", json::array{"airlock"}}};
    std::string key = "gateway";
    co_return co_await async_admitted_run(std::move(key), std::move(body));
}

asio::awaitable<void> gateway::async_journal(std::string run, core::new_record rec) {
    auto batch = core::one_record(std::move(rec));
    auto r = co_await options_.journal->async_append(run, std::move(batch));
    if (!r) spdlog::error("journal: run {}: {}", run, r.error().message);
}

namespace {

using ask_function = std::function<asio::awaitable<mcp::handler_result>(std::string, json::object)>;

asio::awaitable<mcp::handler_result> async_ask_caller(std::string server, ask_function ask, mcp::request r) {
    if (!ask) {
        spdlog::info("upstream {}: {} refused: the client of that request cannot be asked", server, r.method);
        co_return mcp::error_object{mcp::rpc_code::internal_error,
                                    "the client of this request cannot be asked " + r.method, std::nullopt};
    }
    spdlog::debug("upstream {}: relaying {} to the client", server, r.method);
    json::object params = r.params ? std::move(*r.params) : json::object{};
    co_return co_await ask(std::move(r.method), std::move(params));
}

// A server->client request that arrives on the stream of one forwarded request (Streamable HTTP)
// goes to that request's client, whatever else is in flight to the same upstream.
mcp::server_request_handler ask_caller(std::string server, mcp::request_context const& ctx) {
    return [server = std::move(server), ask = ctx.ask_client](mcp::request r) {
        return async_ask_caller(server, ask, std::move(r));
    };
}

}  // namespace

asio::awaitable<mcp::handler_result> gateway::async_call(mcp::request const& req, mcp::request_context& ctx) {
    if (!req.params) co_return invalid_params("tools/call needs params");
    auto const* name_v = req.params->if_contains("name");
    if (!name_v || !name_v->is_string()) co_return invalid_params("tools/call params.name must be a string");
    std::string name(name_v->get_string());
    json::value arguments = json::object{};
    if (auto const* a = req.params->if_contains("arguments"); a && !a->is_null()) {
        if (!a->is_object()) co_return invalid_params("tools/call params.arguments must be an object");
        arguments = *a;
    }
    auto const* p = principal(ctx.principal);
    if (!p) co_return refusal_result(not_permitted_text);

    auto run = co_await async_run_for(ctx, *p);
    if (!run) co_return no_run(run.error(), "call");

    auto hold = hold_run(*run);

    auto deny = [&](std::string tool, core::deny_reason reason, std::string detail) -> asio::awaitable<mcp::handler_result> {
        json::object body{{"tool", tool}, {"reason", core::to_string(reason)}, {"detail", detail}};
        core::new_record rec{core::record_kind::policy_denied, std::move(body)};
        if (options_.metrics) options_.metrics->policy_denials.with({core::to_string(reason)}).inc();
        co_await async_journal(*run, std::move(rec));
        spdlog::info("denied: principal {} tool {}: {} ({})", p->name, tool, core::to_string(reason), detail);
        co_return refusal_result(not_permitted_text);
    };

    auto resolved = co_await async_resolve(*p, name);
    if (!resolved) co_return co_await deny(name, core::deny_reason::not_granted, resolved.error().message);
    auto entry = std::move(*resolved);
    if (!entry) {
        // A granted tool of an upstream that is down is not a policy matter: say it is unreachable
        // (the caller was allowed to know the tool exists) and leave the journal to real refusals.
        if (auto id = core::tool_id::from_wire_name(name); id && p->grants.grant_for(*id)) {
            auto const* down = upstream(id->server());
            bool refused = false;
            if (down) {
                std::lock_guard lock(mutex_);
                auto it = catalogues_.find(down->name);
                refused = it != catalogues_.end() && it->second.refused_by_egress;
            }
            if (refused) {
                // Refused as any call to a destination egress does not name is, before anything is sent.
                auto detail = "upstream " + down->name + ": its destination " + core::to_string(down->client->destination()) +
                              " is not in egress; it is never contacted";
                co_return co_await deny(id->uri(), core::deny_reason::destination_not_allowed, detail);
            }
            if (down && !upstream_available(down->name)) {
                spdlog::info("call to {} by {}: upstream {} is unavailable", id->uri(), p->name, down->name);
                // Refused locally, nothing sent: counted, but it has no upstream latency to observe.
                if (options_.metrics) options_.metrics->tool_calls.with({id->server(), id->name(), "unreachable"}).inc();
                co_return refusal_result("unreachable: upstream '" + down->name + "' is unavailable; retrying");
            }
        }
        auto detail = "no granted tool is exposed as '" + name + "'";
        co_return co_await deny(name, core::deny_reason::not_granted, detail);
    }
    auto const* grant = p->grants.grant_for(entry->id);
    auto const* up = upstream(entry->id.server());
    if (!entry->withheld.empty() || !grant || !up) {
        auto uri = entry->id.uri();
        std::string detail = entry->withheld.empty() ? "tool not served" : "tool withheld: " + entry->withheld;
        co_return co_await deny(uri, core::deny_reason::not_granted, detail);
    }
    if (entry->param_headers && ctx.param_headers) {
        // 2026-07-28 over HTTP: the Mcp-Param-* headers a proxy may have routed on must say what
        // the arguments say (SEP-2243); a mismatch is refused before any gate or journal record.
        auto checked = mcp::validate_param_headers(*ctx.param_headers, std::nullopt, arguments.as_object(), entry->spec);
        if (!checked) co_return std::move(checked.error().body.error);
    }

    core::tainted args;
    args.value = arguments;
    args.whole = label_of(*p);
    auto decision = core::evaluate(p->grants, options_.egress, entry->id, args, up->client->destination_of(entry->id));
    if (!decision) {
        auto uri = entry->id.uri();
        auto refusal = *decision.refusal();
        co_return co_await deny(uri, refusal.reason, refusal.detail);
    }

    std::uint32_t step;
    {
        std::lock_guard lock(mutex_);
        step = ++steps_[*run];
    }
    auto run_id = core::run_id::parse(*run);
    auto key = run_id ? core::effect_key::make(*run_id, step, core::effect_key::kind::tool).str()
                      : *run + "/" + std::to_string(step) + "/tool";
    auto now = std::chrono::floor<std::chrono::seconds>(options_.clock());
    auto prov = core::make_provenance(*run, key, p->grants.name, p->grants.digest, entry->id, arguments, now,
                                      options_.provenance_lifetime, nonce());
    if (!prov) co_return invalid_params(prov.error().message);
    if (options_.signer) {
        if (auto s = options_.signer->sign(*prov); !s) {
            spdlog::error("provenance signing failed: {}", s.error().message);
            co_return mcp::error_object{mcp::rpc_code::internal_error, "provenance signing failed", std::nullopt};
        }
    }

    // The start record is durable before the call leaves: a crash after this line reads as in doubt.
    json::object started{{"effect_key", key},       {"target", "tool"},        {"tool", entry->id.uri()},
                         {"arguments", arguments}, {"mutates", grant->mutates}, {"attempt", 1},
                         {"provenance", core::to_json(*prov)}, {"request_id", ctx.request_id_text}};
    auto start_batch = core::one_record(core::record_kind::effect_started, std::move(started));
    if (auto s = co_await options_.journal->async_append(*run, std::move(start_batch)); !s) {
        if (s.error().code == "record_too_large" || s.error().code == "too_deep") {
            // Every call is journaled with its arguments before it leaves; these do not fit.
            spdlog::warn("call {} by {} not made: its arguments are too large to journal", entry->id.uri(), p->name);
            co_return invalid_params("the call was not made: its arguments cannot be journaled (" + s.error().message + ")");
        }
        spdlog::error("journal: effect_started refused, call not made: {}", s.error().message);
        co_return mcp::error_object{mcp::rpc_code::internal_error, "the journal is unavailable", std::nullopt};
    }

    std::function<void(mcp::progress_params const&)> on_progress;
    if (ctx.progress && ctx.notify) {
        auto token = *ctx.progress;
        auto notify = ctx.notify;
        auto exec = co_await asio::this_coro::executor;
        on_progress = [token, notify, exec](mcp::progress_params const& pp) {
            json::object params{{"progressToken", mcp::to_json(token)}, {"progress", pp.progress}};
            if (pp.total) params["total"] = *pp.total;
            if (pp.message) params["message"] = *pp.message;
            mcp::notification n{"notifications/progress", std::move(params)};
            asio::co_spawn(exec, async_send_holding(notify, std::move(n)), asio::detached);
        };
    }
    auto tool = entry->id;
    std::optional<core::provenance> block = *prov;
    std::optional<std::chrono::milliseconds> deadline = options_.call_deadline;
    auto call_exec = co_await asio::this_coro::executor;
    // Log messages on the call's own stream (HTTP upstreams) go to the caller as they are.
    auto on_notification = relay_to(ctx, call_exec);
    inflight_guard in_flight(*this, up->name, ctx, call_exec);
    auto on_server_request = ask_caller(up->name, ctx);
    auto call = up->client->async_call_tool(tool, arguments, block, on_progress, deadline, on_notification,
                                            on_server_request);
    auto call_started = std::chrono::steady_clock::now();
    // Whether the caller's cancellation reached the call: a call it cut short fails with an error,
    // not a tool result, whether the cancellation ended the wait here or in the transport.
    auto cancelled = std::make_shared<cancellation_seen>();
    if (ctx.cancelled.is_connected())
        ctx.cancelled.assign([cancelled](asio::cancellation_type t) {
            cancelled->seen = true;
            cancelled->inner.emit(t);
        });
    auto finished = co_await async_cancellable(cancelled->inner.slot(), std::move(call));
    if (ctx.cancelled.is_connected()) ctx.cancelled.clear();
    auto call_took = std::chrono::steady_clock::now() - call_started;
    core::tool_result<mcp::call_tool_result> outcome =
        finished ? std::move(*finished)
                 : core::tool_result<mcp::call_tool_result>(core::tool_error{
                       core::tool_error_kind::timed_out, entry->id.uri(), "the client cancelled the call"});

    json::object result;
    core::new_record after;
    if (outcome) {
        result["content"] = outcome->content;
        if (outcome->structured_content) result["structuredContent"] = *outcome->structured_content;
        if (outcome->is_error) result["isError"] = *outcome->is_error;
        if (auto meta = relayed_meta(outcome->meta)) result["_meta"] = std::move(*meta);
        json::object done{{"effect_key", key},
                          {"output", journaled_output(result)},
                          {"output_label", {{"trust", "untrusted"}, {"sources", json::array{entry->id.uri()}}}}};
        after = {core::record_kind::effect_done, std::move(done)};
    } else {
        auto const& e = outcome.error();
        json::object failed{{"effect_key", key},
                            {"error_kind", core::to_string(e.kind)},
                            {"disposition", core::to_string(core::disposition_of(e.kind))},
                            {"detail", e.detail}};
        after = {core::record_kind::effect_failed, std::move(failed)};
        result = refusal_result(failure_text(e));
    }
    if (options_.metrics) {
        // A result with isError is the tool reporting failure: ToolError's tool_failed, as the
        // ToolClient interface reports it.
        std::string_view kind = !outcome                          ? core::to_string(outcome.error().kind)
                                : outcome->is_error.value_or(false) ? core::to_string(core::tool_error_kind::tool_failed)
                                                                    : std::string_view("ok");
        options_.metrics->tool_call(entry->id.server(), entry->id.name(), kind, call_took);
    }
    // Never the arguments or the result: they may carry what the caller considers secret.
    spdlog::debug("call {} by {}: {} after {} ms", entry->id.uri(), p->name,
                  outcome ? (outcome->is_error.value_or(false) ? "isError" : "ok") : core::to_string(outcome.error().kind),
                  std::chrono::duration_cast<std::chrono::milliseconds>(call_took).count());
    // The outcome record need not delay the reply: lost in a crash, the effect reads as in doubt,
    // which is the truth.
    auto exec = co_await asio::this_coro::executor;
    auto journal_outcome = async_journal_outcome(options_.journal, *run, std::move(after), std::move(hold));
    asio::co_spawn(exec, std::move(journal_outcome), asio::detached);
    // A call the cancellation cut short is an error, not a tool result: an endpoint that cut it off
    // says so to its client, and answers a call that landed (journaled as done) with its result.
    if (!outcome && cancelled->seen)
        co_return mcp::error_object{mcp::rpc_code::internal_error, "the call was cancelled before it finished", std::nullopt};
    co_return result;
}

// ---- relays ---------------------------------------------------------------------------------

std::shared_ptr<gateway::inflight> gateway::attributable_inflight(std::string const& server, unattributed& why) const {
    // A stdio upstream's message names no request, and may come after the call that caused it has
    // ended, while another principal's call is in flight. Guessing could hand one tenant's prompt
    // or log to another: an upstream several principals see attributes nothing; one that a single
    // principal sees goes to that principal's caller in flight, if there is exactly one.
    auto const seeing = std::ranges::count_if(options_.principals, [&](auto const& p) { return sees(p, server); });
    if (seeing > 1) {
        why = unattributed::shared_upstream;
        return nullptr;
    }
    std::lock_guard lock(mutex_);
    auto it = inflight_.find(server);
    if (it == inflight_.end() || it->second.empty()) {
        why = unattributed::nobody_in_flight;
        return nullptr;
    }
    auto const& latest = it->second.back();
    if (std::ranges::any_of(it->second, [&](auto const& f) { return f->caller != latest->caller; })) {
        why = unattributed::several_callers;
        return nullptr;
    }
    return latest;
}

std::function<void(mcp::notification const&)> gateway::relay_to(mcp::request_context const& ctx,
                                                                asio::any_io_executor exec) const {
    if (!ctx.notify) return {};
    auto notify = ctx.notify;
    auto token = ctx.progress;
    return [notify, token, exec](mcp::notification const& n) {
        mcp::notification out = n;
        if (n.method == "notifications/progress") {
            // The upstream reports under airlock's token; the client knows only its own.
            if (!token || !out.params) return;
            (*out.params)["progressToken"] = mcp::to_json(*token);
        }
        auto send = async_send_holding(notify, std::move(out));
        asio::co_spawn(exec, std::move(send), asio::detached);
    };
}

void gateway::upstream_notification(std::string const& server, mcp::notification const& n) {
    if (n.method == "notifications/tools/list_changed") {
        upstream_list_changed(server);
        return;
    }
    if (n.method == "notifications/resources/list_changed" || n.method == "notifications/prompts/list_changed") {
        spdlog::info("upstream {}: {}", server, n.method);
        broadcast(server, n);
        return;
    }
    if (n.method == "notifications/resources/updated") {
        auto const* uri = n.params ? n.params->if_contains("uri") : nullptr;
        if (!uri || !uri->is_string()) return;
        // Only to the streams of the sessions subscribed to it: another session of the same
        // principal did not ask, and may not be the same client at all.
        std::vector<notification_sink> sinks;
        {
            std::lock_guard lock(mutex_);
            auto it = subscribers_.find(std::string(uri->get_string()));
            if (it == subscribers_.end()) return;
            for (auto const& [id, l] : listeners_) {
                auto const* p = principal(l.principal);
                if (p && it->second.contains(l.session_key) && sees(*p, server)) sinks.push_back(l.sink);
            }
        }
        for (auto const& s : sinks) s(n);
        return;
    }
    if (n.method == "notifications/message") {
        // A stdio upstream's log message names no request: it belongs to the caller in flight, if
        // one can be told; with nobody in flight it is the upstream's own, for its one principal.
        auto why = unattributed::nobody_in_flight;
        if (auto f = attributable_inflight(server, why); f && f->notify && f->executor) {
            auto send = async_send_holding(f->notify, n);
            asio::co_spawn(f->executor, std::move(send), asio::detached);
            return;
        }
        if (why != unattributed::nobody_in_flight) {
            spdlog::debug("upstream {}: a log message that names no request is not relayed ({})", server,
                          why == unattributed::shared_upstream ? "several principals see the upstream"
                                                               : "several callers have requests in flight");
            return;
        }
        broadcast(server, n);
        return;
    }
    spdlog::debug("upstream {}: {} is not relayed", server, n.method);
}

asio::awaitable<mcp::handler_result> gateway::async_upstream_request(std::weak_ptr<gateway> weak, std::string server,
                                                                     mcp::request r) {
    auto self = weak.lock();
    std::shared_ptr<inflight> f;
    auto why = unattributed::nobody_in_flight;
    if (self) f = self->attributable_inflight(server, why);
    if (why == unattributed::several_callers || why == unattributed::shared_upstream) {
        spdlog::info("upstream {}: {} refused: it names no request, and {}", server, r.method,
                     why == unattributed::shared_upstream ? "several principals see the upstream"
                                                          : "requests of several callers are in flight there");
        co_return mcp::error_object{mcp::rpc_code::internal_error,
                                    r.method + " names no request, and airlock cannot tell which of its clients it is "
                                               "for: it is asked of none",
                                    std::nullopt};
    }
    if (!f || !f->ask_client) {
        spdlog::info("upstream {}: {} refused: no client request is in flight to ask", server, r.method);
        co_return mcp::error_object{mcp::rpc_code::internal_error,
                                    "no client request is in flight through airlock to relay " + r.method + " to",
                                    std::nullopt};
    }
    self.reset();  // the question may take long; it must not keep the gateway alive
    auto ask = f->ask_client;
    co_return co_await async_ask_caller(std::move(server), std::move(ask), std::move(r));
}

// ---- resources, prompts, completion, logging ------------------------------------------------

struct gateway::list_kind {
    std::string_view method;      // resources/list, ...
    std::string_view key;         // where the result keeps its items
    std::string_view capability;  // the server capability that offers them
};

namespace {
gateway_upstream const* find_upstream(std::vector<gateway_upstream const*> const& ups, std::string const& name) {
    for (auto const* u : ups)
        if (u->name == name) return u;
    return nullptr;
}
}  // namespace

std::string gateway::session_key(mcp::request_context const& ctx, gateway_principal const& p) const {
    return ctx.session_id.empty() ? "principal:" + p.name : "session:" + ctx.session_id;
}

asio::awaitable<mcp::handler_result> gateway::async_list_page(gateway_upstream const& up, list_kind const& kind,
                                                              json::object params) {
    std::string method(kind.method);
    mcp::forward_options fo;
    auto r = co_await up.client->async_forward(std::move(method), std::move(params), std::move(fo));
    if (is_method_not_found(r)) co_return json::object{{kind.key, json::array{}}};
    if (!r) co_return r;
    auto* items = r->if_contains(kind.key);
    if (!items || !items->is_array())
        co_return mcp::error_object{mcp::rpc_code::internal_error,
                                    "upstream " + up.name + ": " + std::string(kind.method) + " returned no " +
                                        std::string(kind.key) + " array",
                                    std::nullopt};
    std::lock_guard lock(mutex_);
    for (auto& item : items->as_array()) {
        auto* o = item.if_object();
        if (!o) continue;
        auto const* name = o->if_contains("name");
        // Prompt and resource descriptions reach the model as tool descriptions do: no hidden text.
        if (core::hidden_characters removed; core::remove_hidden_characters(item, removed) > 0) {
            auto const what = std::string(kind.key) + " " + (name && name->is_string() ? std::string(name->get_string()) : "?");
            if (reported_definitions_.insert("hidden " + up.name + "/" + what + " " + core::describe(removed)).second)
                spdlog::warn("upstream {}: {} holds characters a reader cannot see ({}); they are removed from what "
                             "callers are shown",
                             up.name, what, core::describe(removed));
        }
        if (kind.key == "resources") {
            if (auto const* uri = o->if_contains("uri"); uri && uri->is_string()) {
                auto& owner = resource_owner_[std::string(uri->get_string())];
                if (owner.empty() || first_configured(up.name, owner)) {
                    owner = up.name;
                } else if (owner != up.name &&
                           reported_definitions_.insert("resource " + owner + " " + up.name + " " + std::string(uri->get_string())).second) {
                    spdlog::warn("resource {} is listed by upstreams {} and {}; reads go to {}, configured first",
                                 std::string(uri->get_string()), owner, up.name, owner);
                }
            }
        } else if (kind.key == "resourceTemplates") {
            if (auto const* t = o->if_contains("uriTemplate"); t && t->is_string()) {
                std::pair<std::string, std::string> entry{std::string(t->get_string()), up.name};
                if (std::find(template_owner_.begin(), template_owner_.end(), entry) == template_owner_.end())
                    template_owner_.push_back(std::move(entry));
            }
        } else if (kind.key == "prompts" && name && name->is_string()) {
            std::string own(name->get_string());
            auto exposed = up.prefixed ? up.name + "__" + own : own;
            auto& owner = prompt_owner_[exposed];
            if (owner.first.empty() || first_configured(up.name, owner.first)) {
                owner = {up.name, own};
            } else if (owner.first != up.name &&
                       reported_definitions_.insert("prompt " + owner.first + " " + up.name + " " + exposed).second) {
                spdlog::warn("prompt {} is offered by upstreams {} and {}; gets go to {}, configured first", exposed,
                             owner.first, up.name, owner.first);
            }
        }
        // URIs are addresses and stay as they are; names are labels and show their server when prefixed.
        if (up.prefixed && name && name->is_string()) (*o)["name"] = up.name + "__" + std::string(name->get_string());
    }
    co_return r;
}

asio::awaitable<json::array> gateway::async_list_all(gateway_upstream const& up, list_kind const& kind) {
    json::array all;
    std::optional<std::string> cursor;
    // Bounded: a server that pages forever is cut off rather than followed forever.
    for (int page = 0; page < 100; ++page) {
        json::object params;
        if (cursor) params["cursor"] = *cursor;
        auto r = co_await async_list_page(up, kind, std::move(params));
        if (!r) {
            spdlog::warn("upstream {}: {} failed ({}); its items are left out", up.name, kind.method, r.error().message);
            break;
        }
        for (auto& item : r->at(kind.key).as_array()) all.push_back(std::move(item));
        auto const* next = r->if_contains("nextCursor");
        if (!next || !next->is_string() || next->get_string().empty()) break;
        cursor = std::string(next->get_string());
    }
    co_return all;
}

asio::awaitable<mcp::handler_result> gateway::async_list_passthrough(list_kind const& kind, mcp::request const& req,
                                                                    gateway_principal const& p) {
    // One list merged from the upstreams the caller sees, in configuration order, in pages of
    // list_page_size: a cursor names the upstream, that upstream's own cursor for the page it is in
    // and how many of that page's items were shown, so upstream pages of any size line up with ours.
    std::string const list(kind.method);
    auto start = cursor_of(req, list, p.name);
    if (!start) co_return invalid_params(start.error().message);
    std::vector<gateway_upstream const*> ups;
    for (auto const* up : visible_upstreams(p)) {
        if (passed_over(*up)) continue;  // one that cannot be reached does not hold up the others
        auto known = up->client->server_capabilities();
        if (!known || known->contains(kind.capability)) ups.push_back(up);
    }
    std::size_t u = 0;
    std::optional<std::string> cursor;
    std::size_t skip = 0;
    if (*start) {
        while (u < ups.size() && ups[u]->name != (*start)->upstream) ++u;
        if (u == ups.size()) co_return invalid_params("invalid cursor: it points into an upstream this caller no longer sees");
        cursor = (*start)->cursor;
        skip = static_cast<std::size_t>((*start)->skip);
    }
    auto const page = options_.list_page_size;
    json::array out;
    // Bounded: upstream pages that never end (or are empty forever) are cut off, not followed.
    for (int fetched = 0; u < ups.size() && fetched < 100; ++fetched) {
        json::object params;
        if (cursor) params["cursor"] = *cursor;
        auto r = co_await async_list_page(*ups[u], kind, std::move(params));
        if (!r) {
            // One upstream down must not break the others' lists.
            spdlog::warn("upstream {}: {} failed ({}); its items are left out", ups[u]->name, kind.method, r.error().message);
            ++u, cursor.reset(), skip = 0;
            continue;
        }
        auto& items = r->at(kind.key).as_array();
        std::optional<std::string> next_upstream_cursor;
        if (auto const* n = r->if_contains("nextCursor"); n && n->is_string() && !n->get_string().empty())
            next_upstream_cursor = std::string(n->get_string());
        for (std::size_t i = std::min(skip, items.size()); i < items.size(); ++i) {
            if (out.size() == page) {
                json::object result{{kind.key, std::move(out)}};
                mcp::list_position next{ups[u]->name, cursor, i};
                result["nextCursor"] = cursors_->seal(list, p.name, next);
                co_return result;
            }
            out.push_back(std::move(items[i]));
        }
        skip = 0;
        if (next_upstream_cursor) {
            cursor = std::move(next_upstream_cursor);
        } else {
            ++u;
            cursor.reset();
        }
        if (out.size() == page && u < ups.size()) {
            // Full at an upstream page's end: whether anything follows, the next request finds out.
            json::object result{{kind.key, std::move(out)}};
            mcp::list_position next{ups[u]->name, cursor, 0};
            result["nextCursor"] = cursors_->seal(list, p.name, next);
            co_return result;
        }
    }
    co_return json::object{{kind.key, std::move(out)}};
}

namespace {
constexpr std::string_view resources_key = "resources";
}

asio::awaitable<void> gateway::async_refresh(gateway_principal const& p, list_kind const& kind) {
    for (auto const* up : visible_upstreams(p)) {
        auto known = up->client->server_capabilities();
        if ((known && !known->contains(kind.capability)) || passed_over(*up)) continue;
        co_await async_list_all(*up, kind);
    }
}

asio::awaitable<gateway_upstream const*> gateway::async_resource_owner(gateway_principal const& p, std::string const& uri) {
    auto ups = visible_upstreams(p);
    // An upstream that declared no resources has none to read: not found, rather than its -32601.
    std::erase_if(ups, [](gateway_upstream const* u) {
        auto known = u->client->server_capabilities();
        return known && !known->contains("resources");
    });
    if (ups.empty()) co_return nullptr;
    if (ups.size() == 1) co_return ups.front();
    auto lookup = [&]() -> gateway_upstream const* {
        std::lock_guard lock(mutex_);
        if (auto it = resource_owner_.find(uri); it != resource_owner_.end())
            if (auto const* u = find_upstream(ups, it->second)) return u;
        for (auto const& [tmpl, owner] : template_owner_) {
            auto const* u = find_upstream(ups, owner);
            if (!u) continue;
            if (tmpl == uri) return u;  // completion refers to a template by its own text
            auto pattern = template_pattern(tmpl);
            if (pattern && std::regex_match(uri, *pattern)) return u;
        }
        return nullptr;
    };
    if (auto const* u = lookup()) co_return u;
    // Not seen yet: list once, then decide.
    static constexpr list_kind resources{"resources/list", resources_key, "resources"};
    static constexpr list_kind templates{"resources/templates/list", "resourceTemplates", "resources"};
    co_await async_refresh(p, resources);
    co_await async_refresh(p, templates);
    co_return lookup();
}

asio::awaitable<std::optional<std::pair<gateway_upstream const*, std::string>>> gateway::async_prompt_owner(
    gateway_principal const& p, std::string const& exposed) {
    using owner = std::pair<gateway_upstream const*, std::string>;
    auto ups = visible_upstreams(p);
    if (ups.empty()) co_return std::nullopt;
    // A prefixed name says its server.
    for (auto const* u : ups) {
        auto prefix = u->name + "__";
        if (u->prefixed && exposed.size() > prefix.size() && exposed.starts_with(prefix))
            co_return owner{u, exposed.substr(prefix.size())};
    }
    if (ups.size() == 1) {
        if (ups.front()->prefixed) co_return std::nullopt;
        co_return owner{ups.front(), exposed};
    }
    auto lookup = [&]() -> std::optional<owner> {
        std::lock_guard lock(mutex_);
        auto it = prompt_owner_.find(exposed);
        if (it == prompt_owner_.end()) return std::nullopt;
        auto const* u = find_upstream(ups, it->second.first);
        if (!u || u->prefixed) return std::nullopt;
        return owner{u, it->second.second};
    };
    if (auto o = lookup()) co_return o;
    static constexpr list_kind prompts{"prompts/list", "prompts", "prompts"};
    co_await async_refresh(p, prompts);
    co_return lookup();
}

asio::awaitable<mcp::handler_result> gateway::async_forward(gateway_upstream const& up, std::string method,
                                                            json::object params, mcp::request_context& ctx) {
    auto exec = co_await asio::this_coro::executor;
    inflight_guard in_flight(*this, up.name, ctx, exec);
    mcp::forward_options fo;
    fo.deadline = options_.call_deadline;
    fo.on_notification = relay_to(ctx, exec);
    fo.on_server_request = ask_caller(up.name, ctx);
    auto op = up.client->async_forward(std::move(method), std::move(params), std::move(fo));
    auto r = co_await async_cancellable(ctx.cancelled, std::move(op));
    if (!r) co_return mcp::error_object{mcp::rpc_code::internal_error, "the request was cancelled", std::nullopt};
    co_return std::move(*r);
}

asio::awaitable<core::result<void>> gateway::async_note(mcp::request_context const& ctx, gateway_principal const& p,
                                                        json::object body) {
    auto run = co_await async_run_for(ctx, p);
    if (!run) co_return run.error();
    auto hold = hold_run(*run);
    body["principal"] = p.name;
    auto batch = core::one_record(core::record_kind::note, std::move(body));
    auto r = co_await options_.journal->async_append(*run, std::move(batch));
    if (!r) co_return r.error();
    co_return core::result<void>{};
}

asio::awaitable<mcp::handler_result> gateway::async_subscribe(gateway_principal const& p, std::string const& uri,
                                                              bool subscribe, mcp::request_context& ctx) {
    auto key = session_key(ctx, p);
    std::string method = subscribe ? "resources/subscribe" : "resources/unsubscribe";
    if (!subscribe) {
        std::string server;
        {
            std::lock_guard lock(mutex_);
            auto it = subscribers_.find(uri);
            if (it == subscribers_.end() || !it->second.erase(key)) co_return json::object{};
            if (!it->second.empty()) co_return json::object{};
            subscribers_.erase(it);
            server = subscribed_upstream_[uri];
            subscribed_upstream_.erase(uri);
        }
        // The last subscriber left: the upstream may stop reporting.
        auto const* up = upstream(server);
        if (!up) co_return json::object{};
        json::object params{{"uri", uri}};
        co_return co_await async_forward(*up, method, std::move(params), ctx);
    }
    auto const* up = co_await async_resource_owner(p, uri);
    if (!up) co_return no_such_resource(uri);
    {
        std::lock_guard lock(mutex_);
        auto it = subscribers_.find(uri);
        if (it != subscribers_.end() && !it->second.empty()) {
            it->second[key] = p.name;  // the upstream already reports this URI
            co_return json::object{};
        }
    }
    json::object params{{"uri", uri}};
    auto r = co_await async_forward(*up, method, std::move(params), ctx);
    if (!r) co_return r;
    std::lock_guard lock(mutex_);
    subscribers_[uri][key] = p.name;
    subscribed_upstream_[uri] = up->name;
    co_return r;
}

asio::awaitable<mcp::handler_result> gateway::async_set_level(gateway_principal const& p, json::object params,
                                                              mcp::request_context& ctx) {
    // One upstream session serves every client: the level set here is the one they all get.
    std::optional<mcp::error_object> failure;
    bool any = false;
    for (auto const* up : visible_upstreams(p)) {
        auto known = up->client->server_capabilities();
        if ((known && !known->contains("logging")) || passed_over(*up)) continue;
        std::string method = "logging/setLevel";
        auto r = co_await async_forward(*up, std::move(method), params, ctx);
        if (r) {
            any = true;
        } else if (!is_method_not_found(r)) {
            spdlog::warn("upstream {}: logging/setLevel: {}", up->name, r.error().message);
            if (!failure) failure = r.error();
        }
    }
    if (!any && failure) co_return *failure;
    co_return json::object{};
}

asio::awaitable<mcp::handler_result> gateway::async_passthrough(mcp::request const& req, mcp::request_context& ctx) {
    static constexpr list_kind resources{"resources/list", resources_key, "resources"};
    static constexpr list_kind templates{"resources/templates/list", "resourceTemplates", "resources"};
    static constexpr list_kind prompts{"prompts/list", "prompts", "prompts"};
    auto const* p = principal(ctx.principal);
    auto const& m = req.method;
    json::object params = req.params ? *req.params : json::object{};
    auto string_param = [&](char const* name) -> std::optional<std::string> {
        auto const* v = params.if_contains(name);
        if (!v || !v->is_string()) return std::nullopt;
        return std::string(v->get_string());
    };

    if (m == "resources/list" || m == "resources/templates/list" || m == "prompts/list") {
        auto const& kind = m == "prompts/list" ? prompts : m == "resources/list" ? resources : templates;
        if (!p) co_return json::object{{kind.key, json::array{}}};
        co_return co_await async_list_passthrough(kind, req, *p);
    }

    if (m == "resources/read" || m == "resources/subscribe" || m == "resources/unsubscribe") {
        auto uri = string_param("uri");
        if (!uri) co_return invalid_params(m + " params.uri must be a string");
        if (!p) co_return no_such_resource(*uri);
        if (m != "resources/read") co_return co_await async_subscribe(*p, *uri, m == "resources/subscribe", ctx);
        auto const* up = co_await async_resource_owner(*p, *uri);
        if (!up) co_return no_such_resource(*uri);
        json::object note{{"text", "resources/read"}, {"server", up->name}, {"uri", *uri}};
        if (auto j = co_await async_note(ctx, *p, std::move(note)); !j) co_return no_run(j.error(), "resources/read");
        co_return co_await async_forward(*up, m, std::move(params), ctx);
    }

    if (m == "prompts/get") {
        auto name = string_param("name");
        if (!name) co_return invalid_params("prompts/get params.name must be a string");
        auto unknown = invalid_params("unknown prompt: " + *name);
        if (!p) co_return unknown;
        auto owner = co_await async_prompt_owner(*p, *name);
        if (!owner) co_return unknown;
        json::object note{{"text", "prompts/get"}, {"server", owner->first->name}, {"prompt", *name}};
        if (auto const* a = params.if_contains("arguments")) note["arguments"] = *a;
        if (auto j = co_await async_note(ctx, *p, std::move(note)); !j) co_return no_run(j.error(), "prompts/get");
        params["name"] = owner->second;
        co_return co_await async_forward(*owner->first, m, std::move(params), ctx);
    }

    if (m == "completion/complete") {
        auto* ref = params.if_contains("ref");
        if (!ref || !ref->is_object()) co_return invalid_params("completion/complete params.ref must be an object");
        auto& r = ref->as_object();
        auto const* type = r.if_contains("type");
        auto unknown = invalid_params("completion/complete: unknown reference");
        if (!p || !type || !type->is_string()) co_return unknown;
        if (type->get_string() == "ref/prompt") {
            auto const* n = r.if_contains("name");
            if (!n || !n->is_string()) co_return unknown;
            std::string prompt_name(n->get_string());
            auto owner = co_await async_prompt_owner(*p, prompt_name);
            if (!owner) co_return unknown;
            r["name"] = owner->second;
            co_return co_await async_forward(*owner->first, m, std::move(params), ctx);
        }
        if (type->get_string() == "ref/resource") {
            auto const* u = r.if_contains("uri");
            if (!u || !u->is_string()) co_return unknown;
            std::string ref_uri(u->get_string());
            auto const* up = co_await async_resource_owner(*p, ref_uri);
            if (!up) co_return unknown;
            co_return co_await async_forward(*up, m, std::move(params), ctx);
        }
        co_return unknown;
    }

    if (m == "logging/setLevel") {
        if (!string_param("level")) co_return invalid_params("logging/setLevel params.level must be a string");
        if (!p) co_return json::object{};
        co_return co_await async_set_level(*p, std::move(params), ctx);
    }

    // airlock itself is what the client pings (the endpoints answer it before it gets here).
    if (m == "ping") co_return json::object{};

    co_return mcp::error_object{mcp::rpc_code::method_not_found, "method not found: " + m, std::nullopt};
}

asio::awaitable<void> gateway::async_connect_upstreams() {
    // All at once: an upstream that is slow to start (or never answers) delays none of the others.
    // Each read connects as it lists; a failure is logged there and retried on demand.
    auto here = co_await asio::this_coro::executor;
    start_stale_reads(options_.executor ? options_.executor : here);
    for (auto const& up : options_.upstreams) co_await async_catalogue(up, catalogue_wait::merged);
}

std::vector<std::pair<std::string, gateway::upstream_state>> gateway::upstream_states() const {
    std::vector<std::pair<std::string, upstream_state>> out;
    std::lock_guard lock(mutex_);
    for (auto const& up : options_.upstreams) {
        auto it = catalogues_.find(up.name);
        auto state = it == catalogues_.end()          ? upstream_state::unknown
                     : it->second.refused_by_egress ? upstream_state::refused
                     : it->second.failed            ? upstream_state::down
                     : it->second.answered          ? upstream_state::up
                                                    : upstream_state::unknown;
        out.emplace_back(up.name, state);
    }
    return out;
}

asio::awaitable<void> gateway::async_probe_upstreams() {
    // Stale catalogues are read in the background, and every upstream is pinged at the same time:
    // one that hangs leaves the states of the others up to date.
    auto here = co_await asio::this_coro::executor;
    auto exec = options_.executor ? options_.executor : here;
    start_stale_reads(exec);
    auto pending = std::make_shared<std::atomic<std::size_t>>(options_.upstreams.size());
    for (auto const& up : options_.upstreams)
        asio::co_spawn(exec, async_probe_one(shared_from_this(), &up, pending), asio::detached);
    while (pending->load() > 0) {
        asio::steady_timer t(here, std::chrono::milliseconds(10));
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

asio::awaitable<void> gateway::async_probe_one(std::shared_ptr<gateway> self, gateway_upstream const* upstream,
                                               std::shared_ptr<std::atomic<std::size_t>> pending) {
    struct counted {
        std::shared_ptr<std::atomic<std::size_t>> n;
        ~counted() { --*n; }
    } done{std::move(pending)};
    auto const& up = *upstream;
    auto now = std::chrono::steady_clock::now();
    // A fresh snapshot says nothing of an upstream that has gone away since (an HTTP server is
    // not watched between requests): one that was up is pinged, at most every few seconds.
    bool ping = false;
    {
        std::lock_guard lock(self->mutex_);
        auto& c = self->catalogues_[up.name];
        if (!c.failed && c.answered && now >= c.next_ping) {
            c.next_ping = now + ping_interval;
            ping = true;
        }
    }
    if (!ping) co_return;
    auto alive = co_await up.client->async_ping(ping_deadline);
    {
        // A busy server may miss one ping's deadline: only a second miss in a row counts, while
        // a server that cannot be reached at all counts at once.
        std::lock_guard lock(self->mutex_);
        auto& c = self->catalogues_[up.name];
        if (alive) {
            c.missed_pings = 0;
            co_return;
        }
        if (alive.error().kind == core::tool_error_kind::timed_out && ++c.missed_pings < 2) co_return;
        c.missed_pings = 0;
    }
    spdlog::warn("upstream {}: does not answer a ping ({}: {}); its tools are unavailable, retrying in {}s", up.name,
                 core::to_string(alive.error().kind), alive.error().detail, retry_backoff.count());
    std::lock_guard lock(self->mutex_);
    auto& c = self->catalogues_[up.name];
    c.entries = std::make_shared<std::vector<catalogue_entry> const>();
    c.failed = true;
    c.retry_after = std::chrono::steady_clock::now() + retry_backoff;
}

asio::awaitable<mcp::handler_result> gateway::async_handle(mcp::request req, mcp::request_context& ctx) {
    if (req.method == "tools/list") co_return co_await async_list(req, ctx);
    if (req.method == "tools/call") co_return co_await async_call(req, ctx);
    co_return co_await async_passthrough(req, ctx);
}

asio::awaitable<void> gateway::async_notification(mcp::notification, mcp::request_context&) { co_return; }

namespace {

asio::awaitable<void> async_seal_session_run(std::shared_ptr<core::journal_store> journal, std::string run,
                                             std::string reason) {
    std::string status = "succeeded";
    auto r = co_await journal->async_seal(run, status, reason);
    if (!r) spdlog::warn("journal: sealing run {}: {}", run, r.error().message);
}

asio::awaitable<void> async_unsubscribe_upstream(std::shared_ptr<mcp::mcp_client> client, std::string uri) {
    std::string method = "resources/unsubscribe";
    json::object params{{"uri", uri}};
    mcp::forward_options fo;
    auto r = co_await client->async_forward(std::move(method), std::move(params), std::move(fo));
    if (!r) spdlog::debug("upstream {}: unsubscribing {}: {}", client->server_name(), uri, r.error().message);
}

}  // namespace

void gateway::session_closed(std::string const& session_id) {
    std::optional<std::string> run;
    std::vector<std::pair<std::shared_ptr<mcp::mcp_client>, std::string>> unsubscribe;
    {
        std::lock_guard lock(mutex_);
        auto key = "session:" + session_id;
        if (auto it = runs_.find(key); it != runs_.end()) {
            if (it->second.admitted) run = it->second.run;
            runs_.erase(it);
        }
        // Its subscriptions end with it; an upstream nobody else listens to may stop reporting.
        for (auto it = subscribers_.begin(); it != subscribers_.end();) {
            if (!it->second.erase(key) || !it->second.empty()) {
                ++it;
                continue;
            }
            if (auto const* up = upstream(subscribed_upstream_[it->first])) unsubscribe.emplace_back(up->client, it->first);
            subscribed_upstream_.erase(it->first);
            it = subscribers_.erase(it);
        }
    }
    // Both run on their own: the endpoint is not waiting for them.
    if (!options_.executor) return;
    for (auto& [client, uri] : unsubscribe)
        asio::co_spawn(options_.executor, async_unsubscribe_upstream(client, uri), asio::detached);
    if (run) close_run(*run, "session ended");
}

std::shared_ptr<void> gateway::hold_run(std::string const& run) {
    {
        std::lock_guard lock(mutex_);
        ++open_calls_[run];
    }
    std::weak_ptr<gateway> weak = weak_from_this();
    return std::shared_ptr<void>(nullptr, [weak, run](void*) {
        if (auto self = weak.lock()) self->call_ended(run);
    });
}

void gateway::call_ended(std::string const& run) {
    std::lock_guard lock(mutex_);
    auto it = open_calls_.find(run);
    if (it == open_calls_.end() || --it->second > 0) return;
    open_calls_.erase(it);
    if (auto c = closing_.find(run); c != closing_.end()) {
        auto reason = std::move(c->second);
        closing_.erase(c);
        seal(run, std::move(reason));
    }
}

void gateway::close_run(std::string const& run, std::string reason) {
    std::lock_guard lock(mutex_);
    // A call still in the run would find it sealed when it journals its outcome: wait for it.
    if (open_calls_.contains(run)) closing_.emplace(run, std::move(reason));
    else seal(run, std::move(reason));
}

void gateway::seal(std::string run, std::string reason) {
    if (!options_.executor) return;
    ++sealing_;
    std::weak_ptr<gateway> weak = weak_from_this();
    auto done = [weak](std::exception_ptr) {
        if (auto self = weak.lock()) {
            std::lock_guard lock(self->mutex_);
            --self->sealing_;
        }
    };
    // Posted: the caller holds mutex_, and the seal must not begin (or complete) under it.
    auto exec = options_.executor;
    asio::post(exec, [exec, journal = options_.journal, run = std::move(run), reason = std::move(reason),
                      done = std::move(done)]() mutable {
        asio::co_spawn(exec, async_seal_session_run(journal, std::move(run), std::move(reason)), std::move(done));
    });
}

void gateway::close_all_runs() {
    std::vector<std::string> admitted;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        for (auto const& [key, slot] : runs_)
            if (slot.admitted) admitted.push_back(slot.run);
        runs_.clear();
    }
    for (auto const& run : admitted) close_run(run, "airlock stopped");
}

asio::awaitable<void> gateway::async_runs_closed(std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (std::chrono::steady_clock::now() < until) {
        {
            std::lock_guard lock(mutex_);
            if (closing_.empty() && sealing_ == 0) co_return;
        }
        t.expires_after(std::chrono::milliseconds(10));
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    std::lock_guard lock(mutex_);
    spdlog::warn("stopping: {} runs still had calls in flight and {} seals were unfinished; those runs are left unsealed",
                 closing_.size(), sealing_);
}

}  // namespace airlock::service
