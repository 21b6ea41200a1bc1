#include "mcp/protocol/list_cursor.hpp"

#include <catch2/catch.hpp>

using namespace airlock::mcp;

namespace {

list_cursor_sealer sealer(std::uint8_t seed = 3) {
    std::array<std::uint8_t, 32> key{};
    key.fill(seed);
    return list_cursor_sealer(key);
}

}  // namespace

TEST_CASE("a list cursor opens to the position it was sealed with, upstream cursor included") {
    auto s = sealer();
    list_position pos{"everything", std::string("page \"2\" of 9"), 17};
    auto c = s.seal("prompts/list", "alice", pos);
    auto opened = s.open(c, "prompts/list", "alice");
    REQUIRE(opened.has_value());
    CHECK(*opened == pos);
    list_position first{"fixture", std::nullopt, 0};
    CHECK(s.open(s.seal("tools/list", "alice", first), "tools/list", "alice").value() == first);
}

TEST_CASE("a list cursor that was altered, or is used on another list, by another caller or after a restart, is refused") {
    auto s = sealer();
    auto c = s.seal("resources/list", "alice", {"fixture", std::nullopt, 5});
    auto altered = c;
    altered[5] = altered[5] == 'a' ? 'b' : 'a';
    auto refused = s.open(altered, "resources/list", "alice");
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == "invalid_cursor");
    CHECK_THAT(refused.error().message, Catch::StartsWith("invalid cursor: "));
    CHECK_FALSE(s.open(c, "prompts/list", "alice").has_value());
    CHECK_FALSE(s.open(c, "resources/list", "bob").has_value());
    CHECK_FALSE(sealer(4).open(c, "resources/list", "alice").has_value());
    CHECK_FALSE(s.open("o:200", "resources/list", "alice").has_value());
    CHECK_FALSE(s.open("", "resources/list", "alice").has_value());
}
