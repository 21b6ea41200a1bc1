#include "service/gateway/roster.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace airlock::service {

roster::roster(std::vector<gateway_upstream> upstreams, std::vector<gateway_principal> principals,
               core::egress_allowlist egress)
    : upstreams_(std::move(upstreams)), principals_(std::move(principals)), egress_(std::move(egress)) {
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

}  // namespace airlock::service
