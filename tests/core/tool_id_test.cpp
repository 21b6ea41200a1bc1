#include "core/tool_id.hpp"

#include <catch2/catch.hpp>

using airlock::core::tool_id;

TEST_CASE("a tool URI parses into server and name and formats back") {
    auto id = tool_id::parse("tool://ledger/post");
    REQUIRE(id.has_value());
    CHECK(id->server() == "ledger");
    CHECK(id->name() == "post");
    CHECK(id->uri() == "tool://ledger/post");
    CHECK(id->wire_name() == "ledger__post");
}

TEST_CASE("dots in a component are shown as dashes in the wire name and read back") {
    auto id = tool_id::parse("tool://files.v2/read.text");
    REQUIRE(id.has_value());
    CHECK(id->wire_name() == "files-v2__read-text");
    auto back = tool_id::from_wire_name("files-v2__read-text");
    REQUIRE(back.has_value());
    CHECK(*back == *id);
}

TEST_CASE("malformed tool URIs are refused naming what is wrong") {
    struct bad {
        char const* uri;
        char const* says;
    };
    bad const cases[] = {
        {"ledger/post", "tool://"},
        {"TOOL://ledger/post", "tool://"},
        {"tool://ledger", "no '/'"},
        {"tool:///post", "server name is empty"},
        {"tool://ledger/", "tool name is empty"},
        {"tool://led-ger/post", "'-'"},
        {"tool://ledger/po-st", "'-'"},
        {"tool://led__ger/post", "\"__\""},
        {"tool://ledger/_post", "'_'"},
        {"tool://ledger_/post", "'_'"},
        {"tool://ledger/a/b", "contains '/'"},
        {"tool://ledger/po st", "' '"},
        {"tool://ledger/p\xC3\xB6st", "byte"},
        {"tool://ledger/post ", "position 4"},
    };
    for (auto const& c : cases) {
        INFO(c.uri);
        auto id = tool_id::parse(c.uri);
        REQUIRE_FALSE(id.has_value());
        CHECK(id.error().code == "invalid_tool_id");
        CHECK_THAT(id.error().message, Catch::Contains(c.says));
    }
}

TEST_CASE("wire-name resolution is byte-for-byte: no case folding, no trimming") {
    auto want = *tool_id::parse("tool://ledger/read");
    CHECK(*tool_id::from_wire_name("ledger__read") == want);
    auto upper = tool_id::from_wire_name("ledger__Read");
    REQUIRE(upper.has_value());
    CHECK_FALSE(*upper == want);
    CHECK_FALSE(tool_id::from_wire_name("ledger__read ").has_value());
    CHECK_FALSE(tool_id::from_wire_name(" ledger__read").has_value());
    CHECK_FALSE(tool_id::from_wire_name("ledger_read").has_value());
    CHECK_FALSE(tool_id::from_wire_name("ledger__read.x").has_value());
}
