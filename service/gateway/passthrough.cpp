#include "service/gateway/passthrough.hpp"

#include "core/visible_text.hpp"
#include "mcp/client/spawn_logged.hpp"
#include "mcp/protocol/uri_template.hpp"
#include "service/gateway/cancellable.hpp"
#include "service/gateway/replies.hpp"

#include <boost/asio/this_coro.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

struct passthrough::list_kind {
    std::string_view method;      // resources/list, ...
    std::string_view key;         // where the result keeps its items
    std::string_view capability;  // the server capability that offers them
};

namespace {

constexpr passthrough::list_kind resources_kind{"resources/list", "resources", "resources"};
constexpr passthrough::list_kind templates_kind{"resources/templates/list", "resourceTemplates", "resources"};
constexpr passthrough::list_kind prompts_kind{"prompts/list", "prompts", "prompts"};

gateway_upstream const* find_upstream(std::vector<gateway_upstream const*> const& ups, std::string const& name) {
    for (auto const* u : ups)
        if (u->name == name) return u;
    return nullptr;
}

std::optional<std::string> string_param(json::object const& params, char const* name) {
    auto const* v = params.if_contains(name);
    if (!v || !v->is_string()) return std::nullopt;
    return std::string(v->get_string());
}

asio::awaitable<void> async_unsubscribe_upstream(std::shared_ptr<mcp::mcp_client> client, std::string uri) {
    std::string method = "resources/unsubscribe";
    json::object params{{"uri", uri}};
    mcp::forward_options fo;
    auto r = co_await client->async_forward(std::move(method), std::move(params), std::move(fo));
    if (!r) spdlog::debug("upstream {}: unsubscribing {}: {}", client->server_name(), uri, r.error().message);
}

}  // namespace

core::result<std::optional<mcp::list_position>> cursor_of(mcp::list_cursor_sealer const& cursors, mcp::request const& req,
                                                          std::string_view list, std::string const& principal) {
    if (!req.params) return std::optional<mcp::list_position>{};
    auto const* c = req.params->if_contains("cursor");
    if (!c) return std::optional<mcp::list_position>{};
    if (!c->is_string()) return core::make_error("invalid_cursor", "invalid cursor: params.cursor must be a string");
    auto pos = cursors.open(c->get_string(), list, principal);
    if (!pos) return pos.error();
    return std::optional<mcp::list_position>{std::move(*pos)};
}

passthrough::passthrough(passthrough_options options, std::shared_ptr<roster const> who,
                         std::shared_ptr<catalogue const> tools, std::shared_ptr<session_runs> runs,
                         std::shared_ptr<relays> streams, std::shared_ptr<mcp::list_cursor_sealer const> cursors)
    : options_(options), roster_(std::move(who)), tools_(std::move(tools)), runs_(std::move(runs)),
      streams_(std::move(streams)), cursors_(std::move(cursors)) {}

asio::awaitable<mcp::handler_result> passthrough::async_handle(mcp::request const& req, mcp::request_context& ctx) {
    auto const caller = roster_->caller(ctx);
    auto const* p = caller.get();
    auto const& m = req.method;
    json::object params = req.params ? *req.params : json::object{};
    if (m == "resources/list" || m == "resources/templates/list" || m == "prompts/list") {
        auto const& kind = m == "prompts/list" ? prompts_kind : m == "resources/list" ? resources_kind : templates_kind;
        if (!p) co_return json::object{{kind.key, json::array{}}};
        co_return co_await async_list(kind, req, *p);
    }
    if (m == "resources/read" || m == "resources/subscribe" || m == "resources/unsubscribe")
        co_return co_await async_read(p, req, std::move(params), ctx);
    if (m == "prompts/get") co_return co_await async_get_prompt(p, std::move(params), ctx);
    if (m == "completion/complete") co_return co_await async_complete(p, std::move(params), ctx);
    if (m == "logging/setLevel") {
        if (!string_param(params, "level")) co_return invalid_params("logging/setLevel params.level must be a string");
        if (!p) co_return json::object{};
        co_return co_await async_set_level(*p, std::move(params), ctx);
    }
    // airlock itself is what the client pings (the endpoints answer it before it gets here).
    if (m == "ping") co_return json::object{};
    co_return mcp::error_object{mcp::rpc_code::method_not_found, "method not found: " + m, std::nullopt};
}

asio::awaitable<mcp::handler_result> passthrough::async_read(gateway_principal const* p, mcp::request const& req,
                                                             json::object params, mcp::request_context& ctx) {
    auto const& m = req.method;
    auto uri = string_param(params, "uri");
    if (!uri) co_return invalid_params(m + " params.uri must be a string");
    if (!p) co_return no_such_resource(*uri);
    if (m != "resources/read") co_return co_await async_subscribe(*p, *uri, m == "resources/subscribe", ctx);
    auto const* up = co_await async_resource_owner(*p, *uri);
    if (!up) co_return no_such_resource(*uri);
    json::object note{{"text", "resources/read"}, {"server", up->name}, {"uri", *uri}};
    if (auto j = co_await runs_->async_note(ctx, *p, std::move(note)); !j) co_return no_run(j.error(), "resources/read");
    co_return co_await async_forward(*up, m, std::move(params), ctx);
}

asio::awaitable<mcp::handler_result> passthrough::async_get_prompt(gateway_principal const* p, json::object params,
                                                                   mcp::request_context& ctx) {
    auto name = string_param(params, "name");
    if (!name) co_return invalid_params("prompts/get params.name must be a string");
    auto unknown = invalid_params("unknown prompt: " + *name);
    if (!p) co_return unknown;
    auto owner = co_await async_prompt_owner(*p, *name);
    if (!owner) co_return unknown;
    json::object note{{"text", "prompts/get"}, {"server", owner->first->name}, {"prompt", *name}};
    if (auto const* a = params.if_contains("arguments")) note["arguments"] = *a;
    if (auto j = co_await runs_->async_note(ctx, *p, std::move(note)); !j) co_return no_run(j.error(), "prompts/get");
    params["name"] = owner->second;
    std::string method = "prompts/get";
    co_return co_await async_forward(*owner->first, std::move(method), std::move(params), ctx);
}

asio::awaitable<mcp::handler_result> passthrough::async_complete(gateway_principal const* p, json::object params,
                                                                 mcp::request_context& ctx) {
    auto* ref = params.if_contains("ref");
    if (!ref || !ref->is_object()) co_return invalid_params("completion/complete params.ref must be an object");
    auto& r = ref->as_object();
    auto const* type = r.if_contains("type");
    auto unknown = invalid_params("completion/complete: unknown reference");
    if (!p || !type || !type->is_string()) co_return unknown;
    std::string method = "completion/complete";
    if (type->get_string() == "ref/prompt") {
        auto const* n = r.if_contains("name");
        if (!n || !n->is_string()) co_return unknown;
        std::string prompt_name(n->get_string());
        auto owner = co_await async_prompt_owner(*p, prompt_name);
        if (!owner) co_return unknown;
        r["name"] = owner->second;
        co_return co_await async_forward(*owner->first, std::move(method), std::move(params), ctx);
    }
    if (type->get_string() == "ref/resource") {
        auto const* u = r.if_contains("uri");
        if (!u || !u->is_string()) co_return unknown;
        std::string ref_uri(u->get_string());
        auto const* up = co_await async_resource_owner(*p, ref_uri);
        if (!up) co_return unknown;
        co_return co_await async_forward(*up, std::move(method), std::move(params), ctx);
    }
    co_return unknown;
}

asio::awaitable<mcp::handler_result> passthrough::async_list_page(gateway_upstream const& up, list_kind const& kind,
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
            if (reported_.insert("hidden " + up.name + "/" + what + " " + core::describe(removed)).second)
                spdlog::warn("upstream {}: {} holds characters a reader cannot see ({}); they are removed from what "
                             "callers are shown",
                             up.name, what, core::describe(removed));
        }
        learn_owner(up, kind, *o);
        // URIs are addresses and stay as they are; names are labels and show their server when prefixed.
        if (up.prefixed && name && name->is_string()) (*o)["name"] = up.name + "__" + std::string(name->get_string());
    }
    co_return r;
}

void passthrough::learn_owner(gateway_upstream const& up, list_kind const& kind, json::object const& o) {
    auto const* name = o.if_contains("name");
    if (kind.key == "resources") {
        auto const* uri = o.if_contains("uri");
        if (!uri || !uri->is_string()) return;
        std::string u(uri->get_string());
        auto& owner = resource_owner_[u];
        if (owner.empty() || roster_->first_configured(up.name, owner)) {
            owner = up.name;
        } else if (owner != up.name && reported_.insert("resource " + owner + " " + up.name + " " + u).second) {
            spdlog::warn("resource {} is listed by upstreams {} and {}; reads go to {}, configured first", u, owner,
                         up.name, owner);
        }
    } else if (kind.key == "resourceTemplates") {
        auto const* t = o.if_contains("uriTemplate");
        if (!t || !t->is_string()) return;
        std::pair<std::string, std::string> entry{std::string(t->get_string()), up.name};
        if (std::find(template_owner_.begin(), template_owner_.end(), entry) == template_owner_.end())
            template_owner_.push_back(std::move(entry));
    } else if (kind.key == "prompts" && name && name->is_string()) {
        std::string own(name->get_string());
        auto exposed = up.prefixed ? up.name + "__" + own : own;
        auto& owner = prompt_owner_[exposed];
        if (owner.first.empty() || roster_->first_configured(up.name, owner.first)) {
            owner = {up.name, own};
        } else if (owner.first != up.name && reported_.insert("prompt " + owner.first + " " + up.name + " " + exposed).second) {
            spdlog::warn("prompt {} is offered by upstreams {} and {}; gets go to {}, configured first", exposed,
                         owner.first, up.name, owner.first);
        }
    }
}

asio::awaitable<json::array> passthrough::async_list_all(gateway_upstream const& up, list_kind const& kind) {
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

asio::awaitable<mcp::handler_result> passthrough::async_list(list_kind const& kind, mcp::request const& req,
                                                             gateway_principal const& p) {
    // One list merged from the upstreams the caller sees, in configuration order, in pages of
    // list_page_size: a cursor names the upstream, that upstream's own cursor for the page it is in
    // and how many of that page's items were shown, so upstream pages of any size line up with ours.
    std::string const list(kind.method);
    auto start = cursor_of(*cursors_, req, list, p.name);
    if (!start) co_return invalid_params(start.error().message);
    std::vector<gateway_upstream const*> ups;
    for (auto const* up : roster_->visible_upstreams(p)) {
        if (tools_->passed_over(*up)) continue;  // one that cannot be reached does not hold up the others
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
    auto full_page = [&](std::optional<std::string> upstream_cursor, std::size_t shown) {
        json::object result{{kind.key, std::move(out)}};
        mcp::list_position next{ups[u]->name, std::move(upstream_cursor), shown};
        result["nextCursor"] = cursors_->seal(list, p.name, next);
        return result;
    };
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
            if (out.size() == page) co_return full_page(cursor, i);
            out.push_back(std::move(items[i]));
        }
        skip = 0;
        if (next_upstream_cursor) {
            cursor = std::move(next_upstream_cursor);
        } else {
            ++u;
            cursor.reset();
        }
        // Full at an upstream page's end: whether anything follows, the next request finds out.
        if (out.size() == page && u < ups.size()) co_return full_page(cursor, 0);
    }
    co_return json::object{{kind.key, std::move(out)}};
}

asio::awaitable<void> passthrough::async_refresh(gateway_principal const& p, list_kind const& kind) {
    for (auto const* up : roster_->visible_upstreams(p)) {
        auto known = up->client->server_capabilities();
        if ((known && !known->contains(kind.capability)) || tools_->passed_over(*up)) continue;
        co_await async_list_all(*up, kind);
    }
}

asio::awaitable<gateway_upstream const*> passthrough::async_resource_owner(gateway_principal const& p,
                                                                          std::string const& uri) {
    auto ups = roster_->visible_upstreams(p);
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
            auto pattern = mcp::uri_template::parse(tmpl);
            if (pattern && pattern->matches(uri)) return u;
        }
        return nullptr;
    };
    if (auto const* u = lookup()) co_return u;
    // Not seen yet: list once, then decide.
    co_await async_refresh(p, resources_kind);
    co_await async_refresh(p, templates_kind);
    co_return lookup();
}

asio::awaitable<std::optional<std::pair<gateway_upstream const*, std::string>>> passthrough::async_prompt_owner(
    gateway_principal const& p, std::string const& exposed) {
    using owner = std::pair<gateway_upstream const*, std::string>;
    auto ups = roster_->visible_upstreams(p);
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
    co_await async_refresh(p, prompts_kind);
    co_return lookup();
}

asio::awaitable<mcp::handler_result> passthrough::async_forward(gateway_upstream const& up, std::string method,
                                                                json::object params, mcp::request_context& ctx) {
    auto exec = co_await asio::this_coro::executor;
    relays::inflight_guard in_flight(*streams_, up.name, ctx, exec);
    mcp::forward_options fo;
    fo.deadline = options_.call_deadline;
    fo.on_notification = relays::relay_to(ctx, exec);
    fo.on_server_request = relays::ask_caller(up.name, ctx);
    auto op = up.client->async_forward(std::move(method), std::move(params), std::move(fo));
    auto r = co_await async_cancellable(ctx.cancelled, std::move(op));
    if (!r) co_return mcp::error_object{mcp::rpc_code::internal_error, "the request was cancelled", std::nullopt};
    co_return std::move(*r);
}

asio::awaitable<mcp::handler_result> passthrough::async_subscribe(gateway_principal const& p, std::string const& uri,
                                                                  bool subscribe, mcp::request_context& ctx) {
    auto key = session_runs::key_of(ctx.session_id, p.name);
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
        auto const* up = roster_->upstream(server);
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

asio::awaitable<mcp::handler_result> passthrough::async_set_level(gateway_principal const& p, json::object params,
                                                                  mcp::request_context& ctx) {
    // One upstream session serves every client: the level set here is the one they all get.
    std::optional<mcp::error_object> failure;
    bool any = false;
    for (auto const* up : roster_->visible_upstreams(p)) {
        auto known = up->client->server_capabilities();
        if ((known && !known->contains("logging")) || tools_->passed_over(*up)) continue;
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

std::set<std::string> passthrough::subscribers_of(std::string const& uri) const {
    std::set<std::string> keys;
    std::lock_guard lock(mutex_);
    if (auto it = subscribers_.find(uri); it != subscribers_.end())
        for (auto const& [key, principal] : it->second) keys.insert(key);
    return keys;
}

void passthrough::session_closed(std::string const& session_id, asio::any_io_executor const& exec) {
    auto key = "session:" + session_id;
    std::vector<std::pair<std::shared_ptr<mcp::mcp_client>, std::string>> unsubscribe;
    {
        std::lock_guard lock(mutex_);
        for (auto it = subscribers_.begin(); it != subscribers_.end();) {
            if (!it->second.erase(key) || !it->second.empty()) {
                ++it;
                continue;
            }
            if (auto const* up = roster_->upstream(subscribed_upstream_[it->first])) unsubscribe.emplace_back(up->client, it->first);
            subscribed_upstream_.erase(it->first);
            it = subscribers_.erase(it);
        }
    }
    // They run on their own: the endpoint is not waiting for them.
    if (!exec) return;
    for (auto& [client, uri] : unsubscribe)
        mcp::spawn_logged(exec, async_unsubscribe_upstream(client, uri), "gateway upstream unsubscribe");
}

}  // namespace airlock::service
