// The two wire formats on canned answers, with no server: what each answer shape becomes, and
// what is refused as malformed, naming what is missing.

#include "service/agents/providers/anthropic.hpp"
#include "service/agents/providers/openai.hpp"

#include <boost/json/parse.hpp>

#include <catch2/catch.hpp>

using namespace airlock;
using namespace airlock::service::providers;
namespace json = boost::json;

namespace {

core::model_result<core::completion> openai(char const* answer) {
    return openai_completion(json::parse(answer), "model://openai/t");
}
core::model_result<core::completion> anthropic(char const* answer) {
    return anthropic_completion(json::parse(answer), "model://anthropic/t");
}

}  // namespace

TEST_CASE("an OpenAI answer whose arguments are not JSON keeps them as the raw string the model wrote") {
    auto r = openai(R"({"choices":[{"message":{"content":null,"tool_calls":[
        {"id":"c1","type":"function","function":{"name":"a__b","arguments":"{\"x\": 1"}}]},"finish_reason":"tool_calls"}]})");
    REQUIRE(r.has_value());
    REQUIRE(r->tool_calls.size() == 1);
    CHECK(r->tool_calls[0].arguments == json::value("{\"x\": 1"));
}

TEST_CASE("an OpenAI answer with content as a list of parts is read as their text") {
    auto r = openai(R"({"choices":[{"message":{"content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]},
        "finish_reason":"stop"}]})");
    REQUIRE(r.has_value());
    CHECK(r->text == "Hello");
}

TEST_CASE("an OpenAI answer with the legacy function_call becomes one tool call") {
    auto r = openai(R"({"choices":[{"message":{"content":null,"function_call":{"name":"a__b","arguments":"{\"x\":1}"}},
        "finish_reason":"function_call"}]})");
    REQUIRE(r.has_value());
    REQUIRE(r->tool_calls.size() == 1);
    CHECK(r->tool_calls[0] == core::model_tool_call{"call_0", "a__b", json::parse(R"({"x":1})")});
    CHECK(r->stop == core::stop_reason::tool_use);
}

TEST_CASE("an OpenAI refusal is the completion's text, ending the turn for a reason of its own") {
    auto r = openai(R"({"choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]})");
    REQUIRE(r.has_value());
    CHECK(r->text == "I can't help with that.");
    CHECK(r->stop == core::stop_reason::other);
}

TEST_CASE("an OpenAI answer cut at the token limit says so") {
    auto r = openai(R"({"choices":[{"message":{"content":"Once upon"},"finish_reason":"length"}]})");
    REQUIRE(r.has_value());
    CHECK(r->stop == core::stop_reason::max_tokens);
}

TEST_CASE("an OpenAI answer without choices is malformed, quoting an error it carries instead") {
    auto r = openai(R"({"error":{"message":"model overloaded"}})");
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::malformed);
    CHECK_THAT(r.error().detail, Catch::Contains("instead of choices") && Catch::Contains("model overloaded"));
    auto empty = openai(R"({"choices":[]})");
    REQUIRE(empty.has_error());
    CHECK_THAT(empty.error().detail, Catch::Contains("no choices[0]"));
}

TEST_CASE("an OpenAI tool call without a function name is malformed, naming its index") {
    auto r = openai(R"({"choices":[{"message":{"tool_calls":[{"id":"c1","function":{"arguments":"{}"}}]}}]})");
    REQUIRE(r.has_error());
    CHECK_THAT(r.error().detail, Catch::Contains("tool_calls[0] without function.name"));
}

TEST_CASE("an Anthropic answer's thinking blocks are skipped and its text blocks joined") {
    auto r = anthropic(R"({"type":"message","content":[{"type":"thinking","thinking":"hmm","signature":"x"},
        {"type":"text","text":"first"},{"type":"text","text":"second"}],"stop_reason":"end_turn",
        "usage":{"input_tokens":3,"output_tokens":4}})");
    REQUIRE(r.has_value());
    CHECK(r->text == "first\nsecond");
    CHECK(r->usage == core::token_usage{3, 4});
}

TEST_CASE("an Anthropic error object in a 200 answer is malformed with its message") {
    auto r = anthropic(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::malformed);
    CHECK_THAT(r.error().detail, Catch::Contains("Overloaded"));
}

TEST_CASE("an Anthropic tool_use block without an id is malformed, naming the block") {
    auto r = anthropic(R"({"content":[{"type":"tool_use","name":"a__b","input":{}}],"stop_reason":"tool_use"})");
    REQUIRE(r.has_error());
    CHECK_THAT(r.error().detail, Catch::Contains("content[0] (tool_use) without an id"));
}

TEST_CASE("an Anthropic request merges consecutive tool results and a user note into one user turn") {
    core::completion_request req;
    req.messages = {
        core::model_message{core::message_role::user, "go", {}, {}, false},
        core::model_message{core::message_role::assistant, "", {core::model_tool_call{"t1", "a__b", json::object{}}}, {}, false},
        core::model_message{core::message_role::tool, "42", {}, "t1", false},
        core::model_message{core::message_role::user, "and then?", {}, {}, false},
    };
    auto body = anthropic_request_body(req, "m", 100);
    auto const& messages = body.at("messages").as_array();
    REQUIRE(messages.size() == 3);
    auto const& last = messages[2].as_object();
    CHECK(last.at("role") == "user");
    REQUIRE(last.at("content").as_array().size() == 2);
    CHECK(last.at("content").as_array()[0].at("type") == "tool_result");
    CHECK(last.at("content").as_array()[1].at("text") == "and then?");
    // The assistant turn had no text: no empty text block, which the API refuses.
    CHECK(messages[1].at("content").as_array().size() == 1);
    CHECK(!body.contains("system"));
}
