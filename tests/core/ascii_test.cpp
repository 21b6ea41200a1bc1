#include "core/ascii.hpp"

#include <catch2/catch.hpp>

using namespace airlock::core;

TEST_CASE("ASCII case folding touches letters A to Z only, never a non-ASCII byte") {
    CHECK(ascii_lowercase("Content-Type: APPLICATION/JSON") == "content-type: application/json");
    CHECK(ascii_lowercase("\xC3\x84Z[`@") == "\xC3\x84z[`@");  // Ä stays two bytes; [ ` @ are not letters
    CHECK(iequals("Bearer", "bEARER"));
    CHECK_FALSE(iequals("Bearer", "Bearer "));
    CHECK_FALSE(iequals("\xC3\x84", "\xC3\xA4"));  // Ä and ä are different bytes, so different
    CHECK(iequals("", ""));
    static_assert(iequals("MCP-Session-Id", "mcp-session-id"));
}

TEST_CASE("trim_ows strips spaces and tabs only; trim_space also CR and LF") {
    CHECK(trim_ows(" \t value \t") == "value");
    CHECK(trim_ows("\r\nvalue\r\n") == "\r\nvalue\r\n");
    CHECK(trim_ows("   ").empty());
    CHECK(trim_space(" \r\n\tvalue\n") == "value");
    CHECK(trim_space("a b") == "a b");
    CHECK(trim_space("").empty());
}
