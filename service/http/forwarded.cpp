#include "service/http/forwarded.hpp"

#include "core/ascii.hpp"

#include <charconv>

namespace airlock::service {

namespace ip = boost::asio::ip;

namespace {

ip::address unmapped(ip::address const& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
    return a;
}

std::optional<ip::address> parse_address(std::string_view text) {
    boost::system::error_code ec;
    auto a = ip::make_address(std::string(text), ec);
    if (ec) return std::nullopt;
    // A scope id (fe80::1%eth0) names an interface of the sender's machine, not a client.
    if (a.is_v6() && a.to_v6().scope_id() != 0) return std::nullopt;
    return unmapped(a);
}

// One hop as proxies write it: an address, "[v6]" or "[v6]:port", "v4:port", optionally quoted.
std::optional<ip::address> parse_node(std::string_view node) {
    node = core::trim_ows(node);
    if (node.size() >= 2 && node.front() == '"' && node.back() == '"') node = node.substr(1, node.size() - 2);
    if (!node.empty() && node.front() == '[') {
        auto close = node.find(']');
        if (close == std::string_view::npos) return std::nullopt;
        auto rest = node.substr(close + 1);
        if (!rest.empty() && rest.front() != ':') return std::nullopt;
        return parse_address(node.substr(1, close - 1));
    }
    if (auto colon = node.find(':'); colon != std::string_view::npos && node.find(':', colon + 1) == std::string_view::npos)
        node = node.substr(0, colon);  // v4:port (a bare v6 address has several colons)
    return parse_address(node);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    for (;;) {
        auto at = s.find(sep);
        out.push_back(core::trim_ows(s.substr(0, at)));
        if (at == std::string_view::npos) return out;
        s.remove_prefix(at + 1);
    }
}

// The for= node of each element of Forwarded header values, nearest proxy last; an element without
// one yields an empty node (which is no address).
std::vector<std::string_view> forwarded_for_nodes(std::vector<std::string_view> const& values) {
    std::vector<std::string_view> out;
    for (auto v : values) {
        for (auto element : split(v, ',')) {
            std::string_view node;
            for (auto pair : split(element, ';')) {
                auto eq = pair.find('=');
                if (eq != std::string_view::npos && core::iequals(core::trim_ows(pair.substr(0, eq)), "for")) node = pair.substr(eq + 1);
            }
            out.push_back(node);
        }
    }
    return out;
}

bool trusted_address(proxy_trust const& t, ip::address const& a) {
    for (auto const& n : t.networks)
        if (contains(n, a)) return true;
    return false;
}

}  // namespace

std::optional<ip_network> parse_ip_network(std::string_view text) {
    auto slash = text.find('/');
    auto a = parse_address(text.substr(0, slash));
    if (!a) return std::nullopt;
    unsigned bits = a->is_v4() ? 32 : 128;
    unsigned length = bits;
    if (slash != std::string_view::npos) {
        auto digits = text.substr(slash + 1);
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
        if (digits.empty() || ec != std::errc{} || p != digits.data() + digits.size() || length > bits) return std::nullopt;
    }
    // 10.1.0.0/8 is refused rather than silently read as 10.0.0.0/8: it is probably a typo.
    auto host_bits_clear = [&](auto const& bytes) {
        for (unsigned i = length; i < bits; ++i)
            if (bytes[i / 8] & (0x80u >> (i % 8))) return false;
        return true;
    };
    if (!(a->is_v4() ? host_bits_clear(a->to_v4().to_bytes()) : host_bits_clear(a->to_v6().to_bytes())))
        return std::nullopt;
    ip_network n{*a, length};
    return n;
}

std::string to_string(ip_network const& n) {
    auto text = n.address.to_string();
    unsigned bits = n.address.is_v4() ? 32 : 128;
    return n.prefix_length == bits ? text : text + "/" + std::to_string(n.prefix_length);
}

bool contains(ip_network const& n, ip::address const& candidate) {
    auto a = unmapped(candidate);
    if (a.is_v4() != n.address.is_v4()) return false;
    auto compare = [&](auto const& x, auto const& y) {
        for (unsigned i = 0; i < n.prefix_length; ++i) {
            unsigned mask = 0x80u >> (i % 8);
            if ((x[i / 8] & mask) != (y[i / 8] & mask)) return false;
        }
        return true;
    };
    if (a.is_v4()) return compare(a.to_v4().to_bytes(), n.address.to_v4().to_bytes());
    return compare(a.to_v6().to_bytes(), n.address.to_v6().to_bytes());
}

std::string effective_client_address(std::string_view peer, std::vector<std::string_view> const& forwarded,
                                     std::vector<std::string_view> const& x_forwarded_for,
                                     proxy_trust const& trusted) {
    std::string current(peer);
    if (peer == "unix") {
        if (!trusted.unix_socket) return current;
    } else {
        auto a = parse_address(peer);
        if (!a || !trusted_address(trusted, *a)) return current;
        current = a->to_string();
    }
    std::vector<std::string_view> hops;
    if (trusted.header == proxy_trust::forwarded) {
        hops = forwarded_for_nodes(forwarded);
    } else {
        for (auto v : x_forwarded_for)
            for (auto h : split(v, ',')) hops.push_back(h);
    }
    for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
        auto a = parse_node(*it);
        if (!a) return current;
        current = a->to_string();
        if (!trusted_address(trusted, *a)) return current;
    }
    return current;
}

}  // namespace airlock::service
