#include "mcp/client/router.hpp"

#include "core/toolbox.hpp"
#include "tests/support/run_awaitable.hpp"

#include <boost/describe.hpp>
#include <catch2/catch.hpp>

#include <atomic>

using namespace airlock;
using airlock::testing::run_awaitable;
namespace ip = boost::asio::ip;

namespace {

struct ping_args {
    std::string text;
};
BOOST_DESCRIBE_STRUCT(ping_args, (), (text))

// A real in-process tool server that counts how often it ran.
std::shared_ptr<core::toolbox> counting_box(std::string server, std::shared_ptr<std::atomic<int>> calls) {
    auto box = std::make_shared<core::toolbox>(std::move(server));
    auto added = box->add<ping_args>("ping", {.description = "echo", .mutates = false}, [calls](ping_args a) {
        ++*calls;
        return boost::json::value{{"echo", a.text}};
    });
    REQUIRE(added.has_value());
    return box;
}

core::egress_allowlist allow(std::vector<core::destination> ds) {
    core::egress_allowlist list;
    for (auto& d : ds) REQUIRE(list.add(d).has_value());
    return list;
}

}  // namespace

TEST_CASE("the router dispatches a tool to the client routed for its server") {
    auto calls = std::make_shared<std::atomic<int>>(0);
    mcp::tool_router router(allow({core::local_destination{}}));
    REQUIRE(router.add_route("echo", counting_box("echo", calls)).has_value());
    auto r = run_awaitable(router.async_call(*core::tool_id::parse("tool://echo/ping"), {{"text", "hi"}}, std::nullopt));
    REQUIRE(r.has_value());
    CHECK(r->at("echo") == "hi");
    CHECK(*calls == 1);
}

TEST_CASE("an unrouted server is unreachable and the error names the routed servers") {
    auto calls = std::make_shared<std::atomic<int>>(0);
    mcp::tool_router router(allow({core::local_destination{}}));
    REQUIRE(router.add_route("echo", counting_box("echo", calls)).has_value());
    auto r = run_awaitable(router.async_call(*core::tool_id::parse("tool://ledger/post"), {}, std::nullopt));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == core::tool_error_kind::unreachable);
    CHECK_THAT(r.error().detail, Catch::Contains("ledger") && Catch::Contains("routed: echo"));
}

TEST_CASE("a destination outside the egress allowlist is refused before anything is sent") {
    auto calls = std::make_shared<std::atomic<int>>(0);
    mcp::tool_router router(allow({core::remote_destination{"https", "api.example.com", 443}}));
    REQUIRE(router.add_route("echo", counting_box("echo", calls)).has_value());
    auto r = run_awaitable(router.async_call(*core::tool_id::parse("tool://echo/ping"), {{"text", "hi"}}, std::nullopt));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == core::tool_error_kind::unreachable);
    CHECK_THAT(r.error().detail, Catch::Contains("egress_denied"));
    CHECK(*calls == 0);
}

TEST_CASE("the router answers destination per tool, never the union of its routes") {
    auto calls = std::make_shared<std::atomic<int>>(0);
    mcp::tool_router router(allow({core::local_destination{}}));
    REQUIRE(router.add_route("echo", counting_box("echo", calls)).has_value());
    CHECK(router.destination_of(*core::tool_id::parse("tool://echo/ping")) == core::destination{core::local_destination{}});
    auto unrouted = router.destination_of(*core::tool_id::parse("tool://other/x"));
    CHECK_FALSE(router.allowlist().permits(unrouted));
}

TEST_CASE("a server cannot be routed twice") {
    auto calls = std::make_shared<std::atomic<int>>(0);
    mcp::tool_router router(allow({core::local_destination{}}));
    REQUIRE(router.add_route("echo", counting_box("echo", calls)).has_value());
    auto again = router.add_route("echo", counting_box("echo", calls));
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().code == "duplicate_route");
}

TEST_CASE("loopback, private, link-local, metadata and mapped addresses are restricted") {
    for (auto text : {"127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
                      "0.0.0.0", "100.64.0.1", "::1", "fc00::1", "fd00:ec2::254", "fe80::1", "::ffff:127.0.0.1",
                      "::ffff:10.0.0.1", "::", "224.0.0.1"}) {
        INFO(text);
        CHECK(mcp::is_restricted_address(ip::make_address(text)));
    }
    for (auto text : {"93.184.216.34", "172.32.0.1", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "100.128.0.1"}) {
        INFO(text);
        CHECK_FALSE(mcp::is_restricted_address(ip::make_address(text)));
    }
}

TEST_CASE("a restricted address is permitted only when that exact address and port are granted") {
    auto list = allow({core::remote_destination{"http", "127.0.0.1", 8123}});
    CHECK(mcp::address_permitted(list, "http", 8123, ip::make_address("127.0.0.1")));
    CHECK(mcp::address_permitted(list, "http", 8123, ip::make_address("::ffff:127.0.0.1")));
    CHECK_FALSE(mcp::address_permitted(list, "http", 8124, ip::make_address("127.0.0.1")));
    CHECK_FALSE(mcp::address_permitted(list, "https", 8123, ip::make_address("127.0.0.1")));
    CHECK_FALSE(mcp::address_permitted(list, "http", 8123, ip::make_address("127.0.0.2")));
    CHECK(mcp::address_permitted(list, "https", 443, ip::make_address("93.184.216.34")));
}
