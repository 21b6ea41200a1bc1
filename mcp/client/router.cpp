#include "mcp/client/router.hpp"

namespace airlock::mcp {

using core::tool_error;
using core::tool_error_kind;

tool_router::tool_router(core::egress_allowlist allowlist) : allowlist_(std::move(allowlist)) {}

core::result<void> tool_router::add_route(std::string server, std::shared_ptr<core::tool_client> client) {
    if (!client) return core::make_error("invalid_route", "server '" + server + "' has no client");
    if (routes_.contains(server)) return core::make_error("duplicate_route", "server '" + server + "' is routed twice");
    routes_.emplace(std::move(server), std::move(client));
    return {};
}

std::shared_ptr<core::tool_client> tool_router::route(std::string const& server) const {
    auto it = routes_.find(server);
    return it == routes_.end() ? nullptr : it->second;
}

std::vector<std::string> tool_router::servers() const {
    std::vector<std::string> out;
    for (auto const& [name, client] : routes_) out.push_back(name);
    return out;
}

core::result<std::shared_ptr<core::tool_client>> tool_router::check(core::tool_id const& tool) const {
    auto client = route(tool.server());
    if (!client) {
        std::string routed;
        for (auto const& [name, c] : routes_) routed += (routed.empty() ? "" : ", ") + name;
        return core::make_error("unrouted", "no upstream server '" + tool.server() + "' (routed: " +
                                                (routed.empty() ? "none" : routed) + ")");
    }
    auto dest = client->destination_of(tool);
    if (!allowlist_.permits(dest))
        return core::make_error("egress_denied", "egress_denied: destination " + core::to_string(dest) +
                                                     " of " + tool.uri() + " is not in the egress allowlist");
    return client;
}

boost::asio::awaitable<core::tool_result<boost::json::value>> tool_router::async_call(
    core::tool_id tool, boost::json::value arguments, std::optional<core::provenance> prov) {
    auto client = check(tool);
    if (!client) co_return tool_error{tool_error_kind::unreachable, tool.uri(), client.error().message};
    co_return co_await (*client)->async_call(std::move(tool), std::move(arguments), std::move(prov));
}

core::destination tool_router::destination_of(core::tool_id const& tool) const {
    if (auto client = route(tool.server())) return client->destination_of(tool);
    return core::remote_destination{};
}

bool is_restricted_address(boost::asio::ip::address const& a) noexcept {
    if (a.is_v6()) {
        auto v6 = a.to_v6();
        if (v6.is_v4_mapped()) return is_restricted_address(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6));
        auto b = v6.to_bytes();
        if (v6.is_loopback() || v6.is_unspecified()) return true;
        if ((b[0] & 0xfe) == 0xfc) return true;                   // fc00::/7 unique local
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true;   // fe80::/10 link local
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return true;   // fec0::/10 old site local
        bool v4_compat = true;                                    // ::a.b.c.d (deprecated form)
        for (int i = 0; i < 12; ++i) v4_compat = v4_compat && b[i] == 0;
        if (v4_compat) {
            boost::asio::ip::address_v4::bytes_type v4{b[12], b[13], b[14], b[15]};
            return is_restricted_address(boost::asio::ip::address_v4(v4));
        }
        return false;
    }
    auto b = a.to_v4().to_bytes();
    if (b[0] == 0 || b[0] == 10 || b[0] == 127) return true;           // 0/8, 10/8, 127/8
    if (b[0] == 172 && (b[1] & 0xf0) == 16) return true;               // 172.16/12
    if (b[0] == 192 && b[1] == 168) return true;                       // 192.168/16
    if (b[0] == 169 && b[1] == 254) return true;                       // 169.254/16 (metadata)
    if (b[0] == 100 && (b[1] & 0xc0) == 64) return true;               // 100.64/10 CGNAT
    if (b[0] >= 224) return true;                                      // multicast, reserved, broadcast
    return false;
}

bool address_permitted(core::egress_allowlist const& allowlist, std::string const& scheme, std::uint16_t port,
                       boost::asio::ip::address const& a) {
    if (!is_restricted_address(a)) return true;
    auto literal = a.is_v6() && a.to_v6().is_v4_mapped()
                       ? boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).to_string()
                       : a.to_string();
    return allowlist.permits(core::remote_destination{scheme, literal, port});
}

}  // namespace airlock::mcp
