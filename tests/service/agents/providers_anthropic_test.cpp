// The Anthropic provider against a fake Messages server (tests/fixtures/providers) that checks
// every request the way the API reference describes and answers in its shapes.

#include "service/agents/providers/anthropic.hpp"

#include "tests/support/fake_model_api.hpp"
#include "tests/support/log_capture.hpp"

#include <catch2/catch.hpp>

using namespace airlock;
using namespace airlock::service::providers;
using namespace std::chrono_literals;
using airlock::testing::ask;
using airlock::testing::ledger_tools;
using airlock::testing::log_capture;
using airlock::testing::what;
namespace json = boost::json;

namespace {

constexpr char const* key = "sk-ant-test-0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a";

struct fixture : airlock::testing::provider_fixture {
    fixture() : provider_fixture("anthropic_server.mjs", "", key, anthropic_wire()) {}
};

}  // namespace

TEST_CASE("an Anthropic provider returns the model's answer, the system prompt sent top-level") {
    fixture f;
    auto r = f.complete("plain", ask("what is my balance?"));
    INFO(what(r));
    REQUIRE(r.has_value());
    CHECK(r->text == "Hello. You are a careful teller. You said: what is my balance?");
    CHECK(r->stop == core::stop_reason::end_turn);
    // Fresh and cached input tokens both count: 10 + 5.
    CHECK(r->usage == core::token_usage{15, 9});
    CHECK(r->model == "plain-20260101");

    auto sent = f.api.request(0);
    CHECK(sent.at("headers").at("x-api-key").as_string() == key);
    CHECK(sent.at("headers").at("anthropic-version") == "2023-06-01");
    CHECK(sent.at("body").at("system") == "You are a careful teller.");
    CHECK(sent.at("body").at("max_tokens") == 4096);
    CHECK(sent.at("body").at("messages").as_array().size() == 1);
}

TEST_CASE("an Anthropic provider returns tool_use blocks as tool calls beside the text") {
    fixture f;
    auto req = ask("compare alice and bob");
    req.tools = ledger_tools();
    req.max_tokens = 512;
    auto r = f.complete("tools", req);
    INFO(what(r));
    REQUIRE(r.has_value());
    CHECK(r->stop == core::stop_reason::tool_use);
    CHECK(r->text == "Let me look that up.");
    REQUIRE(r->tool_calls.size() == 2);
    CHECK(r->tool_calls[0] == core::model_tool_call{"toolu_01", "ledger__read", json::parse(R"({"account":"alice"})")});
    CHECK(r->tool_calls[1] == core::model_tool_call{"toolu_02", "ledger__history", json::parse(R"({"account":"bob"})")});

    auto body = f.api.request(0).at("body").as_object();
    CHECK(body.at("max_tokens") == 512);
    CHECK(body.at("tools").as_array().at(0).at("input_schema").at("type") == "object");
}

TEST_CASE("an Anthropic provider sends tool results as tool_result blocks, is_error on the failed one") {
    fixture f;
    auto req = ask("compare alice and bob");
    req.tools = ledger_tools();
    auto first = f.complete("tools", req);
    REQUIRE(first.has_value());
    req.messages.push_back(core::model_message{core::message_role::assistant, first->text, first->tool_calls, {}, false});
    req.messages.push_back(core::model_message{core::message_role::tool, "alice: 120 EUR", {}, "toolu_01", false});
    req.messages.push_back(core::model_message{core::message_role::tool, "not permitted", {}, "toolu_02", true});
    auto second = f.complete("tools", req);
    INFO(what(second));
    REQUIRE(second.has_value());
    CHECK(second->text == "Done: ok: alice: 120 EUR | failed: not permitted");
    CHECK(second->stop == core::stop_reason::end_turn);

    // Both results travel in one user turn right after the assistant's tool_use turn.
    auto messages = f.api.request(1).at("body").at("messages").as_array();
    REQUIRE(messages.size() == 3);
    CHECK(messages[1].at("role") == "assistant");
    CHECK(messages[1].at("content").as_array().size() == 3);
    CHECK(messages[2].at("role") == "user");
    auto const& results = messages[2].at("content").as_array();
    REQUIRE(results.size() == 2);
    CHECK(results[0].at("type") == "tool_result");
    CHECK(!results[0].as_object().contains("is_error"));
    CHECK(results[1].at("is_error") == true);
}

TEST_CASE("an Anthropic provider reports a 400 as refused, quoting the error type and message") {
    fixture f;
    auto r = f.complete("error-400", ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::refused);
    CHECK(r.error().tool == "model://anthropic/fake");
    CHECK_THAT(r.error().detail,
               Catch::Contains("HTTP 400") && Catch::Contains("invalid_request_error: temperature"));
}

TEST_CASE("a wrong Anthropic key is refused with 401 and appears in no error and no log line") {
    fixture f;
    log_capture logs(spdlog::level::trace);
    std::string const wrong = "sk-ant-WRONG-00112233445566778899aabbcc";
    auto s = f.settings("plain");
    s.api_key = wrong;
    auto r = f.complete(s, ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::refused);
    CHECK_THAT(r.error().detail, Catch::Contains("authentication_error") && Catch::Contains("[redacted]"));
    CHECK(f.api.request(0).at("headers").at("x-api-key").as_string() == wrong);
    CHECK(r.error().detail.find("WRONG") == std::string::npos);
    CHECK(!logs.contains(wrong));
    CHECK(!logs.contains(key));
}
