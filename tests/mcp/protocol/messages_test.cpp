#include "mcp/protocol/messages.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>
#include <boost/json/value_to.hpp>

#include <catch2/catch.hpp>

using namespace airlock::mcp;
namespace json = boost::json;

TEST_CASE("a tools/list page with unknown keys and _meta reads every tool") {
    auto v = json::parse(R"({
        "tools": [
          {"name": "get_weather", "title": "Weather", "description": "Get weather",
           "inputSchema": {"type": "object", "properties": {"location": {"type": "string"}}},
           "outputSchema": {"type": "object"},
           "annotations": {"readOnlyHint": true, "openWorldHint": false, "futureHint": 1},
           "icons": [{"src": "https://example.com/i.png"}],
           "execution": {"taskSupport": "optional"},
           "_meta": {"com.example/x": 1}},
          {"name": "echo", "inputSchema": {"type": "object"}}
        ],
        "nextCursor": "page-2",
        "somethingNew": {"a": 1},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
    })");
    auto r = parse_list_tools_result(v);
    REQUIRE(r.has_value());
    REQUIRE(r->tools.size() == 2);
    CHECK(r->rejected.empty());
    auto const& t = r->tools[0];
    CHECK(t.name == "get_weather");
    CHECK(t.title == "Weather");
    CHECK(t.description == "Get weather");
    CHECK(t.input_schema.at("properties").at("location").at("type") == "string");
    REQUIRE(t.output_schema.has_value());
    REQUIRE(t.annotations.has_value());
    CHECK(t.annotations->read_only_hint == true);
    CHECK(t.annotations->open_world_hint == false);
    CHECK_FALSE(t.annotations->destructive_hint.has_value());
    REQUIRE(t.icons.has_value());
    CHECK(t.icons->size() == 1);
    REQUIRE(t.meta.has_value());
    CHECK(t.meta->at("com.example/x") == 1);
    CHECK(r->tools[1].name == "echo");
    CHECK(r->next_cursor == "page-2");
    REQUIRE(r->meta.has_value());
}

TEST_CASE("an unreadable tool is set aside with its reason and the rest of the page is kept") {
    auto v = json::parse(R"({"tools": [
        {"name": "good", "inputSchema": {"type": "object"}},
        {"name": "no_schema"},
        {"name": "bad_hint", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": "yes"}},
        {"name": "array_root", "inputSchema": {"type": "array"}},
        42
    ]})");
    auto r = parse_list_tools_result(v);
    REQUIRE(r.has_value());
    REQUIRE(r->tools.size() == 1);
    CHECK(r->tools[0].name == "good");
    REQUIRE(r->rejected.size() == 4);
    CHECK(r->rejected[0].index == 1);
    CHECK(r->rejected[0].name == "no_schema");
    CHECK_THAT(r->rejected[0].reason, Catch::Contains("tools[1].inputSchema is missing"));
    CHECK(r->rejected[1].name == "bad_hint");
    CHECK_THAT(r->rejected[1].reason, Catch::Contains("tools[2].annotations.readOnlyHint must be a boolean, not a string"));
    CHECK_THAT(r->rejected[2].reason, Catch::Contains("tools[3].inputSchema.type must be \"object\""));
    CHECK(r->rejected[3].name.empty());
    CHECK_THAT(r->rejected[3].reason, Catch::Contains("tools[4] must be an object, not an integer"));
}

TEST_CASE("a tools/list result without a tools array fails naming the field") {
    auto missing = parse_list_tools_result(json::parse(R"({"nextCursor":"x"})"));
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().code == "malformed_result");
    CHECK_THAT(missing.error().message, Catch::Contains("tools is missing"));
    auto wrong = parse_list_tools_result(json::parse(R"({"tools":{}})"));
    REQUIRE_FALSE(wrong.has_value());
    CHECK_THAT(wrong.error().message, Catch::Contains("tools must be an array, not an object"));
    auto cursor = parse_list_tools_result(json::parse(R"({"tools":[],"nextCursor":5})"));
    REQUIRE_FALSE(cursor.has_value());
    CHECK_THAT(cursor.error().message, Catch::Contains("nextCursor must be a string"));
}

TEST_CASE("caching hints are read: a negative ttl counts as 0 and an unknown scope as private") {
    auto r = parse_list_tools_result(json::parse(R"({"tools":[],"ttlMs":300000,"cacheScope":"public","resultType":"complete"})"));
    REQUIRE(r.has_value());
    CHECK(r->ttl_ms == 300000);
    CHECK(r->scope == cache_scope::public_scope);
    CHECK(r->result_type == "complete");
    auto odd = parse_list_tools_result(json::parse(R"({"tools":[],"ttlMs":-5,"cacheScope":"shared"})"));
    REQUIRE(odd.has_value());
    CHECK(odd->ttl_ms == 0);
    CHECK(odd->scope == cache_scope::private_scope);
    auto legacy = parse_list_tools_result(json::parse(R"({"tools":[]})"));
    REQUIRE(legacy.has_value());
    CHECK_FALSE(legacy->ttl_ms.has_value());
    CHECK_FALSE(legacy->scope.has_value());
    auto bad = parse_list_tools_result(json::parse(R"({"tools":[],"ttlMs":"soon"})"));
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error().message, Catch::Contains("ttlMs must be a number"));
}

TEST_CASE("a tools/call result keeps its content blocks, structured content and isError") {
    auto r = parse_call_tool_result(json::parse(R"({
        "content": [{"type":"text","text":"5"},{"type":"image","data":"AA==","mimeType":"image/png"},
                    {"type":"something_new","x":1}],
        "structuredContent": {"sum": 5},
        "isError": false,
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name":"s","version":"1"}},
        "extra": true})"));
    REQUIRE(r.has_value());
    CHECK(r->content.size() == 3);
    CHECK(r->content[2].at("type") == "something_new");
    REQUIRE(r->structured_content.has_value());
    CHECK(r->structured_content->at("sum") == 5);
    CHECK(r->is_error == false);
    CHECK(r->meta.has_value());
}

TEST_CASE("structured content may be any JSON value, null included, and is told apart from absent") {
    auto with_null = parse_call_tool_result(json::parse(R"({"content":[],"structuredContent":null})"));
    REQUIRE(with_null.has_value());
    REQUIRE(with_null->structured_content.has_value());
    CHECK(with_null->structured_content->is_null());
    auto array = parse_call_tool_result(json::parse(R"({"content":[],"structuredContent":[1,2]})"));
    REQUIRE(array.has_value());
    CHECK(array->structured_content->is_array());
    auto absent = parse_call_tool_result(json::parse(R"({"content":[]})"));
    REQUIRE(absent.has_value());
    CHECK_FALSE(absent->structured_content.has_value());
    CHECK_FALSE(absent->is_error.has_value());
}

TEST_CASE("a tools/call result with a malformed content block fails naming the block") {
    struct bad {
        char const* text;
        char const* says;
    };
    bad const cases[] = {
        {R"({"isError":true})", "content is missing"},
        {R"({"content":"text"})", "content must be an array"},
        {R"({"content":[{"type":"text"},"x"]})", "content[1] must be an object, not a string"},
        {R"({"content":[{"text":"hi"}]})", "content[0].type is missing"},
        {R"({"content":[{"type":1}]})", "content[0].type must be a string"},
        {R"({"content":[],"isError":"true"})", "isError must be a boolean"},
    };
    for (auto const& c : cases) {
        INFO(c.text);
        auto r = parse_call_tool_result(json::parse(c.text));
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code == "malformed_result");
        CHECK_THAT(r.error().message, Catch::Contains(c.says));
        CHECK_THAT(r.error().message, Catch::StartsWith("tools/call result"));
    }
}

TEST_CASE("an input_required result is refused with its own error code") {
    auto r = parse_call_tool_result(json::parse(R"({"resultType":"input_required","inputRequests":{}})"));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "input_required");
}

TEST_CASE("a result type nobody defined is refused") {
    auto r = parse_call_tool_result(json::parse(R"({"resultType":"partial","content":[]})"));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "malformed_result");
    CHECK_THAT(r.error().message, Catch::Contains("resultType \"partial\""));
}

TEST_CASE("tools/call params read name, arguments and _meta and ignore unknown keys") {
    auto r = parse_call_tool_params(json::parse(R"({"name":"get-sum","arguments":{"a":2,"b":3},
        "_meta":{"progressToken":"p1","dev.airlock/provenance":{"sig":"x"}},"task":{"ttl":5}})"));
    REQUIRE(r.has_value());
    CHECK(r->name == "get-sum");
    REQUIRE(r->arguments.has_value());
    CHECK(r->arguments->at("b") == 3);
    REQUIRE(r->meta.has_value());
    CHECK(r->meta->contains("dev.airlock/provenance"));
}

TEST_CASE("tools/call params without a name or with non-object arguments fail as invalid params") {
    auto no_name = parse_call_tool_params(json::parse(R"({"arguments":{}})"));
    REQUIRE_FALSE(no_name.has_value());
    CHECK(no_name.error().code == "invalid_params");
    CHECK_THAT(no_name.error().message, Catch::Contains("name is missing"));
    auto args = parse_call_tool_params(json::parse(R"({"name":"x","arguments":[1]})"));
    REQUIRE_FALSE(args.has_value());
    CHECK_THAT(args.error().message, Catch::Contains("arguments must be an object, not an array"));
    auto not_object = parse_call_tool_params(json::parse("[]"));
    REQUIRE_FALSE(not_object.has_value());
    CHECK_THAT(not_object.error().message, Catch::Contains("must be an object"));
}

TEST_CASE("initialize params and result read back what was written") {
    initialize_params p{"2025-11-25", json::object{{"roots", json::object{}}}, implementation{"airlock", "0.1.0", "Airlock", std::nullopt},
                        std::nullopt};
    auto back = parse_initialize_params(json::value_from(p));
    REQUIRE(back.has_value());
    CHECK(back->protocol_version == "2025-11-25");
    CHECK(back->client_info == p.client_info);
    CHECK(back->capabilities.contains("roots"));

    auto res = parse_initialize_result(json::parse(R"({"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},
        "serverInfo":{"name":"everything","version":"2.0","websiteUrl":"https://x"},"instructions":"be nice","_meta":{}})"));
    REQUIRE(res.has_value());
    CHECK(res->protocol_version == "2025-06-18");
    CHECK(res->server_info.name == "everything");
    CHECK(res->instructions == "be nice");
}

TEST_CASE("a missing nested field is named by its full path") {
    auto r = parse_initialize_params(json::parse(R"({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c"}})"));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "invalid_params");
    CHECK_THAT(r.error().message, Catch::Contains("clientInfo.version is missing"));
    auto res = parse_initialize_result(json::parse(R"({"protocolVersion":"2025-11-25","capabilities":{}})"));
    REQUIRE_FALSE(res.has_value());
    CHECK(res.error().code == "malformed_result");
    CHECK_THAT(res.error().message, Catch::Contains("serverInfo is missing"));
}

TEST_CASE("progress notifications accept integer or string tokens and fractional progress") {
    auto r = parse_progress_params(json::parse(R"({"progressToken":"abc","progress":0.5,"total":1,"message":"half","_meta":{}})"));
    REQUIRE(r.has_value());
    CHECK(r->token == progress_token(std::string("abc")));
    CHECK(r->progress == Approx(0.5));
    CHECK(r->total == Approx(1.0));
    CHECK(r->message == "half");
    auto n = parse_progress_params(json::parse(R"({"progressToken":7,"progress":3})"));
    REQUIRE(n.has_value());
    CHECK(n->token == progress_token(std::int64_t{7}));
    auto missing = parse_progress_params(json::parse(R"({"progress":3})"));
    REQUIRE_FALSE(missing.has_value());
    CHECK_THAT(missing.error().message, Catch::Contains("progressToken is missing"));
    auto bad_token = parse_progress_params(json::parse(R"({"progressToken":1.5,"progress":3})"));
    REQUIRE_FALSE(bad_token.has_value());
    CHECK_THAT(bad_token.error().message, Catch::Contains("progressToken must be a string or an integer"));
}

TEST_CASE("whole-number progress is written as an integer") {
    progress_params p{progress_token(std::int64_t{1}), 50, 100.0, std::nullopt, std::nullopt};
    CHECK(json::serialize(json::value_from(p)) == R"({"progressToken":1,"progress":50,"total":100})");
    p.progress = 0.25;
    CHECK(json::value_from(p).at("progress").is_double());
}

TEST_CASE("cancellation params read requestId and reason; legacy may omit requestId") {
    auto r = parse_cancelled_params(json::parse(R"({"requestId":"123","reason":"User requested cancellation"})"));
    REQUIRE(r.has_value());
    CHECK(r->id == request_id(std::string("123")));
    CHECK(r->reason == "User requested cancellation");
    auto no_id = parse_cancelled_params(json::parse(R"({"reason":"task"})"));
    REQUIRE(no_id.has_value());
    CHECK_FALSE(no_id->id.has_value());
    auto bad = parse_cancelled_params(json::parse(R"({"requestId":null})"));
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error().message, Catch::Contains("requestId must be a string or an integer, not null"));
}

TEST_CASE("a discover result reads versions, capabilities, serverInfo from _meta and caching hints") {
    auto r = parse_discover_result(json::parse(R"({"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],
        "capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"ExampleServer","version":"1.0.0"}},
        "instructions":"hi","ttlMs":3600000,"cacheScope":"public"})"));
    REQUIRE(r.has_value());
    CHECK(r->supported_versions == std::vector<std::string>{"2026-07-28", "2025-11-25"});
    CHECK(r->capabilities.contains("tools"));
    REQUIRE(r->server_info.has_value());
    CHECK(r->server_info->name == "ExampleServer");
    CHECK(r->instructions == "hi");
    CHECK(r->ttl_ms == 3600000);
    CHECK(r->scope == cache_scope::public_scope);
}

TEST_CASE("a discover result writes serverInfo into _meta and reads back the same") {
    discover_result d;
    d.result_type = "complete";
    d.supported_versions = {"2026-07-28"};
    d.server_info = implementation{"airlock", "0.1.0", std::nullopt, std::nullopt};
    d.ttl_ms = 0;
    d.scope = cache_scope::private_scope;
    auto v = json::value_from(d);
    CHECK(v.at("_meta").at("io.modelcontextprotocol/serverInfo").at("name") == "airlock");
    CHECK(v.at("cacheScope") == "private");
    auto back = parse_discover_result(v);
    REQUIRE(back.has_value());
    CHECK(back->server_info == d.server_info);
}

TEST_CASE("a malformed serverInfo does not fail discovery, but missing versions do") {
    auto r = parse_discover_result(json::parse(R"({"supportedVersions":["2026-07-28"],"capabilities":{},
        "_meta":{"io.modelcontextprotocol/serverInfo":"me"}})"));
    REQUIRE(r.has_value());
    CHECK_FALSE(r->server_info.has_value());
    auto missing = parse_discover_result(json::parse(R"({"capabilities":{}})"));
    REQUIRE_FALSE(missing.has_value());
    CHECK_THAT(missing.error().message, Catch::Contains("supportedVersions is missing"));
    auto wrong = parse_discover_result(json::parse(R"({"supportedVersions":["2026-07-28",5],"capabilities":{}})"));
    REQUIRE_FALSE(wrong.has_value());
    CHECK_THAT(wrong.error().message, Catch::Contains("supportedVersions[1] must be a string"));
}

TEST_CASE("modern request _meta must carry protocolVersion and clientCapabilities") {
    auto ok = parse_request_meta(json::parse(R"({"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},
        "progressToken":5,"traceparent":"00-abc"}})").as_object());
    REQUIRE(ok.has_value());
    CHECK(ok->protocol_version == "2026-07-28");
    REQUIRE(ok->client_info.has_value());
    CHECK(ok->client_info->name == "c");
    CHECK(ok->progress == progress_token(std::int64_t{5}));

    auto no_version = parse_request_meta(json::parse(R"({"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}})").as_object());
    REQUIRE_FALSE(no_version.has_value());
    CHECK(no_version.error().code == "invalid_params");
    CHECK_THAT(no_version.error().message, Catch::Contains("params._meta[\"io.modelcontextprotocol/protocolVersion\"] is missing"));
    auto no_caps = parse_request_meta(json::parse(R"({"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}})").as_object());
    REQUIRE_FALSE(no_caps.has_value());
    CHECK_THAT(no_caps.error().message, Catch::Contains("clientCapabilities"));
    auto no_meta = parse_request_meta(std::optional<json::object>{});
    REQUIRE_FALSE(no_meta.has_value());
    CHECK(no_meta.error().code == "invalid_params");
}

TEST_CASE("writing request _meta keeps the other _meta keys already there") {
    auto params = json::parse(R"({"name":"t","_meta":{"dev.airlock/provenance":{"sig":"s"},"progressToken":"p"}})").as_object();
    set_request_meta(params, request_meta{"2026-07-28", {}, implementation{"airlock", "0.1", std::nullopt, std::nullopt}, std::nullopt,
                                          std::nullopt});
    auto const& meta = params.at("_meta").as_object();
    CHECK(meta.at("dev.airlock/provenance").at("sig") == "s");
    CHECK(meta.at("progressToken") == "p");
    CHECK(meta.at("io.modelcontextprotocol/protocolVersion") == "2026-07-28");
    CHECK(meta.at("io.modelcontextprotocol/clientInfo").at("name") == "airlock");
    auto back = parse_request_meta(params);
    REQUIRE(back.has_value());
    CHECK(back->protocol_version == "2026-07-28");
}

TEST_CASE("value_to throws an error naming the field, value_from writes the spec's field names") {
    try {
        (void)json::value_to<tool>(json::parse(R"({"name":"x","inputSchema":[]})"));
        FAIL("value_to accepted a tool whose inputSchema is an array");
    } catch (airlock::core::error_exception const& e) {
        CHECK(e.err().code == "malformed_result");
        CHECK_THAT(e.err().message, Catch::Contains("inputSchema must be an object"));
    }
    tool t;
    t.name = "t";
    t.input_schema = json::object{{"type", "object"}};
    t.annotations = tool_annotations{std::nullopt, true, false, true, std::nullopt};
    auto v = json::value_from(t);
    CHECK(v.at("inputSchema").at("type") == "object");
    CHECK(v.at("annotations").at("readOnlyHint") == true);
    CHECK(v.at("annotations").at("destructiveHint") == false);
    CHECK(v.at("annotations").at("idempotentHint") == true);
    CHECK_FALSE(v.at("annotations").as_object().contains("openWorldHint"));
    auto back = json::value_to<tool>(v);
    CHECK(back.annotations == t.annotations);
}

TEST_CASE("a call result written by airlock reads back unchanged") {
    call_tool_result r;
    r.content.push_back(json::object{{"type", "text"}, {"text", "5"}});
    r.structured_content = json::object{{"sum", 5}};
    r.is_error = true;
    r.result_type = "complete";
    auto v = json::value_from(r);
    auto back = json::value_to<call_tool_result>(v);
    CHECK(back.content == r.content);
    CHECK(back.structured_content == r.structured_content);
    CHECK(back.is_error == true);
    CHECK(back.result_type == "complete");
}

TEST_CASE("a tool may mutate unless it says it is read-only") {
    tool t;
    CHECK(may_mutate(t));
    t.annotations = tool_annotations{};
    t.annotations->read_only_hint = false;
    CHECK(may_mutate(t));
    t.annotations->read_only_hint = true;
    CHECK_FALSE(may_mutate(t));
}

TEST_CASE("the data of an UnsupportedProtocolVersion error lists the supported versions") {
    auto r = parse_unsupported_version_data(json::parse(R"({"supported":["2026-07-28","2025-11-25"],"requested":"1900-01-01"})"));
    REQUIRE(r.has_value());
    CHECK(r->supported.size() == 2);
    CHECK(r->requested == "1900-01-01");
    auto bad = parse_unsupported_version_data(json::parse(R"({"requested":"x"})"));
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error().message, Catch::Contains("supported is missing"));
}
