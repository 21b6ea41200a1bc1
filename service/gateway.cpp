#include "service/gateway.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <chrono>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// Catalogues are re-read after this long, and a failed read is retried after the backoff.
constexpr auto catalogue_ttl = std::chrono::seconds(30);
constexpr auto retry_backoff = std::chrono::seconds(5);

void csprng(std::uint8_t* out, std::size_t n) {
    if (RAND_bytes(out, static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
    auto secs = std::chrono::floor<std::chrono::seconds>(t);
    auto day = std::chrono::floor<std::chrono::days>(secs);
    std::chrono::year_month_day ymd{day};
    std::chrono::hh_mm_ss hms{secs - day};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02lld:%02lld:%02lldZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<long long>(hms.hours().count()), static_cast<long long>(hms.minutes().count()),
                  static_cast<long long>(hms.seconds().count()));
    return buf;
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

}  // namespace

std::string tool_definition_digest(mcp::tool const& t) {
    json::object def{{"name", t.name},
                     {"description", t.description ? json::value(*t.description) : json::value(nullptr)},
                     {"inputSchema", t.input_schema}};
    auto text = core::canonical(def);
    // A schema that cannot be canonicalized still needs a stable digest; its serialization is one.
    return core::sha256_hex(text ? *text : json::serialize(def));
}

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
            if (n.method != "notifications/tools/list_changed") return;
            if (auto self = weak.lock()) self->upstream_list_changed(server);
        });
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
           options_.random) {}

mcp::implementation gateway::server_info() const { return options_.server_info; }

json::object gateway::server_capabilities(std::string const&) const {
    return {{"tools", {{"listChanged", true}}}};
}

gateway_principal const* gateway::principal(std::string const& name) const {
    for (auto const& p : options_.principals)
        if (p.name == name) return &p;
    return nullptr;
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

void gateway::upstream_list_changed(std::string const& server) {
    std::vector<notification_sink> sinks;
    {
        std::lock_guard lock(mutex_);
        catalogues_[server].fresh = false;
        for (auto const& [id, l] : listeners_) sinks.push_back(l.second);
    }
    spdlog::info("upstream {}: tool list changed", server);
    mcp::notification n{"notifications/tools/list_changed", std::nullopt};
    for (auto const& s : sinks) s(n);
}

std::uint64_t gateway::add_listener(std::string const& principal, notification_sink sink) {
    std::lock_guard lock(mutex_);
    auto id = ++next_listener_;
    listeners_[id] = {principal, std::move(sink)};
    return id;
}

void gateway::remove_listener(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    listeners_.erase(id);
}

asio::awaitable<std::vector<gateway::catalogue_entry>> gateway::async_catalogue(gateway_upstream const& up) {
    auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(mutex_);
        auto& c = catalogues_[up.name];
        if (c.fresh || now < c.retry_after) co_return c.entries;
    }
    auto listed = co_await up.client->async_list_tools();
    if (!listed) {
        // One upstream down must not break the others: its tools drop out until it answers again.
        spdlog::warn("upstream {}: tools unavailable ({}: {}); retrying in {}s", up.name, core::to_string(listed.error().kind),
                     listed.error().detail, retry_backoff.count());
        std::lock_guard lock(mutex_);
        auto& c = catalogues_[up.name];
        c.entries.clear();
        c.fresh = false;
        c.retry_after = now + retry_backoff;
        co_return c.entries;
    }
    std::vector<catalogue_entry> entries;
    for (auto& t : *listed) {
        catalogue_entry e{t.id, up.prefixed ? t.id.wire_name() : t.spec.name, t.spec, false};
        if (options_.pins) {
            auto digest = tool_definition_digest(t.spec);
            // Arguments are named before co_await throughout: GCC 12 mishandles temporaries there.
            auto pin_key = up.name + "/" + t.upstream_name;
            auto verdict = co_await options_.pins->async_check_pin(pin_key, digest);
            if (!verdict) {
                spdlog::error("upstream {}: cannot check the pin of {}: {}; withheld", up.name, t.upstream_name,
                              verdict.error().message);
                e.withheld = true;
            } else if (*verdict == core::pin_verdict::changed) {
                // Rug-pull protection: a tool whose definition changed under the operator is withheld
                // until someone accepts the new definition (airlock pins accept).
                spdlog::warn("upstream {}: the definition of {} changed since it was pinned; withheld until accepted",
                             up.name, t.upstream_name);
                e.withheld = true;
            } else if (*verdict == core::pin_verdict::first_seen) {
                spdlog::info("upstream {}: pinned {} ({})", up.name, t.upstream_name, digest.substr(0, 12));
            }
        }
        entries.push_back(std::move(e));
    }
    std::lock_guard lock(mutex_);
    auto& c = catalogues_[up.name];
    c.entries = std::move(entries);
    c.fresh = true;
    // Re-read after the TTL even without list_changed: not every server sends it.
    c.retry_after = now + catalogue_ttl;
    auto copy = c.entries;
    // A fresh catalogue is marked stale again after the TTL by the next reader.
    co_return copy;
}

asio::awaitable<std::vector<json::object>> gateway::async_tools_for(std::string principal_name) {
    std::vector<json::object> out;
    auto const* p = principal(principal_name);
    if (!p) co_return out;
    for (auto const& up : options_.upstreams) {
        auto entries = co_await async_catalogue(up);
        for (auto const& e : entries) {
            if (e.withheld) continue;
            auto const* grant = p->grants.grant_for(e.id);
            if (!grant) continue;
            auto t = json::value_from(e.spec).as_object();
            t["name"] = e.exposed_name;
            if (!grant->description.empty()) t["description"] = grant->description;
            out.push_back(std::move(t));
        }
    }
    co_return out;
}

asio::awaitable<std::optional<gateway::catalogue_entry>> gateway::async_resolve(gateway_principal const& p,
                                                                               std::string const& name) {
    // Byte-for-byte among the principal's grants: no trimming, no case folding, no near misses.
    for (auto const& up : options_.upstreams) {
        auto entries = co_await async_catalogue(up);
        for (auto const& e : entries)
            if (e.exposed_name == name && p.grants.grant_for(e.id)) co_return e;
    }
    co_return std::nullopt;
}

asio::awaitable<mcp::handler_result> gateway::async_list(mcp::request const& req, mcp::request_context& ctx) {
    auto tools = co_await async_tools_for(ctx.principal);
    // Pagination over the merged catalogue: the cursor is an offset into it, opaque to clients.
    constexpr std::size_t page = 200;
    std::size_t start = 0;
    if (req.params) {
        if (auto const* c = req.params->if_contains("cursor")) {
            auto const* s = c->if_string();
            if (!s || s->size() < 3 || !s->starts_with("o:")) co_return invalid_params("invalid cursor");
            try {
                start = std::stoul(std::string(s->subview(2)));
            } catch (...) {
                co_return invalid_params("invalid cursor");
            }
        }
    }
    json::array list;
    for (std::size_t i = start; i < tools.size() && i < start + page; ++i) list.push_back(tools[i]);
    json::object result{{"tools", std::move(list)}};
    if (start + page < tools.size()) result["nextCursor"] = "o:" + std::to_string(start + page);
    co_return result;
}

std::optional<std::string> gateway::run_of(std::string const& session_id, std::string const& principal) const {
    std::lock_guard lock(mutex_);
    auto key = session_id.empty() ? "principal:" + principal : "session:" + session_id;
    auto it = runs_.find(key);
    if (it == runs_.end()) return std::nullopt;
    return it->second;
}

asio::awaitable<core::result<std::string>> gateway::async_run_for(mcp::request_context const& ctx,
                                                                  gateway_principal const& p) {
    auto key = ctx.session_id.empty() ? "principal:" + p.name : "session:" + ctx.session_id;
    std::string run;
    {
        std::lock_guard lock(mutex_);
        if (auto it = runs_.find(key); it != runs_.end()) co_return it->second;
        run = ids_.next().str();
        runs_[key] = run;  // claimed before the await so concurrent calls share one run
    }
    json::object body;
    body["agent"] = {{"name", p.grants.name}, {"version", p.grants.version}, {"digest", p.grants.digest}};
    body["input"] = {{"principal", p.name}, {"session", ctx.session_id}, {"era", mcp::to_string(ctx.client_era)},
                     {"protocol_version", ctx.protocol_version}};
    body["input_label"] = {{"trust", p.trusted ? "trusted" : "untrusted"}, {"sources", json::array{"principal:" + p.name}}};
    body["admitted_at"] = rfc3339(options_.clock());
    std::vector<core::new_record> admit{{core::record_kind::run_admitted, std::move(body)}};
    auto r = co_await options_.journal->async_append(run, std::move(admit));
    if (!r) {
        std::lock_guard lock(mutex_);
        runs_.erase(key);
        co_return r.error();
    }
    co_return run;
}

asio::awaitable<void> gateway::async_journal(std::string run, core::new_record rec) {
    std::vector<core::new_record> batch{std::move(rec)};
    auto r = co_await options_.journal->async_append(run, std::move(batch));
    if (!r) spdlog::error("journal: run {}: {}", run, r.error().message);
}

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
    if (!run) {
        spdlog::error("journal unavailable, call refused: {}", run.error().message);
        co_return mcp::error_object{mcp::rpc_code::internal_error, "the journal is unavailable", std::nullopt};
    }

    auto deny = [&](std::string tool, core::deny_reason reason, std::string detail) -> asio::awaitable<mcp::handler_result> {
        json::object body{{"tool", tool}, {"reason", core::to_string(reason)}, {"detail", detail}};
        core::new_record rec{core::record_kind::policy_denied, std::move(body)};
        co_await async_journal(*run, std::move(rec));
        spdlog::info("denied: principal {} tool {}: {} ({})", p->name, tool, core::to_string(reason), detail);
        co_return refusal_result(not_permitted_text);
    };

    auto entry = co_await async_resolve(*p, name);
    if (!entry) {
        auto detail = "no granted tool is exposed as '" + name + "'";
        co_return co_await deny(name, core::deny_reason::not_granted, detail);
    }
    auto const* grant = p->grants.grant_for(entry->id);
    auto const* up = upstream(entry->id.server());
    if (entry->withheld || !grant || !up) {
        auto uri = entry->id.uri();
        std::string detail = "tool withheld: its definition changed";
        co_return co_await deny(uri, core::deny_reason::not_granted, detail);
    }

    core::tainted args;
    args.value = arguments;
    args.whole.sources = {"principal:" + p->name};
    args.whole.trust = p->trusted ? core::trust::trusted : core::trust::untrusted;
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
    std::vector<core::new_record> start_batch{{core::record_kind::effect_started, std::move(started)}};
    if (auto s = co_await options_.journal->async_append(*run, std::move(start_batch)); !s) {
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
            asio::co_spawn(exec, notify(std::move(n)), asio::detached);
        };
    }
    auto tool = entry->id;
    std::optional<core::provenance> block = *prov;
    std::optional<std::chrono::milliseconds> deadline = options_.call_deadline;
    auto outcome = co_await up->client->async_call_tool(tool, arguments, block, on_progress, deadline);

    json::object result;
    core::new_record after;
    if (outcome) {
        result["content"] = outcome->content;
        if (outcome->structured_content) result["structuredContent"] = *outcome->structured_content;
        if (outcome->is_error) result["isError"] = *outcome->is_error;
        json::object done{{"effect_key", key},
                          {"output", result},
                          {"output_label", {{"trust", "untrusted"}, {"sources", json::array{entry->id.uri()}}}}};
        after = {core::record_kind::effect_done, std::move(done)};
    } else {
        auto const& e = outcome.error();
        json::object failed{{"effect_key", key},
                            {"error_kind", core::to_string(e.kind)},
                            {"disposition", core::to_string(core::disposition_of(e.kind))},
                            {"detail", e.detail}};
        after = {core::record_kind::effect_failed, std::move(failed)};
        result = refusal_result(std::string(core::to_string(e.kind)) + ": " + e.detail);
    }
    // The outcome record need not delay the reply: lost in a crash, the effect reads as in doubt,
    // which is the truth.
    auto exec = co_await asio::this_coro::executor;
    auto journal_outcome = async_journal(*run, std::move(after));
    asio::co_spawn(exec, std::move(journal_outcome), asio::detached);
    co_return result;
}

asio::awaitable<mcp::handler_result> gateway::async_handle(mcp::request req, mcp::request_context& ctx) {
    if (req.method == "tools/list") co_return co_await async_list(req, ctx);
    if (req.method == "tools/call") co_return co_await async_call(req, ctx);
    co_return mcp::error_object{mcp::rpc_code::method_not_found, "method not found: " + req.method, std::nullopt};
}

asio::awaitable<void> gateway::async_notification(mcp::notification, mcp::request_context&) { co_return; }

void gateway::session_closed(std::string const& session_id) {
    std::optional<std::string> run;
    {
        std::lock_guard lock(mutex_);
        auto key = "session:" + session_id;
        if (auto it = runs_.find(key); it != runs_.end()) {
            run = it->second;
            runs_.erase(it);
        }
    }
    if (!run) return;
    auto journal = options_.journal;
    auto seal = [journal, run = *run]() -> asio::awaitable<void> {
        std::string status = "succeeded", reason = "session ended";
        auto r = co_await journal->async_seal(run, status, reason);
        if (!r) spdlog::warn("journal: sealing run {}: {}", run, r.error().message);
    };
    // Sealing runs on its own: the endpoint is not waiting for it.
    if (options_.executor) asio::co_spawn(options_.executor, seal(), asio::detached);
}

}  // namespace airlock::service
