#pragma once
// The ToolRouter: one tool_client per server name, with the deployment's egress allowlist checked
// per tool before anything is sent.

#include "core/policy.hpp"
#include "core/tool.hpp"

#include <boost/asio/ip/address.hpp>

#include <map>
#include <memory>
#include <string>

namespace airlock::mcp {

class tool_router final : public core::tool_client {
public:
    explicit tool_router(core::egress_allowlist allowlist);

    // Routes every tool://server/… to `client`. A server routed twice is refused.
    core::result<void> add_route(std::string server, std::shared_ptr<core::tool_client> client);
    std::shared_ptr<core::tool_client> route(std::string const& server) const;
    std::vector<std::string> servers() const;

    // Unrouted server → unreachable naming the routed ones; destination not in the allowlist →
    // unreachable with "egress_denied" and nothing sent.
    boost::asio::awaitable<core::tool_result<boost::json::value>> async_call(
        core::tool_id tool, boost::json::value arguments, std::optional<core::provenance> prov) override;
    // The routed client's answer for this tool; an unrouted tool gets an empty remote destination,
    // which no allowlist entry matches.
    core::destination destination_of(core::tool_id const& tool) const override;

    // Checks before dispatch, for callers that use a routed client directly (the gateway).
    core::result<std::shared_ptr<core::tool_client>> check(core::tool_id const& tool) const;

    core::egress_allowlist const& allowlist() const noexcept { return allowlist_; }

private:
    core::egress_allowlist allowlist_;
    std::map<std::string, std::shared_ptr<core::tool_client>> routes_;
};

// Loopback, private, link-local (cloud metadata included), unique-local, unspecified, CGNAT and
// IPv4-mapped forms of those: addresses an upstream URL must not reach unless granted exactly.
bool is_restricted_address(boost::asio::ip::address const& a) noexcept;

// The address check for an HTTP upstream: unrestricted addresses pass; a restricted one passes
// only when the allowlist names remote{scheme, that address, port} itself.
bool address_permitted(core::egress_allowlist const& allowlist, std::string const& scheme, std::uint16_t port,
                       boost::asio::ip::address const& a);

}  // namespace airlock::mcp
