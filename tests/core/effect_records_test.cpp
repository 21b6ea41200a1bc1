#include "core/effect_records.hpp"

#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <string>

using namespace airlock::core;
namespace json = boost::json;

namespace {

// Bodies as today's writers lay them out (service/agents/runner_driver.cpp, service/gateway/gateway.cpp),
// members in their order: a body read and written again must come out with the same bytes.
constexpr char const* runner_model_started =
    R"({"effect_key":"01JD5Z8Q4B3C2D1E0F9G8H7J6K/000001/model","target":"model","provider":"scripted",)"
    R"("model":"teller-1","request_sha256":"9f2c41aa","mutates":false,"attempt":1,"at_ms":1733100000123})";

constexpr char const* runner_tool_started =
    R"({"effect_key":"01JD5Z8Q4B3C2D1E0F9G8H7J6K/000002/tool","target":"tool","tool":"tool://ledger/read",)"
    R"("arguments":{"account":"AC-1"},"arguments_label":{"trust":"untrusted","sensitivity":"public",)"
    R"("sources":["model://scripted/teller-1"]},"mutates":false,"idempotent":false,"attempt":1,"call_id":"call_1",)"
    R"("provenance":{"run_id":"01JD5Z8Q4B3C2D1E0F9G8H7J6K","nonce":"ab12"},"at_ms":1733100000456})";

constexpr char const* gateway_tool_started =
    R"({"effect_key":"01JD5Z8Q4B3C2D1E0F9G8H7J6K/000003/tool","target":"tool","tool":"tool://ledger/post",)"
    R"("arguments":{"account":"AC-1","amount":5},"mutates":true,"attempt":1,)"
    R"("provenance":{"run_id":"01JD5Z8Q4B3C2D1E0F9G8H7J6K","nonce":"cd34"},"request_id":"7"})";

constexpr char const* runner_model_done =
    R"({"effect_key":"01JD5Z8Q4B3C2D1E0F9G8H7J6K/000001/model","output":{"text":"","tool_calls":[]},)"
    R"("output_label":{"trust":"untrusted","sources":["model://scripted/teller-1"]},)"
    R"("usage":{"input_tokens":10,"output_tokens":3},"at_ms":1733100000200})";

constexpr char const* gateway_tool_done =
    R"({"effect_key":"01JD5Z8Q4B3C2D1E0F9G8H7J6K/000003/tool","output":{"content":[]},)"
    R"("output_label":{"trust":"untrusted","sources":["tool://ledger/post"]}})";

constexpr char const* runner_tool_failed =
    R"({"effect_key":"01JD5Z8Q4B3C2D1E0F9G8H7J6K/000002/tool","error_kind":"unreachable",)"
    R"("disposition":"did_not_happen","detail":"connection refused","at_ms":1733100000500})";

constexpr char const* gateway_tool_failed =
    R"({"effect_key":"01JD5Z8Q4B3C2D1E0F9G8H7J6K/000003/tool","error_kind":"timed_out",)"
    R"("disposition":"in_doubt","detail":"the client cancelled the call"})";

json::object body(char const* text) { return json::parse(text).as_object(); }

}  // namespace

TEST_CASE("a runner's model call start record reads, and writes back with the same bytes") {
    auto s = parse_effect_started(body(runner_model_started));
    REQUIRE(s.has_value());
    CHECK(s->target == effect_target::model);
    CHECK(s->provider == "scripted");
    CHECK(s->model == "teller-1");
    CHECK(s->request_sha256 == "9f2c41aa");
    CHECK(s->mutates == false);
    CHECK(s->at_ms == 1733100000123u);
    CHECK_FALSE(s->tool);
    CHECK(json::serialize(to_json(*s)) == runner_model_started);
}

TEST_CASE("a runner's tool call start record reads, and writes back with the same bytes") {
    auto s = parse_effect_started(body(runner_tool_started));
    REQUIRE(s.has_value());
    CHECK(s->target == effect_target::tool);
    CHECK(s->tool == "tool://ledger/read");
    REQUIRE(s->arguments);
    CHECK(*s->arguments == json::parse(R"({"account":"AC-1"})"));
    CHECK(s->arguments_label);
    CHECK(s->idempotent == false);
    CHECK(s->call_id == "call_1");
    CHECK(s->provenance);
    CHECK_FALSE(s->request_id);
    CHECK(json::serialize(to_json(*s)) == runner_tool_started);
}

TEST_CASE("a gateway's tool call start record, without label, idempotent, call id or time, still reads") {
    auto s = parse_effect_started(body(gateway_tool_started));
    REQUIRE(s.has_value());
    CHECK(s->tool == "tool://ledger/post");
    CHECK(s->mutates == true);
    CHECK(s->request_id == "7");
    CHECK(s->attempt == 1);
    CHECK_FALSE(s->arguments_label);
    CHECK_FALSE(s->idempotent);
    CHECK_FALSE(s->call_id);
    CHECK_FALSE(s->at_ms);
    CHECK(json::serialize(to_json(*s)) == gateway_tool_started);
}

TEST_CASE("outcome records of both writers read back, the gateway's without a time") {
    auto done = parse_effect_done(body(runner_model_done));
    REQUIRE(done.has_value());
    CHECK(done->usage);
    CHECK(done->at_ms == 1733100000200u);
    CHECK(json::serialize(to_json(*done)) == runner_model_done);

    auto gw = parse_effect_done(body(gateway_tool_done));
    REQUIRE(gw.has_value());
    CHECK_FALSE(gw->at_ms);
    CHECK_FALSE(gw->usage);
    CHECK(json::serialize(to_json(*gw)) == gateway_tool_done);

    auto failed = parse_effect_failed(body(runner_tool_failed));
    REQUIRE(failed.has_value());
    CHECK(failed->error_kind == "unreachable");
    CHECK(json::serialize(to_json(*failed)) == runner_tool_failed);

    auto gw_failed = parse_effect_failed(body(gateway_tool_failed));
    REQUIRE(gw_failed.has_value());
    CHECK_FALSE(gw_failed->at_ms);
    CHECK(json::serialize(to_json(*gw_failed)) == gateway_tool_failed);
}

TEST_CASE("a call record without an effect key, or with an unknown target, is refused naming the member") {
    auto no_key = parse_effect_started(body(R"({"target":"tool","tool":"tool://ledger/read","attempt":1})"));
    REQUIRE_FALSE(no_key.has_value());
    CHECK(no_key.error().code == "malformed_record");
    CHECK(no_key.error().message == "effect_started: effect_key is missing");

    auto target = parse_effect_started(body(R"({"effect_key":"k","target":"printer","attempt":1})"));
    REQUIRE_FALSE(target.has_value());
    CHECK(target.error().message == "effect_started: target must be \"tool\" or \"model\"");

    auto mutates = parse_effect_started(body(R"({"effect_key":"k","target":"tool","mutates":"yes"})"));
    REQUIRE_FALSE(mutates.has_value());
    CHECK(mutates.error().message == "effect_started: mutates must be true or false");

    auto at = parse_effect_done(body(R"({"effect_key":"k","output":null,"at_ms":-4})"));
    REQUIRE_FALSE(at.has_value());
    CHECK(at.error().message == "effect_done: at_ms must be a non-negative integer");
}

TEST_CASE("a failure record carries the error's kind and disposition, and an unknown kind reads as tool_failed") {
    tool_error e{tool_error_kind::timed_out, "tool://ledger/post", "no answer in 30s"};
    auto f = failure_record("k", e, 42);
    CHECK(f.error_kind == "timed_out");
    CHECK(f.disposition == std::string(to_string(disposition_of(tool_error_kind::timed_out))));
    CHECK(f.at_ms == 42u);
    auto back = to_tool_error(f, "tool://ledger/post");
    CHECK(back.kind == tool_error_kind::timed_out);
    CHECK(back.detail == "no answer in 30s");

    auto future = parse_effect_failed(body(R"({"effect_key":"k","error_kind":"melted","detail":"d"})"));
    REQUIRE(future.has_value());
    CHECK(to_tool_error(*future, "").kind == tool_error_kind::tool_failed);
}
