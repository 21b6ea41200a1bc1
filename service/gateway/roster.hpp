#pragma once
// Who the gateway serves and what it serves from: the principals and upstreams as configured, and
// which upstreams egress refuses. Fixed for a gateway's life (a reload makes a new gateway), so
// every collaborator reads it without a lock.

#include "core/policy.hpp"
#include "mcp/client/client.hpp"
#include "mcp/server/backend.hpp"
#include "service/gateway/principal.hpp"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace airlock::service {

struct gateway_upstream {
    std::string name;                          // the server part of tool://server/name
    std::shared_ptr<mcp::mcp_client> client;
    bool prefixed = true;                      // false ("prefix: none"): tools keep their upstream names
};

class roster {
public:
    // `upstream_scopes`: upstream name -> the OAuth scope a token needs to see that upstream
    // (auth.oauth.upstream_scopes); callers admitted otherwise (a static token, stdio) are not narrowed.
    roster(std::vector<gateway_upstream> upstreams, std::vector<gateway_principal> principals,
           core::egress_allowlist egress, std::map<std::string, std::string> upstream_scopes = {});

    std::vector<gateway_upstream> const& upstreams() const noexcept { return upstreams_; }
    std::vector<gateway_principal> const& principals() const noexcept { return principals_; }
    core::egress_allowlist const& egress() const noexcept { return egress_; }

    // The principal named so; "" finds the anonymous one, if any.
    gateway_principal const* principal(std::string const& name) const;
    gateway_upstream const* upstream(std::string const& name) const;
    // The principal of a request as its credentials narrow it: the configured one, or, for an OAuth
    // token that lacks an upstream's scope, a copy without its grants on that upstream (so it neither
    // lists nor calls its tools). Null when no principal serves the request.
    std::shared_ptr<gateway_principal const> caller(mcp::request_context const& ctx) const;
    // The scope the upstream `server` needs of an OAuth caller, if any.
    std::optional<std::string> scope_of(std::string const& server) const;
    // Whether upstream `a` comes before upstream `b` in the configuration.
    bool first_configured(std::string const& a, std::string const& b) const;
    // Its destination is not in egress: it is never contacted, not even for a handshake.
    bool refused_by_egress(std::string const& server) const;
    // The upstreams `p` sees (principal.hpp's sees), in configuration order, egress-refused ones left out.
    std::vector<gateway_upstream const*> visible_upstreams(gateway_principal const& p) const;
    // How many principals see `server`.
    std::size_t seeing(std::string const& server) const;

private:
    std::vector<gateway_upstream> upstreams_;
    std::vector<gateway_principal> principals_;
    core::egress_allowlist egress_;
    std::set<std::string> refused_;
    std::map<std::string, std::string> upstream_scopes_;
};

// The upstreams whose scope (`upstream_scopes`: upstream -> scope) an OAuth caller's token lacks,
// from the request's authentication record ({"scopes": [...]}); none for a caller not admitted by a
// token. Pure: the whole narrowing rule.
std::set<std::string> withheld_by_scope(boost::json::object const& authentication,
                                        std::map<std::string, std::string> const& upstream_scopes);

// `p` without its grants on the upstreams in `withheld`.
gateway_principal narrowed(gateway_principal const& p, std::set<std::string> const& withheld);

}  // namespace airlock::service
