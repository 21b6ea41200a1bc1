#include "core/tool.hpp"

#include <catch2/catch.hpp>

using namespace airlock::core;

namespace {
constexpr tool_error_kind all_kinds[] = {tool_error_kind::unreachable, tool_error_kind::refused,
                                         tool_error_kind::timed_out, tool_error_kind::tool_failed,
                                         tool_error_kind::malformed};
}

TEST_CASE("an unreachable tool's call did not happen") {
    CHECK(disposition_of(tool_error_kind::unreachable) == disposition::did_not_happen);
}

TEST_CASE("a call the far side refused did not happen") {
    CHECK(disposition_of(tool_error_kind::refused) == disposition::did_not_happen);
}

TEST_CASE("a call that timed out is in doubt, because it may have landed") {
    CHECK(disposition_of(tool_error_kind::timed_out) == disposition::in_doubt);
}

TEST_CASE("a call the tool ran and reported as failed has landed") {
    CHECK(disposition_of(tool_error_kind::tool_failed) == disposition::landed);
}

TEST_CASE("a malformed call has landed") {
    CHECK(disposition_of(tool_error_kind::malformed) == disposition::landed);
}

TEST_CASE("every tool error kind's name parses back to the same kind") {
    for (auto k : all_kinds) {
        INFO(to_string(k));
        REQUIRE(parse_tool_error_kind(to_string(k)) == k);
    }
}

TEST_CASE("tool error kinds have the names the journal records") {
    CHECK(to_string(tool_error_kind::unreachable) == "unreachable");
    CHECK(to_string(tool_error_kind::refused) == "refused");
    CHECK(to_string(tool_error_kind::timed_out) == "timed_out");
    CHECK(to_string(tool_error_kind::tool_failed) == "tool_failed");
    CHECK(to_string(tool_error_kind::malformed) == "malformed");
}

TEST_CASE("a tool error kind is parsed byte for byte, with no near misses") {
    CHECK_FALSE(parse_tool_error_kind("Timed_Out"));
    CHECK_FALSE(parse_tool_error_kind(" refused"));
    CHECK_FALSE(parse_tool_error_kind("timed-out"));
    CHECK_FALSE(parse_tool_error_kind(""));
}

TEST_CASE("dispositions have stable names") {
    CHECK(to_string(disposition::did_not_happen) == "did_not_happen");
    CHECK(to_string(disposition::in_doubt) == "in_doubt");
    CHECK(to_string(disposition::landed) == "landed");
}

TEST_CASE("reading the value of a failed tool result throws with the kind as the code") {
    tool_result<int> r = tool_error{tool_error_kind::timed_out, "tool://ledger/post", "no answer in 30s"};
    try {
        (void)r.value();
        FAIL("value() returned on an error");
    } catch (error_exception const& e) {
        CHECK(e.err().code == "timed_out");
        CHECK(e.err().message == "tool://ledger/post: no answer in 30s");
    }
}

TEST_CASE("an in-process destination prints as local") {
    CHECK(to_string(destination{local_destination{}}) == "local");
}

TEST_CASE("a child-process destination prints with its argv0") {
    CHECK(to_string(destination{process_destination{"/usr/bin/ledger-mcp"}}) == "process:/usr/bin/ledger-mcp");
}

TEST_CASE("a remote destination prints as scheme, host and port") {
    CHECK(to_string(destination{remote_destination{"https", "ledger.example.com", 443}}) ==
          "https://ledger.example.com:443");
}

TEST_CASE("a remote IPv6 destination puts its host in brackets") {
    CHECK(to_string(destination{remote_destination{"http", "::1", 8080}}) == "http://[::1]:8080");
    CHECK(to_string(destination{remote_destination{"http", "[::1]", 8080}}) == "http://[::1]:8080");
}
