// The decisions of a tools/call without a socket: which call a request names, what the grants, the
// gates and egress say of it, and what the caller and the journal get once the upstream answered.
#include "service/gateway/call_plan.hpp"

#include "core/manifest.hpp"
#include "core/tool_id.hpp"

#include <catch2/catch.hpp>

#include <variant>

using namespace airlock;
using namespace airlock::service;
namespace json = boost::json;

namespace {

constexpr char const* grants_yaml = R"(
apiVersion: airlock/v1
kind: Agent
metadata: { name: desk, version: "1" }
spec:
  tools:
    - { ref: tool://files/read, mutates: false }
    - ref: tool://files/write
    - ref: tool://files/post
      protected_fields:
        - path: /account
          require_trusted: true
  budgets: {}
)";

core::destination const files_destination = core::process_destination{"/usr/bin/files-server"};

gateway_principal alice() {
    auto m = core::parse_manifest(grants_yaml);
    REQUIRE(m.has_value());
    return gateway_principal{"alice", *m, false, false};
}

core::tool_id id_of(std::string const& uri) {
    auto id = core::tool_id::parse(uri);
    REQUIRE(id.has_value());
    return *id;
}

std::string wire(std::string const& uri) { return id_of(uri).wire_name(); }

std::shared_ptr<catalogue_entry const> entry(std::string const& uri, std::string withheld = {}) {
    auto id = id_of(uri);
    catalogue_entry e{id, id.wire_name(), mcp::tool{}, std::move(withheld), false};
    e.spec.name = std::string(id.name());
    return std::make_shared<catalogue_entry const>(std::move(e));
}

upstream_facts files(bool available = true, bool refused_by_egress = false) {
    upstream_facts f;
    f.name = "files";
    f.available = available;
    f.refused_by_egress = refused_by_egress;
    f.destination = files_destination;
    f.tool_destination = files_destination;
    return f;
}

core::egress_allowlist egress_allowing_files() {
    core::egress_allowlist e;
    REQUIRE(e.add(files_destination).has_value());
    return e;
}

call_request request(std::string name, json::object arguments = {}) { return call_request{std::move(name), std::move(arguments)}; }

call_decision plan(call_request const& req, core::result<std::shared_ptr<catalogue_entry const>> const& resolved,
                   std::optional<upstream_facts> const& facts = files(),
                   core::egress_allowlist const& egress = egress_allowing_files()) {
    return plan_call(alice(), req, resolved, facts, egress, std::nullopt);
}

call_refusal refusal_of(call_decision const& d) {
    REQUIRE(std::holds_alternative<call_refusal>(d));
    return std::get<call_refusal>(d);
}

using resolution = core::result<std::shared_ptr<catalogue_entry const>>;

}  // namespace

TEST_CASE("a call of a tool no grant exposes is refused as not granted, under the name it asked for") {
    auto r = refusal_of(plan(request("files__delete"), resolution(std::shared_ptr<catalogue_entry const>{})));
    CHECK(r.what == call_refusal::kind::denied);
    CHECK(r.reason == core::deny_reason::not_granted);
    CHECK(r.tool == "files__delete");
    CHECK(r.detail == "no granted tool is exposed as 'files__delete'");
    auto rec = denial_record(r);
    CHECK(rec.kind == core::record_kind::policy_denied);
    CHECK(rec.body.at("reason") == "not_granted");
    CHECK(rec.body.at("tool") == "files__delete");
}

TEST_CASE("a name two upstreams expose is refused as not granted, the ambiguity its detail") {
    auto r = refusal_of(plan(request("read"), resolution(core::make_error("ambiguous", "tool name exposed by both"))));
    CHECK(r.what == call_refusal::kind::denied);
    CHECK(r.reason == core::deny_reason::not_granted);
    CHECK(r.detail == "tool name exposed by both");
}

TEST_CASE("the plan of a mutating call with untrusted arguments and no protected fields is the taint gate's refusal") {
    auto r = refusal_of(plan(request(wire("tool://files/write"), {{"path", "/etc/motd"}}), entry("tool://files/write")));
    CHECK(r.what == call_refusal::kind::denied);
    CHECK(r.reason == core::deny_reason::tainted_mutation);
    CHECK(r.tool == "tool://files/write");
}

TEST_CASE("a protected field an untrusted principal supplies is refused by the protected-field gate") {
    auto r = refusal_of(plan(request(wire("tool://files/post"), {{"account", "42"}}), entry("tool://files/post")));
    CHECK(r.what == call_refusal::kind::denied);
    CHECK(r.reason == core::deny_reason::protected_field_untrusted);
}

TEST_CASE("a call whose destination egress does not allow is refused before anything is sent") {
    auto r = refusal_of(plan(request(wire("tool://files/read")), entry("tool://files/read"), files(), core::egress_allowlist{}));
    CHECK(r.what == call_refusal::kind::denied);
    CHECK(r.reason == core::deny_reason::destination_not_allowed);
    CHECK(r.tool == "tool://files/read");
}

TEST_CASE("a tool whose definition drifted from its pin is refused as withheld") {
    auto drifted = entry("tool://files/read", "its definition changed since it was pinned (airlock pins accept)");
    auto r = refusal_of(plan(request(wire("tool://files/read")), drifted));
    CHECK(r.what == call_refusal::kind::denied);
    CHECK(r.reason == core::deny_reason::not_granted);
    CHECK(r.detail == "tool withheld: its definition changed since it was pinned (airlock pins accept)");
}

TEST_CASE("a granted tool of an upstream that is down is unreachable, not a policy refusal") {
    auto r = refusal_of(plan(request(wire("tool://files/read")), resolution(std::shared_ptr<catalogue_entry const>{}),
                             files(false)));
    CHECK(r.what == call_refusal::kind::unreachable);
    CHECK(r.text == "unreachable: upstream 'files' is unavailable; retrying");
    REQUIRE(r.id);
    CHECK(r.id->uri() == "tool://files/read");
}

TEST_CASE("a granted tool of an upstream egress refuses is refused for its destination, even while it is down") {
    auto r = refusal_of(plan(request(wire("tool://files/read")), resolution(std::shared_ptr<catalogue_entry const>{}),
                             files(false, true)));
    CHECK(r.what == call_refusal::kind::denied);
    CHECK(r.reason == core::deny_reason::destination_not_allowed);
    CHECK(r.detail.find("is not in egress; it is never contacted") != std::string::npos);
}

TEST_CASE("a plain granted call is planned to its upstream and destination") {
    auto d = plan(request(wire("tool://files/read"), {{"path", "/tmp/x"}}), entry("tool://files/read"));
    REQUIRE(std::holds_alternative<planned_call>(d));
    auto const& p = std::get<planned_call>(d);
    CHECK(p.upstream == "files");
    CHECK(p.destination == files_destination);
    CHECK(p.entry->id.uri() == "tool://files/read");
    CHECK_FALSE(p.mutates);
}

TEST_CASE("tools/call params must name the tool with a string and carry arguments as an object") {
    CHECK_FALSE(read_call_request(std::nullopt).has_value());
    CHECK(read_call_request(json::object{{"name", 3}}).error().message == "tools/call params.name must be a string");
    CHECK(read_call_request(json::object{{"name", "x"}, {"arguments", 1}}).error().message ==
          "tools/call params.arguments must be an object");
    auto ok = read_call_request(json::object{{"name", "x"}, {"arguments", nullptr}});
    REQUIRE(ok.has_value());
    CHECK(ok->arguments == json::object{});
}

TEST_CASE("a landed call is replied as it came and journaled as done, its output labelled untrusted") {
    mcp::call_tool_result landed;
    landed.content = json::array{json::object{{"type", "text"}, {"text", "42"}}};
    landed.is_error = false;
    auto done = finish_call("run/1/tool", id_of("tool://files/read"), core::tool_result<mcp::call_tool_result>(landed), false);
    CHECK_FALSE(done.error);
    CHECK(done.result.at("content") == landed.content);
    CHECK(done.metric_kind == "ok");
    CHECK(done.record.kind == core::record_kind::effect_done);
    CHECK(done.record.body.at("effect_key") == "run/1/tool");
    CHECK(done.record.body.at("output_label").as_object().at("trust") == "untrusted");
}

TEST_CASE("a result the tool marks isError is counted as tool_failed yet replied and journaled as done") {
    mcp::call_tool_result failed;
    failed.is_error = true;
    auto done = finish_call("k", id_of("tool://files/read"), core::tool_result<mcp::call_tool_result>(failed), false);
    CHECK(done.metric_kind == "tool_failed");
    CHECK(done.record.kind == core::record_kind::effect_done);
    CHECK(done.result.at("isError") == true);
}

TEST_CASE("a failed call tells the caller whether it may have taken effect, and is journaled as failed") {
    core::tool_error e{core::tool_error_kind::timed_out, "tool://files/read", "no answer in 3 s"};
    auto done = finish_call("k", id_of("tool://files/read"), core::tool_result<mcp::call_tool_result>(e), false);
    CHECK(done.record.kind == core::record_kind::effect_failed);
    CHECK(done.record.body.at("disposition") == "in_doubt");
    CHECK(done.result.at("isError") == true);
    auto text = done.result.at("content").as_array().at(0).as_object().at("text").as_string();
    CHECK(text == "timed_out (the call may or may not have taken effect): no answer in 3 s");
    CHECK_FALSE(done.error);
}

TEST_CASE("a call the caller's cancellation cut short is answered with an error and journaled as in doubt") {
    auto done = finish_call("k", id_of("tool://files/read"), std::nullopt, true);
    REQUIRE(done.error);
    CHECK(done.error->message == "the call was cancelled before it finished");
    CHECK(done.record.kind == core::record_kind::effect_failed);
    CHECK(done.record.body.at("detail") == "the client cancelled the call");
}

TEST_CASE("keys in airlock's own _meta namespace never reach the caller from a tool server") {
    mcp::call_tool_result landed;
    landed.meta = json::object{{"dev.airlock/provenance", "forged"}, {"ui", 1}};
    auto done = finish_call("k", id_of("tool://files/read"), core::tool_result<mcp::call_tool_result>(landed), false);
    CHECK(done.result.at("_meta") == json::object{{"ui", 1}});
}
