#pragma once
// Who a request comes from when it arrives through reverse proxies: X-Forwarded-For and Forwarded
// (RFC 7239) are believed only from proxies the configuration trusts, and only as far back as the
// chain stays trusted.

#include <boost/asio/ip/address.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

// An address range: 10.0.0.0/8, fd00::/8, or one address (the whole length).
struct ip_network {
    boost::asio::ip::address address;  // with the host bits cleared
    unsigned prefix_length = 0;
};

// "ADDRESS" or "ADDRESS/LENGTH"; nullopt for names, host bits set past the length, or a bad length.
std::optional<ip_network> parse_ip_network(std::string_view text);
// The canonical text: "127.0.0.1", "10.0.0.0/8" (a single address shows no length).
std::string to_string(ip_network const& n);
// An IPv4-mapped IPv6 address (::ffff:10.1.2.3) counts as its IPv4 address.
bool contains(ip_network const& n, boost::asio::ip::address const& a);

struct proxy_trust {
    std::vector<ip_network> networks;
    bool unix_socket = false;  // the peer on a unix socket (whoever the socket's mode lets connect)
    // The header the trusted proxies write; the other one is whatever the client sent, and ignored.
    enum header_kind { x_forwarded_for, forwarded } header = x_forwarded_for;

    bool empty() const noexcept { return networks.empty() && !unix_socket; }
};

// The effective client address of a request whose connection comes from `peer` (an IP address in
// text, or "unix" for a unix-socket peer). From an untrusted peer the headers are ignored. From a
// trusted one, the hops of the header the proxies write (`trusted.header`) are walked from the
// nearest: the first hop that is not a trusted proxy is the client. A hop that is not an address
// (unknown, an obfuscated name, garbage) stops the walk at the last trusted hop: nothing behind it
// can be believed.
std::string effective_client_address(std::string_view peer, std::vector<std::string_view> const& forwarded,
                                     std::vector<std::string_view> const& x_forwarded_for,
                                     proxy_trust const& trusted);

}  // namespace airlock::service
