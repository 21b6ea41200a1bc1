#include "mcp/protocol/mrtr.hpp"

#include <boost/json/parse.hpp>

#include <catch2/catch.hpp>

using namespace airlock::mcp;
namespace json = boost::json;

namespace {

mrtr::state_sealer sealer() {
    std::array<std::uint8_t, 32> key{};
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint8_t>(i * 7 + 1);
    return mrtr::state_sealer(key);
}

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

}  // namespace

TEST_CASE("a requestState opens for the caller and request it was sealed for") {
    auto s = sealer();
    mrtr::request_state st{"00ff", 2, 1'000};
    auto text = s.seal(st, "alice", "digest-1");
    auto opened = s.open(text, "alice", "digest-1", 999);
    REQUIRE(opened.has_value());
    CHECK(*opened == st);
}

TEST_CASE("a requestState altered by one character is refused") {
    auto s = sealer();
    auto text = s.seal({"00ff", 1, 1'000}, "alice", "d");
    auto tampered = text + "-TAMPERED";
    CHECK(s.open(tampered, "alice", "d", 0).error().code == "invalid_request_state");
    auto flipped = text;
    flipped[4] = flipped[4] == '0' ? '1' : '0';  // the pending id
    CHECK_THAT(s.open(flipped, "alice", "d", 0).error().message, Catch::Contains("failed verification"));
}

TEST_CASE("a requestState presented by another caller or on another request is refused") {
    auto s = sealer();
    auto text = s.seal({"00ff", 1, 1'000}, "alice", "d");
    CHECK_FALSE(s.open(text, "bob", "d", 0).has_value());
    CHECK_FALSE(s.open(text, "alice", "other-digest", 0).has_value());
}

TEST_CASE("a lapsed requestState is refused as expired") {
    auto s = sealer();
    auto text = s.seal({"00ff", 1, 1'000}, "alice", "d");
    auto r = s.open(text, "alice", "d", 1'000);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("expired"));
}

TEST_CASE("the request digest ignores _meta, inputResponses and requestState but not the arguments") {
    auto a = obj(R"({"name":"t","arguments":{"x":1,"y":2},"_meta":{"k":1}})");
    auto b = obj(R"({"arguments":{"y":2,"x":1},"name":"t","inputResponses":{"q":{}},"requestState":"s"})");
    auto c = obj(R"({"name":"t","arguments":{"x":2,"y":2}})");
    CHECK(mrtr::request_digest("tools/call", a) == mrtr::request_digest("tools/call", b));
    CHECK(mrtr::request_digest("tools/call", a) != mrtr::request_digest("tools/call", c));
    CHECK(mrtr::request_digest("tools/call", a) != mrtr::request_digest("prompts/get", a));
}

TEST_CASE("inputResponses must be an object of objects, and its absence is no error") {
    CHECK_FALSE(mrtr::input_responses_of(obj(R"({"name":"t"})")).value().has_value());
    CHECK(mrtr::input_responses_of(obj(R"({"inputResponses":{"a":{"action":"cancel"}}})")).value()->contains("a"));
    auto null_responses = mrtr::input_responses_of(obj(R"({"inputResponses":null})"));
    REQUIRE_FALSE(null_responses.has_value());
    CHECK_THAT(null_responses.error().message, Catch::Contains("params.inputResponses must be an object"));
    auto number = mrtr::input_responses_of(obj(R"({"inputResponses":{"user_name":12345}})"));
    REQUIRE_FALSE(number.has_value());
    CHECK_THAT(number.error().message, Catch::Contains("params.inputResponses.user_name"));
}

TEST_CASE("an answer is checked against the kind of question it answers, naming the field") {
    auto where = "inputResponses.q";
    CHECK_FALSE(mrtr::check_input_response("elicitation/create", json::parse(R"({"action":"accept","content":{"n":"A"}})"), where));
    CHECK(*mrtr::check_input_response("elicitation/create", json::parse(R"({"action":"yes"})"), where) ==
          "inputResponses.q.action must be \"accept\", \"decline\" or \"cancel\"");
    CHECK_FALSE(mrtr::check_input_response(
        "sampling/createMessage", json::parse(R"({"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"})"), where));
    CHECK(*mrtr::check_input_response("sampling/createMessage", json::parse(R"({"role":"assistant","content":{}})"), where) ==
          "inputResponses.q.model must be a string");
    CHECK_FALSE(mrtr::check_input_response("roots/list", json::parse(R"({"roots":[{"uri":"file:///r"}]})"), where));
    CHECK(*mrtr::check_input_response("roots/list", json::parse(R"({"roots":[{"name":"x"}]})"), where) ==
          "inputResponses.q.roots[0].uri must be a string");
    CHECK(*mrtr::check_input_response("roots/list", json::parse("12345"), where) == "inputResponses.q must be an object, not an integer");
}

TEST_CASE("an upstream's input request key hint is taken out of the question, and used only when valid") {
    auto p = obj(R"({"message":"m","_meta":{"dev.airlock/inputKey":"user_name"}})");
    CHECK(mrtr::take_key_hint(p) == std::optional<std::string>("user_name"));
    CHECK_FALSE(p.contains("_meta"));
    auto kept = obj(R"({"_meta":{"dev.airlock/inputKey":"has space","progressToken":1}})");
    CHECK_FALSE(mrtr::take_key_hint(kept).has_value());
    CHECK(kept.at("_meta") == json::parse(R"({"progressToken":1})"));
    auto none = obj(R"({"message":"m"})");
    CHECK_FALSE(mrtr::take_key_hint(none).has_value());
}

TEST_CASE("only tools/call, prompts/get and resources/read may end in an InputRequiredResult") {
    CHECK(mrtr::allows_input_required("tools/call"));
    CHECK(mrtr::allows_input_required("prompts/get"));
    CHECK(mrtr::allows_input_required("resources/read"));
    CHECK_FALSE(mrtr::allows_input_required("tools/list"));
    CHECK_FALSE(mrtr::allows_input_required("completion/complete"));
}
