// Who a request comes from behind reverse proxies: pure functions, no sockets.
#include "service/http/forwarded.hpp"

#include <catch2/catch.hpp>

using namespace airlock::service;

namespace {

proxy_trust trusting(std::vector<std::string> const& entries) {
    proxy_trust t;
    for (auto const& e : entries) {
        if (e == "unix") {
            t.unix_socket = true;
            continue;
        }
        auto n = parse_ip_network(e);
        REQUIRE(n);
        t.networks.push_back(*n);
    }
    return t;
}

}  // namespace

TEST_CASE("trusted proxy entries are addresses or CIDR networks; names, bad lengths and set host bits are refused") {
    CHECK(to_string(*parse_ip_network("127.0.0.1")) == "127.0.0.1");
    CHECK(to_string(*parse_ip_network("10.0.0.0/8")) == "10.0.0.0/8");
    CHECK(to_string(*parse_ip_network("fd00::/8")) == "fd00::/8");
    CHECK(to_string(*parse_ip_network("::1/128")) == "::1");
    CHECK_FALSE(parse_ip_network("localhost"));
    CHECK_FALSE(parse_ip_network("10.1.0.0/8"));  // host bits set: probably a typo
    CHECK_FALSE(parse_ip_network("10.0.0.0/33"));
    CHECK_FALSE(parse_ip_network("10.0.0.0/"));
    CHECK_FALSE(parse_ip_network("10.0.0.0/8x"));
    CHECK_FALSE(parse_ip_network("*"));
}

TEST_CASE("a network contains its addresses, IPv4-mapped IPv6 ones included, and nothing of the other family") {
    auto n = *parse_ip_network("10.0.0.0/8");
    CHECK(contains(n, boost::asio::ip::make_address("10.200.3.4")));
    CHECK(contains(n, boost::asio::ip::make_address("::ffff:10.1.2.3")));
    CHECK_FALSE(contains(n, boost::asio::ip::make_address("11.0.0.1")));
    CHECK_FALSE(contains(n, boost::asio::ip::make_address("::1")));
    auto zero = *parse_ip_network("0.0.0.0/0");
    CHECK(contains(zero, boost::asio::ip::make_address("192.0.2.1")));
}

TEST_CASE("X-Forwarded-For from a peer that is not trusted is ignored") {
    auto t = trusting({"10.0.0.0/8"});
    CHECK(effective_client_address("127.0.0.1", {}, {"203.0.113.7"}, t) == "127.0.0.1");
    CHECK(effective_client_address("unix", {}, {"203.0.113.7"}, t) == "unix");
}

TEST_CASE("X-Forwarded-For from a trusted proxy names the client, walking back past trusted hops only") {
    auto t = trusting({"127.0.0.1", "10.0.0.0/8"});
    CHECK(effective_client_address("127.0.0.1", {}, {"203.0.113.7"}, t) == "203.0.113.7");
    // The client forged a first hop; the proxy in 10/8 appended what it saw (198.51.100.2).
    CHECK(effective_client_address("127.0.0.1", {}, {"203.0.113.7, 198.51.100.2, 10.1.1.1"}, t) == "198.51.100.2");
    // Several header lines count as one list, in order.
    CHECK(effective_client_address("127.0.0.1", {}, {"203.0.113.7", "10.1.1.1"}, t) == "203.0.113.7");
    // A trusted peer with no header is the client.
    CHECK(effective_client_address("127.0.0.1", {}, {}, t) == "127.0.0.1");
}

TEST_CASE("a forwarded hop that is not an address stops the walk at the last trusted proxy") {
    auto t = trusting({"127.0.0.1", "10.0.0.0/8"});
    CHECK(effective_client_address("127.0.0.1", {}, {"203.0.113.7, garbage, 10.0.0.9"}, t) == "10.0.0.9");
    t.header = proxy_trust::forwarded;
    CHECK(effective_client_address("127.0.0.1", {"for=unknown"}, {}, t) == "127.0.0.1");
}

TEST_CASE("only the header the proxies write is read: a Forwarded the client sent through an X-Forwarded-For proxy is ignored") {
    // nginx appends to X-Forwarded-For and passes any Forwarded the client sent through as it came.
    auto t = trusting({"127.0.0.1"});
    CHECK(effective_client_address("127.0.0.1", {"for=192.0.2.60"}, {"127.0.0.5"}, t) == "127.0.0.5");
    CHECK(effective_client_address("127.0.0.1", {"for=127.0.0.1"}, {"198.51.100.7"}, t) == "198.51.100.7");
    // And the other way round, behind a proxy that writes Forwarded.
    t.header = proxy_trust::forwarded;
    CHECK(effective_client_address("127.0.0.1", {"for=192.0.2.60"}, {"203.0.113.9"}, t) == "192.0.2.60");
    CHECK(effective_client_address("127.0.0.1", {}, {"203.0.113.9"}, t) == "127.0.0.1");
}

TEST_CASE("Forwarded (RFC 7239) is read when the proxies write it, with quoted, bracketed and ported nodes") {
    auto t = trusting({"unix", "10.0.0.0/8"});
    t.header = proxy_trust::forwarded;
    CHECK(effective_client_address("unix", {"for=192.0.2.60;proto=http;by=203.0.113.43"}, {"198.51.100.9"}, t) ==
          "192.0.2.60");
    CHECK(effective_client_address("unix", {R"(for="[2001:db8:cafe::17]:4711", For=10.0.0.1)"}, {}, t) ==
          "2001:db8:cafe::17");
    CHECK(effective_client_address("unix", {R"(for="192.0.2.43:47011")"}, {}, t) == "192.0.2.43");
    CHECK(effective_client_address("unix", {"proto=https"}, {}, t) == "unix");
}
