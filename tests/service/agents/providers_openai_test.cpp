// The OpenAI-compatible provider against a fake Chat Completions server (tests/fixtures/providers)
// that checks every request the way the API reference describes and answers in its shapes.

#include "service/agents/providers/openai.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/fake_model_api.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

using namespace airlock;
using namespace airlock::service::providers;
using namespace std::chrono_literals;
using airlock::testing::ask;
using airlock::testing::fake_model_api;
using airlock::testing::ledger_tools;
using airlock::testing::log_capture;
using airlock::testing::what;
namespace json = boost::json;

namespace {

constexpr char const* key = "sk-test-7f3a9c0e5b1d4a6f8e2c0b9d7a5f3e1c";

struct fixture : airlock::testing::provider_fixture {
    fixture() : provider_fixture("openai_server.mjs", "/v1", key, openai_wire()) {}
};

}  // namespace

TEST_CASE("an OpenAI-compatible provider returns the model's answer with usage and finish reason") {
    fixture f;
    auto r = f.complete("plain", ask("what is my balance?"));
    INFO(what(r));
    REQUIRE(r.has_value());
    CHECK(r->text == "Hello. You said: what is my balance?");
    CHECK(r->tool_calls.empty());
    CHECK(r->stop == core::stop_reason::end_turn);
    CHECK(r->usage == core::token_usage{20, 7});
    CHECK(r->model == "plain-2026-01-01");

    auto sent = f.api.request(0);
    CHECK(sent.at("headers").at("authorization").as_string() == std::string("Bearer ") + key);
    auto const& messages = sent.at("body").at("messages").as_array();
    REQUIRE(messages.size() == 2);
    CHECK(messages[0].at("role") == "system");
    CHECK(messages[0].at("content") == "You are a careful teller.");
    CHECK(!sent.at("body").as_object().contains("tools"));
}

TEST_CASE("an OpenAI-compatible provider sends its configured extra headers beside the key") {
    fixture f;
    auto s = f.settings("error-400");
    s.headers = {{"OpenAI-Organization", "org-7c1e0b"}, {"X-Tenant", "a"}};
    auto r = f.complete(s, ask("hi"));
    REQUIRE(r.has_error());
    auto headers = f.api.request(0).at("headers").as_object();
    CHECK(headers.at("openai-organization") == "org-7c1e0b");
    CHECK(headers.at("x-tenant") == "a");
    CHECK(headers.at("authorization").as_string() == std::string("Bearer ") + key);
}

TEST_CASE("an OpenAI-compatible provider returns the tool calls the model asked for, arguments parsed") {
    fixture f;
    auto req = ask("compare alice and bob");
    req.tools = ledger_tools();
    auto r = f.complete("tools", req);
    INFO(what(r));
    REQUIRE(r.has_value());
    CHECK(r->stop == core::stop_reason::tool_use);
    REQUIRE(r->tool_calls.size() == 2);
    CHECK(r->tool_calls[0].id == "call_1abc");
    CHECK(r->tool_calls[0].name == "ledger__read");
    CHECK(r->tool_calls[0].arguments == json::parse(R"({"account":"alice"})"));
    CHECK(r->tool_calls[1].name == "ledger__history");
    CHECK(r->tool_calls[1].arguments == json::parse(R"({"account":"bob"})"));
    CHECK(r->text.empty());

    auto tools = f.api.request(0).at("body").at("tools").as_array();
    REQUIRE(tools.size() == 2);
    CHECK(tools[0].at("type") == "function");
    CHECK(tools[0].at("function").at("parameters").at("required").as_array().size() == 1);
}

TEST_CASE("an OpenAI-compatible provider sends tool results back as tool messages and gets the final answer") {
    fixture f;
    auto req = ask("compare alice and bob");
    req.tools = ledger_tools();
    auto first = f.complete("tools", req);
    REQUIRE(first.has_value());
    req.messages.push_back(core::model_message{core::message_role::assistant, first->text, first->tool_calls, {}, false});
    req.messages.push_back(core::model_message{core::message_role::tool, "alice: 120 EUR", {}, first->tool_calls[0].id, false});
    req.messages.push_back(core::model_message{core::message_role::tool, "not permitted", {}, first->tool_calls[1].id, true});
    auto second = f.complete("tools", req);
    INFO(what(second));
    REQUIRE(second.has_value());
    CHECK(second->text == "Done: alice: 120 EUR | Error: not permitted");
    CHECK(second->stop == core::stop_reason::end_turn);

    auto messages = f.api.request(1).at("body").at("messages").as_array();
    REQUIRE(messages.size() == 5);
    auto const& assistant = messages[2].as_object();
    CHECK(assistant.at("role") == "assistant");
    CHECK(assistant.at("content").is_null());
    auto const& call = assistant.at("tool_calls").as_array().at(0);
    CHECK(call.at("function").at("arguments").as_string() == R"({"account":"alice"})");
    CHECK(messages[3].at("role") == "tool");
    CHECK(messages[3].at("tool_call_id") == "call_1abc");
}

TEST_CASE("an OpenAI-compatible provider tolerates the variations of Ollama and llama.cpp") {
    fixture f;
    auto req = ask("balance of alice");
    req.tools = ledger_tools();
    auto r = f.complete("lenient", req);
    INFO(what(r));
    REQUIRE(r.has_value());
    // Arguments already an object, no call id, empty content, finish_reason "stop", no usage.
    REQUIRE(r->tool_calls.size() == 1);
    CHECK(r->tool_calls[0].id == "call_0");
    CHECK(r->tool_calls[0].arguments == json::parse(R"({"account":"alice"})"));
    CHECK(r->stop == core::stop_reason::tool_use);
    CHECK(r->usage == core::token_usage{0, 0});

    req.messages.push_back(core::model_message{core::message_role::assistant, r->text, r->tool_calls, {}, false});
    req.messages.push_back(core::model_message{core::message_role::tool, "alice: 120 EUR", {}, "call_0", false});
    auto second = f.complete("lenient", req);
    INFO(what(second));
    REQUIRE(second.has_value());
    CHECK(second->text == "Done: alice: 120 EUR");
}

TEST_CASE("an OpenAI-compatible provider reports a 400 as refused, quoting the provider's message") {
    fixture f;
    auto r = f.complete("error-400", ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::refused);
    CHECK(r.error().tool == "model://openai/fake");
    CHECK_THAT(r.error().detail, Catch::Contains("HTTP 400") && Catch::Contains("must be between 0 and 2"));
    CHECK(f.api.requests() == 1);
}

TEST_CASE("a wrong OpenAI key is refused with 401 and appears in no error and no log line") {
    fixture f;
    log_capture logs(spdlog::level::trace);
    std::string const wrong = "sk-test-WRONG-0123456789abcdef0123456789";
    auto s = f.settings("plain");
    s.api_key = wrong;
    auto r = f.complete(s, ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::refused);
    CHECK_THAT(r.error().detail, Catch::Contains("HTTP 401") && Catch::Contains("Incorrect API key provided: [redacted]"));
    // The server echoed the key it was given; neither the error nor any log line repeats it.
    CHECK(f.api.request(0).at("headers").at("authorization").as_string() == "Bearer " + wrong);
    CHECK(r.error().detail.find(wrong) == std::string::npos);
    CHECK(r.error().detail.find("WRONG") == std::string::npos);
    CHECK(!logs.contains(wrong));
    CHECK(!logs.contains(key));
}

TEST_CASE("an OpenAI-compatible provider honours a Retry-After given as an HTTP date") {
    fixture f;
    auto r = f.complete("429-date", ask("hi"));
    INFO(what(r));
    REQUIRE(r.has_value());
    CHECK(r->text == "after the rate limit");
    CHECK(f.api.requests() == 2);
}

TEST_CASE("a 429 asking for a longer wait than max_retry_wait is refused without retrying") {
    fixture f;
    auto s = f.settings("429");
    s.http.max_retry_wait = 100ms;
    auto r = f.complete(s, ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::refused);
    CHECK_THAT(r.error().detail, Catch::Contains("HTTP 429") && Catch::Contains("not retried"));
    CHECK(f.api.requests() == 1);
}

TEST_CASE("a run's token limit goes out in the field the provider is configured for") {
    fixture f;
    auto req = ask("hi");
    req.max_tokens = 300;
    REQUIRE(f.complete("plain", req).has_value());
    auto s = f.settings("plain");
    s.max_tokens_field = "max_completion_tokens";
    REQUIRE(f.complete(s, req).has_value());
    auto first = f.api.request(0).at("body").as_object();
    auto second = f.api.request(1).at("body").as_object();
    CHECK(first.at("max_tokens") == 300);
    CHECK(!first.contains("max_completion_tokens"));
    CHECK(second.at("max_completion_tokens") == 300);
    CHECK(!second.contains("max_tokens"));
}

TEST_CASE("an https provider is verified against its configured CA, and an unknown certificate never gets the key") {
    airlock::testing::temp_dir dir{"airlock-provider-tls"};
    auto cert = (dir.path() / "cert.pem").string();
    auto tls_key = (dir.path() / "key.pem").string();
    auto made = airlock::testing::run_command({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                               "ec_paramgen_curve:P-256", "-nodes", "-keyout", tls_key, "-out", cert,
                                               "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                                               "subjectAltName=IP:127.0.0.1"});
    REQUIRE(made.exit_code == 0);
    fake_model_api api("openai_server.mjs", key, {"TLS_CERT=" + cert, "TLS_KEY=" + tls_key});
    boost::asio::io_context ioc;
    log_capture logs(spdlog::level::trace);

    auto s = airlock::testing::settings_for(api, "/v1", "plain", key);
    s.http.base_url = "https://127.0.0.1:" + std::to_string(api.port) + "/v1";
    REQUIRE(s.http.egress.add(core::remote_destination{"https", "127.0.0.1", api.port}));

    auto untrusted = s;
    http_provider refused(ioc.get_executor(), untrusted, openai_wire());
    auto r = airlock::testing::run_on(ioc, refused.async_complete(ask("hi")));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::unreachable);
    CHECK_THAT(r.error().detail, Catch::Contains("TLS handshake"));

    s.http.ca_file = cert;
    http_provider trusted(ioc.get_executor(), s, openai_wire());
    auto ok = airlock::testing::run_on(ioc, trusted.async_complete(ask("hi")));
    INFO(what(ok));
    REQUIRE(ok.has_value());
    CHECK(ok->text == "Hello. You said: hi");
    CHECK(!logs.contains(key));
}
