#include "service/gateway/roster.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace airlock::service {

roster::roster(std::vector<gateway_upstream> upstreams, std::vector<gateway_principal> principals,
               core::egress_allowlist egress, std::map<std::string, std::string> upstream_scopes)
    : upstreams_(std::move(upstreams)), principals_(std::move(principals)), egress_(std::move(egress)),
      upstream_scopes_(std::move(upstream_scopes)) {
    // Nothing at all goes to a destination egress does not allow: not a handshake, not a listing,
    // not a ping. Such an upstream is never contacted (a reload with it in egress makes a new gateway).
    for (auto const& u : upstreams_) {
        auto where = u.client->destination();
        if (egress_.permits(where)) continue;
        refused_.insert(u.name);
        spdlog::warn("upstream {}: its destination {} is not in egress; it is never contacted and calls to its tools "
                     "are refused (add it to egress to use it)",
                     u.name, core::to_string(where));
    }
}

gateway_principal const* roster::principal(std::string const& name) const {
    for (auto const& p : principals_)
        if (p.name == name || (name.empty() && p.anonymous)) return &p;
    return nullptr;
}

std::shared_ptr<gateway_principal const> roster::caller(mcp::request_context const& ctx) const {
    auto const* p = principal(ctx.principal);
    if (!p) return nullptr;
    auto withheld = withheld_by_scope(ctx.authentication, upstream_scopes_);
    // The configured principal lives as long as this roster, which outlives every request it serves.
    if (withheld.empty()) return std::shared_ptr<gateway_principal const>(std::shared_ptr<void>{}, p);
    return std::make_shared<gateway_principal const>(narrowed(*p, withheld));
}

std::optional<std::string> roster::scope_of(std::string const& server) const {
    if (auto it = upstream_scopes_.find(server); it != upstream_scopes_.end()) return it->second;
    return std::nullopt;
}

gateway_upstream const* roster::upstream(std::string const& name) const {
    for (auto const& u : upstreams_)
        if (u.name == name) return &u;
    return nullptr;
}

bool roster::first_configured(std::string const& a, std::string const& b) const {
    // Which of two upstreams comes first in the configuration: a URI or prompt two of them offer
    // belongs to that one, whichever listed it last, so a restart elsewhere cannot take it over.
    for (auto const& u : upstreams_) {
        if (u.name == a) return a != b;
        if (u.name == b) return false;
    }
    return false;
}

bool roster::refused_by_egress(std::string const& server) const { return refused_.contains(server); }

std::vector<gateway_upstream const*> roster::visible_upstreams(gateway_principal const& p) const {
    std::vector<gateway_upstream const*> out;
    for (auto const& u : upstreams_) {
        // An upstream egress refuses is never asked anything, so it offers nothing.
        if (refused_by_egress(u.name)) continue;
        if (sees(p, u.name)) out.push_back(&u);
    }
    return out;
}

std::size_t roster::seeing(std::string const& server) const {
    return static_cast<std::size_t>(std::ranges::count_if(principals_, [&](auto const& p) { return sees(p, server); }));
}

std::set<std::string> withheld_by_scope(boost::json::object const& authentication,
                                        std::map<std::string, std::string> const& upstream_scopes) {
    std::set<std::string> withheld;
    if (upstream_scopes.empty() || authentication.empty()) return withheld;
    std::set<std::string, std::less<>> held;
    if (auto const* s = authentication.if_contains("scopes"); s && s->is_array())
        for (auto const& v : s->get_array())
            if (v.is_string()) held.emplace(v.get_string());
    for (auto const& [server, scope] : upstream_scopes)
        if (!held.contains(scope)) withheld.insert(server);
    return withheld;
}

gateway_principal narrowed(gateway_principal const& p, std::set<std::string> const& withheld) {
    gateway_principal out = p;
    std::erase_if(out.grants.tools, [&](auto const& g) { return withheld.contains(g.ref.server()); });
    return out;
}

}  // namespace airlock::service
