#pragma once
// Who the gateway serves and what it serves from: the principals and upstreams as configured, and
// which upstreams egress refuses. Fixed for a gateway's life (a reload makes a new gateway), so
// every collaborator reads it without a lock.

#include "core/policy.hpp"
#include "mcp/client/client.hpp"
#include "service/gateway/principal.hpp"

#include <memory>
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
    roster(std::vector<gateway_upstream> upstreams, std::vector<gateway_principal> principals,
           core::egress_allowlist egress);

    std::vector<gateway_upstream> const& upstreams() const noexcept { return upstreams_; }
    std::vector<gateway_principal> const& principals() const noexcept { return principals_; }
    core::egress_allowlist const& egress() const noexcept { return egress_; }

    // The principal named so; "" finds the anonymous one, if any.
    gateway_principal const* principal(std::string const& name) const;
    gateway_upstream const* upstream(std::string const& name) const;
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
};

}  // namespace airlock::service
