#include "mcp/protocol/era.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value_from.hpp>

#include <catch2/catch.hpp>

#include <map>

using namespace airlock::mcp;
namespace json = boost::json;

namespace {

message msg(std::string_view text) {
    auto r = parse_message(text);
    REQUIRE(r.has_value());
    return *r;
}

// A modern tools/call body as a conforming client writes it.
std::string modern_call(std::string_view name, std::string_view args = "{}", std::string_view version = "2026-07-28") {
    return R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":")" + std::string(name) +
           R"(","arguments":)" + std::string(args) + R"(,"_meta":{"io.modelcontextprotocol/protocolVersion":")" +
           std::string(version) + R"(","io.modelcontextprotocol/clientCapabilities":{}}}})";
}

http_headers modern_headers(std::string_view method, std::optional<std::string_view> name = std::nullopt,
                            std::string_view version = "2026-07-28") {
    http_headers h{{"Content-Type", "application/json"}, {"mcp-protocol-version", version}, {"mcp-method", method}};
    if (name) h.add("Mcp-Name", *name);
    return h;
}

tool tool_with_schema(std::string_view schema) {
    tool t;
    t.name = "execute_sql";
    t.input_schema = json::parse(schema).as_object();
    return t;
}

tool const spanner = tool_with_schema(R"({"type":"object","properties":{
    "region":{"type":"string","x-mcp-header":"Region"},
    "limit":{"type":"integer","x-mcp-header":"Limit"},
    "dry":{"type":"boolean","x-mcp-header":"Dry-Run"},
    "opts":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},
    "query":{"type":"string"}}})");

http_rejection rejected(http_checked<void> const& r) {
    REQUIRE_FALSE(r.has_value());
    return r.error();
}

std::string header_value(http_headers const& h, std::string_view name) {
    auto v = h.get(name);
    REQUIRE(v.has_value());
    return std::string(*v);
}

}  // namespace

// ---------------------------------------------------------------- versions

TEST_CASE("the era of a version is known for the four versions airlock speaks and nothing else") {
    CHECK(era_of("2026-07-28") == era::modern);
    CHECK(era_of("2025-11-25") == era::legacy);
    CHECK(era_of("2025-06-18") == era::legacy);
    CHECK(era_of("2025-03-26") == era::legacy);
    CHECK_FALSE(era_of("2024-11-05").has_value());
    CHECK_FALSE(era_of("2026-07-28 ").has_value());
    CHECK(supported_versions().size() == 4);
    CHECK(supported_versions().front() == "2026-07-28");
}

TEST_CASE("initialize answers with the client's legacy version, or else the latest legacy one") {
    CHECK(negotiate_initialize_version("2025-06-18") == "2025-06-18");
    CHECK(negotiate_initialize_version("2025-03-26") == "2025-03-26");
    CHECK(negotiate_initialize_version("2026-07-28") == "2025-11-25");
    CHECK(negotiate_initialize_version("1900-01-01") == "2025-11-25");
    CHECK(negotiate_initialize_version("") == "2025-11-25");
}

TEST_CASE("a client accepts only a legacy version it speaks in the initialize answer") {
    CHECK(accept_initialize_version("2025-11-25").value() == "2025-11-25");
    auto modern = accept_initialize_version("2026-07-28");
    REQUIRE_FALSE(modern.has_value());
    CHECK(modern.error().code == "unsupported_version");
    CHECK_FALSE(accept_initialize_version("2024-11-05").has_value());
}

TEST_CASE("the unsupported-version error lists every supported version and echoes the request") {
    auto e = unsupported_version_error(request_id(std::int64_t{1}), "1900-01-01");
    CHECK(e.error.code == -32022);
    CHECK(e.id == request_id(std::int64_t{1}));
    auto data = parse_unsupported_version_data(*e.error.data);
    REQUIRE(data.has_value());
    CHECK(data->supported == std::vector<std::string>{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"});
    CHECK(data->requested == "1900-01-01");
}

// ---------------------------------------------------------------- header values

TEST_CASE("header values follow the spec's encoding table and decode back") {
    std::pair<std::string, std::string> const table[] = {
        {"us-west1", "us-west1"},
        {"Hello, \xE4\xB8\x96\xE7\x95\x8C", "=?base64?SGVsbG8sIOS4lueVjA==?="},
        {" padded ", "=?base64?IHBhZGRlZCA=?="},
        {"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
        {"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
    };
    for (auto const& [original, encoded] : table) {
        INFO(original);
        CHECK(encode_header_value(original) == encoded);
        auto back = decode_header_value(encoded);
        REQUIRE(back.has_value());
        CHECK(*back == original);
    }
}

TEST_CASE("an empty header value is sent encoded so it cannot vanish in transit") {
    CHECK(encode_header_value("") == "=?base64?" "?=");
    CHECK(decode_header_value("=?base64?" "?=").value().empty());
}

TEST_CASE("decoding refuses characters a header may not hold and sentinels that are not base64") {
    auto nonascii = decode_header_value("caf\xC3\xA9");
    REQUIRE_FALSE(nonascii.has_value());
    CHECK(nonascii.error().code == "invalid_header_value");
    CHECK_FALSE(decode_header_value("a\nb").has_value());
    CHECK_FALSE(decode_header_value(std::string("a\0b", 3)).has_value());
    CHECK_FALSE(decode_header_value("=?base64?not base64!?=").has_value());
    CHECK_FALSE(decode_header_value("=?base64?A?=").has_value());
    CHECK(decode_header_value("=?base64?dXMtd2VzdDE=?=").value() == "us-west1");
    CHECK_FALSE(decode_header_value("=?base64?dXMtd2VzdDE?=").has_value());  // padding left off (SEP-2243)
    CHECK_FALSE(decode_header_value("=?base64?SGVsbG8?=").has_value());
    CHECK_FALSE(decode_header_value("=?base64?SGVs!!!bG8=?=").has_value());
    CHECK_FALSE(decode_header_value("=?base64?SG=sbG8=?=").has_value());  // padding inside
    CHECK(decode_header_value("plain value\twith tab").value() == "plain value\twith tab");
}

TEST_CASE("header names are looked up case-insensitively and counted") {
    http_headers h{{"MCP-Protocol-Version", "2026-07-28"}, {"mcp-method", "tools/call"}, {"Mcp-Method", "tools/list"}};
    CHECK(h.get("mcp-protocol-version") == "2026-07-28");
    CHECK(h.get("MCP-METHOD") == "tools/call");
    CHECK(h.count("Mcp-Method") == 2);
    CHECK_FALSE(h.get("Mcp-Name").has_value());
}

// ---------------------------------------------------------------- x-mcp-header

TEST_CASE("a tool's x-mcp-header annotations are found with their property paths and types") {
    auto p = param_headers_of(spanner);
    REQUIRE(p.has_value());
    std::map<std::string, param_header> by_name;
    for (auto const& x : *p) by_name[x.name] = x;
    REQUIRE(by_name.size() == 4);
    CHECK(by_name["Region"].path == std::vector<std::string>{"region"});
    CHECK(by_name["Limit"].type == "integer");
    CHECK(by_name["Dry-Run"].type == "boolean");
    CHECK(by_name["Zone"].path == std::vector<std::string>{"opts", "zone"});
}

TEST_CASE("an x-mcp-header that is not reachable through properties alone makes the tool invalid") {
    char const* schemas[] = {
        R"({"type":"object","properties":{"list":{"type":"array","items":{"type":"string","x-mcp-header":"Item"}}}})",
        R"({"type":"object","anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]})",
        R"({"type":"object","$defs":{"r":{"type":"string","x-mcp-header":"R"}},"properties":{"r":{"$ref":"#/$defs/r"}}})",
        R"({"type":"object","properties":{"a":{"type":"object","additionalProperties":{"type":"string","x-mcp-header":"A"}}}})",
        R"({"type":"object","x-mcp-header":"Root"})",
        R"({"type":"object","if":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}})",
    };
    for (auto const* s : schemas) {
        INFO(s);
        auto p = param_headers_of(tool_with_schema(s));
        REQUIRE_FALSE(p.has_value());
        CHECK(p.error().code == "invalid_x_mcp_header");
        CHECK_THAT(p.error().message, Catch::Contains("tool 'execute_sql'"));
        CHECK_THAT(p.error().message, Catch::Contains("not on a property reachable"));
    }
}

TEST_CASE("x-mcp-header names must be non-empty tokens, unique ignoring case") {
    struct bad {
        char const* schema;
        char const* says;
    };
    bad const cases[] = {
        {R"({"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}})", "is empty"},
        {R"({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Has Space"}}})", "not an HTTP token"},
        {R"({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Line\r\nBreak"}}})", "not an HTTP token"},
        {R"({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Région"}}})", "not an HTTP token"},
        {R"({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"REGION"}}})",
         "used twice"},
        {R"({"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}})", "must be a string"},
    };
    for (auto const& c : cases) {
        INFO(c.schema);
        auto p = param_headers_of(tool_with_schema(c.schema));
        REQUIRE_FALSE(p.has_value());
        CHECK_THAT(p.error().message, Catch::Contains(c.says));
    }
}

TEST_CASE("x-mcp-header is allowed only on string, integer and boolean properties") {
    for (auto const* type : {R"("number")", R"("object")", R"(["string","null"])"}) {
        INFO(type);
        auto p = param_headers_of(tool_with_schema(std::string(R"({"type":"object","properties":{"a":{"type":)") + type +
                                                   R"(,"x-mcp-header":"A"}}})"));
        REQUIRE_FALSE(p.has_value());
        CHECK_THAT(p.error().message, Catch::Contains("not string, integer or boolean"));
    }
    auto untyped = param_headers_of(tool_with_schema(R"({"type":"object","properties":{"a":{"x-mcp-header":"A"}}})"));
    CHECK_FALSE(untyped.has_value());
}

TEST_CASE("a property named x-mcp-header, or the word inside enum or default, is not an annotation") {
    auto p = param_headers_of(tool_with_schema(R"({"type":"object","properties":{
        "x-mcp-header":{"type":"string"},
        "e":{"type":"object","default":{"x-mcp-header":"NotOne"},"enum":[{"x-mcp-header":"Nope"}]}}})"));
    REQUIRE(p.has_value());
    CHECK(p->empty());
}

// ---------------------------------------------------------------- client headers

TEST_CASE("a legacy client sends MCP-Protocol-Version and Mcp-Session-Id only once initialize is answered") {
    auto before = legacy_post_headers(legacy_session{});
    CHECK(header_value(before, "Accept") == "application/json, text/event-stream");
    CHECK(header_value(before, "Content-Type") == "application/json");
    CHECK_FALSE(before.get("MCP-Protocol-Version").has_value());
    CHECK_FALSE(before.get("Mcp-Session-Id").has_value());
    auto after = legacy_post_headers(legacy_session{"2025-11-25", "sess-1"});
    CHECK(header_value(after, "mcp-protocol-version") == "2025-11-25");
    CHECK(header_value(after, "mcp-session-id") == "sess-1");
    auto stateless = legacy_post_headers(legacy_session{"2025-06-18", std::nullopt});
    CHECK(stateless.get("MCP-Protocol-Version").has_value());
    CHECK_FALSE(stateless.get("Mcp-Session-Id").has_value());
    auto del = legacy_delete_headers(legacy_session{"2025-11-25", "sess-1"});
    CHECK(header_value(del, "Mcp-Session-Id") == "sess-1");
}

TEST_CASE("a session id from the server must be visible ASCII") {
    CHECK(session_id_from_response(http_headers{{"mcp-session-id", "1868a90c"}}).value() == "1868a90c");
    CHECK_FALSE(session_id_from_response(http_headers{}).value().has_value());
    CHECK_FALSE(session_id_from_response(http_headers{{"Mcp-Session-Id", "has space"}}).has_value());
    CHECK_FALSE(session_id_from_response(http_headers{{"Mcp-Session-Id", "a"}, {"Mcp-Session-Id", "b"}}).has_value());
}

TEST_CASE("a modern tools/call carries the version, method, name and parameter headers taken from its body") {
    auto r = std::get<request>(msg(modern_call("execute_sql", R"({"region":"us-west1","limit":42,"dry":false,
        "opts":{"zone":"b"},"query":"SELECT 1"})")));
    auto h = modern_post_headers(r, &spanner);
    REQUIRE(h.has_value());
    CHECK(header_value(*h, "Accept") == "application/json, text/event-stream");
    CHECK(header_value(*h, "MCP-Protocol-Version") == "2026-07-28");
    CHECK(header_value(*h, "Mcp-Method") == "tools/call");
    CHECK(header_value(*h, "Mcp-Name") == "execute_sql");
    CHECK(header_value(*h, "Mcp-Param-Region") == "us-west1");
    CHECK(header_value(*h, "Mcp-Param-Limit") == "42");
    CHECK(header_value(*h, "Mcp-Param-Dry-Run") == "false");
    CHECK(header_value(*h, "Mcp-Param-Zone") == "b");
    // What the client writes, the server's check accepts.
    CHECK(validate_modern_post(*h, r, &spanner).has_value());
}

TEST_CASE("parameter headers are left out for arguments that are absent or null") {
    auto r = std::get<request>(msg(modern_call("execute_sql", R"({"region":null,"query":"q"})")));
    auto h = modern_post_headers(r, &spanner);
    REQUIRE(h.has_value());
    CHECK_FALSE(h->get("Mcp-Param-Region").has_value());
    CHECK_FALSE(h->get("Mcp-Param-Limit").has_value());
    CHECK(validate_modern_post(*h, r, &spanner).has_value());
}

TEST_CASE("a tool name outside the header-safe set is sent base64-encoded in Mcp-Name") {
    auto r = std::get<request>(msg(modern_call("m\xC3\xA9t\xC3\xA9o")));
    auto h = modern_post_headers(r);
    REQUIRE(h.has_value());
    CHECK_THAT(header_value(*h, "Mcp-Name"), Catch::StartsWith("=?base64?"));
    CHECK(validate_modern_post(*h, r).has_value());
}

TEST_CASE("a modern request for a method without a name carries no Mcp-Name") {
    auto r = std::get<request>(msg(R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})"));
    auto h = modern_post_headers(r);
    REQUIRE(h.has_value());
    CHECK(header_value(*h, "Mcp-Method") == "tools/list");
    CHECK_FALSE(h->get("Mcp-Name").has_value());
}

TEST_CASE("a modern request without its _meta, or with an argument that cannot be a header, gets no headers") {
    auto bare = std::get<request>(msg(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"));
    auto h = modern_post_headers(bare);
    REQUIRE_FALSE(h.has_value());
    CHECK(h.error().code == "invalid_request");
    for (auto const* args : {R"({"limit":1.5})", R"({"region":{"a":1}})", R"({"limit":9007199254740993})",
                            R"({"limit":-9007199254740993})"}) {
        INFO(args);
        auto r = std::get<request>(msg(modern_call("execute_sql", args)));
        auto bad = modern_post_headers(r, &spanner);
        REQUIRE_FALSE(bad.has_value());
        CHECK_THAT(bad.error().message, Catch::Contains("cannot be mirrored into Mcp-Param-"));
    }
}

// ---------------------------------------------------------------- server: modern

TEST_CASE("a modern POST whose headers agree with its body passes") {
    CHECK(validate_modern_post(modern_headers("tools/call", "echo"), msg(modern_call("echo"))).has_value());
}

TEST_CASE("a modern request without MCP-Protocol-Version is refused with 400 and HeaderMismatch") {
    http_headers h{{"Mcp-Method", "tools/call"}, {"Mcp-Name", "echo"}};
    auto e = rejected(validate_modern_post(h, msg(modern_call("echo"))));
    CHECK(e.status == 400);
    CHECK(e.body.error.code == -32020);
    CHECK(e.body.id == request_id(std::int64_t{1}));
    CHECK_THAT(e.body.error.message, Catch::Contains("MCP-Protocol-Version is missing"));
}

TEST_CASE("a protocol version header that differs from the body's _meta is refused with HeaderMismatch") {
    auto e = rejected(validate_modern_post(modern_headers("tools/call", "echo", "2026-07-29"), msg(modern_call("echo"))));
    CHECK(e.status == 400);
    CHECK(e.body.error.code == -32020);
    CHECK_THAT(e.body.error.message, Catch::Contains("'2026-07-29' does not match body value '2026-07-28'"));
}

TEST_CASE("a modern request missing its required _meta is refused with 400 and InvalidParams") {
    auto body = msg(R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
    auto e = rejected(validate_modern_post(modern_headers("tools/list"), body));
    CHECK(e.status == 400);
    CHECK(e.body.error.code == -32602);
    CHECK(e.body.id == request_id(std::int64_t{3}));
    CHECK_THAT(e.body.error.message, Catch::Contains("clientCapabilities"));
}

TEST_CASE("a version airlock does not speak is refused with 400 and UnsupportedProtocolVersion listing ours") {
    auto e = rejected(validate_modern_post(modern_headers("tools/call", "echo", "1900-01-01"),
                                           msg(modern_call("echo", "{}", "1900-01-01"))));
    CHECK(e.status == 400);
    CHECK(e.body.error.code == -32022);
    auto data = parse_unsupported_version_data(*e.body.error.data);
    REQUIRE(data.has_value());
    CHECK(data->requested == "1900-01-01");
    CHECK(data->supported.front() == "2026-07-28");
}

TEST_CASE("Mcp-Method must be present and equal the body's method") {
    http_headers missing{{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Name", "echo"}};
    auto e1 = rejected(validate_modern_post(missing, msg(modern_call("echo"))));
    CHECK(e1.body.error.code == -32020);
    CHECK_THAT(e1.body.error.message, Catch::Contains("Mcp-Method is missing"));
    auto e2 = rejected(validate_modern_post(modern_headers("tools/list", "echo"), msg(modern_call("echo"))));
    CHECK(e2.body.error.code == -32020);
    CHECK_THAT(e2.body.error.message, Catch::Contains("'tools/list' does not match body value 'tools/call'"));
    // Header values are case-sensitive even though header names are not.
    auto e3 = rejected(validate_modern_post(modern_headers("Tools/Call", "echo"), msg(modern_call("echo"))));
    CHECK(e3.body.error.code == -32020);
}

TEST_CASE("Mcp-Name must be present for tools/call and equal the tool name once decoded") {
    auto missing = rejected(validate_modern_post(modern_headers("tools/call"), msg(modern_call("echo"))));
    CHECK(missing.body.error.code == -32020);
    CHECK_THAT(missing.body.error.message, Catch::Contains("Mcp-Name is missing"));
    auto wrong = rejected(validate_modern_post(modern_headers("tools/call", "foo"), msg(modern_call("bar"))));
    CHECK_THAT(wrong.body.error.message, Catch::Contains("Mcp-Name header value 'foo' does not match body value 'bar'"));
    CHECK(validate_modern_post(modern_headers("tools/call", "=?base64?ZWNobw==?="), msg(modern_call("echo"))).has_value());
    auto garbled = rejected(validate_modern_post(modern_headers("tools/call", "=?base64?@@@?="), msg(modern_call("echo"))));
    CHECK(garbled.body.error.code == -32020);
}

TEST_CASE("resources/read compares Mcp-Name with the uri and prompts/get with the name") {
    auto read = msg(R"({"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a.txt","_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})");
    CHECK(validate_modern_post(modern_headers("resources/read", "file:///a.txt"), read).has_value());
    CHECK_FALSE(validate_modern_post(modern_headers("resources/read", "file:///b.txt"), read).has_value());
    auto prompt = msg(R"({"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"greet","_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})");
    CHECK(validate_modern_post(modern_headers("prompts/get", "greet"), prompt).has_value());
    CHECK_FALSE(validate_modern_post(modern_headers("prompts/get"), prompt).has_value());
}

TEST_CASE("a parameter header must accompany a value the body carries, and match it") {
    auto body = msg(modern_call("execute_sql", R"({"region":"us-west1","limit":42,"dry":true})"));
    auto good = modern_headers("tools/call", "execute_sql");
    good.add("Mcp-Param-Region", "us-west1");
    good.add("mcp-param-limit", "42.0");  // compared numerically
    good.add("Mcp-Param-Dry-Run", "true");
    good.add("Mcp-Param-Unknown", "ignored");  // not declared by the tool: ignored
    CHECK(validate_modern_post(good, body, &spanner).has_value());

    auto missing = modern_headers("tools/call", "execute_sql");
    missing.add("Mcp-Param-Limit", "42");
    missing.add("Mcp-Param-Dry-Run", "true");
    auto e1 = rejected(validate_modern_post(missing, body, &spanner));
    CHECK(e1.body.error.code == -32020);
    CHECK_THAT(e1.body.error.message, Catch::Contains("Mcp-Param-Region is missing"));

    auto differs = modern_headers("tools/call", "execute_sql");
    differs.add("Mcp-Param-Region", "eu-west1");
    differs.add("Mcp-Param-Limit", "42");
    differs.add("Mcp-Param-Dry-Run", "true");
    auto e2 = rejected(validate_modern_post(differs, body, &spanner));
    CHECK_THAT(e2.body.error.message, Catch::Contains("'eu-west1' does not match body value \"us-west1\""));

    auto number = modern_headers("tools/call", "execute_sql");
    number.add("Mcp-Param-Region", "us-west1");
    number.add("Mcp-Param-Limit", "41");
    number.add("Mcp-Param-Dry-Run", "true");
    CHECK_FALSE(validate_modern_post(number, body, &spanner).has_value());

    auto boolean = modern_headers("tools/call", "execute_sql");
    boolean.add("Mcp-Param-Region", "us-west1");
    boolean.add("Mcp-Param-Limit", "42");
    boolean.add("Mcp-Param-Dry-Run", "True");
    CHECK_FALSE(validate_modern_post(boolean, body, &spanner).has_value());
}

TEST_CASE("a parameter header for a value the body does not carry is refused") {
    auto body = msg(modern_call("execute_sql", R"({"query":"q"})"));
    auto h = modern_headers("tools/call", "execute_sql");
    h.add("Mcp-Param-Region", "us-west1");
    auto e = rejected(validate_modern_post(h, body, &spanner));
    CHECK(e.body.error.code == -32020);
    CHECK_THAT(e.body.error.message, Catch::Contains("present but arguments.region is absent"));
    CHECK(validate_modern_post(modern_headers("tools/call", "execute_sql"), body, &spanner).has_value());
}

TEST_CASE("a header given twice is refused as a mismatch") {
    auto h = modern_headers("tools/call", "echo");
    h.add("Mcp-Name", "other");
    auto e = rejected(validate_modern_post(h, msg(modern_call("echo"))));
    CHECK(e.body.error.code == -32020);
    CHECK_THAT(e.body.error.message, Catch::Contains("more than once"));
}

TEST_CASE("a client may not POST a response in the modern era") {
    auto e = rejected(validate_modern_post(modern_headers("x"), msg(R"({"jsonrpc":"2.0","id":1,"result":{}})")));
    CHECK(e.status == 400);
    CHECK(e.body.error.code == -32600);
}

TEST_CASE("a modern notification needs no headers, but any it carries must agree with the body") {
    auto note = msg(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
    CHECK(validate_modern_post(http_headers{}, note).has_value());
    CHECK(validate_modern_post(modern_headers("notifications/cancelled"), note).has_value());
    auto e = rejected(validate_modern_post(modern_headers("tools/call"), note));
    CHECK(e.body.error.code == -32020);
    CHECK_FALSE(e.body.id.has_value());
    CHECK_FALSE(validate_modern_post(modern_headers("notifications/cancelled", std::nullopt, "2025-11-25"), note).has_value());
}

// ---------------------------------------------------------------- server: legacy

TEST_CASE("a legacy initialize needs no session and negotiates its version") {
    auto init = msg(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name":"c","version":"1"}}})");
    auto r = validate_legacy_post(http_headers{}, init, true, nullptr);
    REQUIRE(r.has_value());
    CHECK(*r == "2025-06-18");
    auto future = msg(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2099-01-01"}})");
    CHECK(validate_legacy_post(http_headers{}, future, true, nullptr).value() == "2025-11-25");
}

TEST_CASE("a legacy request naming an unknown session is answered 404 so the client re-initializes") {
    auto find = [](std::string_view id) -> std::optional<std::string> {
        if (id == "known") return "2025-11-25";
        return std::nullopt;
    };
    auto body = msg(R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})");
    auto unknown = validate_legacy_post(http_headers{{"Mcp-Session-Id", "gone"}}, body, true, find);
    REQUIRE_FALSE(unknown.has_value());
    CHECK(unknown.error().status == 404);
    CHECK(unknown.error().body.id == request_id(std::int64_t{7}));
    auto known = validate_legacy_post(http_headers{{"Mcp-Session-Id", "known"}}, body, true, find);
    REQUIRE(known.has_value());
    CHECK(*known == "2025-11-25");
}

TEST_CASE("a legacy request without a session id is refused when the server requires sessions") {
    auto body = msg(R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})");
    auto r = validate_legacy_post(http_headers{}, body, true, [](std::string_view) { return std::optional<std::string>{}; });
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == 400);
    CHECK_THAT(r.error().body.error.message, Catch::Contains("Mcp-Session-Id header is required"));
    CHECK(validate_legacy_post(http_headers{}, body, false, nullptr).has_value());
}

TEST_CASE("a legacy request with a protocol version airlock does not speak as legacy is refused with 400") {
    auto body = msg(R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})");
    for (auto const* v : {"2024-11-05", "2026-07-28", "garbage"}) {
        INFO(v);
        auto r = validate_legacy_post(http_headers{{"MCP-Protocol-Version", v}}, body, false, nullptr);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().status == 400);
        CHECK_THAT(r.error().body.error.message, Catch::Contains("unsupported MCP-Protocol-Version"));
    }
    CHECK(validate_legacy_post(http_headers{{"MCP-Protocol-Version", "2025-06-18"}}, body, false, nullptr).value() == "2025-06-18");
}

TEST_CASE("a legacy request without a version header means 2025-03-26 unless its session says otherwise") {
    auto body = msg(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    CHECK(validate_legacy_post(http_headers{}, body, false, nullptr).value() == "2025-03-26");
    auto find = [](std::string_view) -> std::optional<std::string> { return "2025-11-25"; };
    CHECK(validate_legacy_post(http_headers{{"Mcp-Session-Id", "s"}}, body, true, find).value() == "2025-11-25");
}

TEST_CASE("a dual-era endpoint tells the eras apart by initialize, the version header and _meta") {
    auto init = msg(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{}})");
    CHECK(classify_post(http_headers{{"MCP-Protocol-Version", "2026-07-28"}}, init) == era::legacy);
    CHECK(classify_post(modern_headers("tools/call", "echo"), msg(modern_call("echo"))) == era::modern);
    auto plain = msg(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
    CHECK(classify_post(http_headers{{"MCP-Protocol-Version", "2025-11-25"}}, plain) == era::legacy);
    // A version neither era knows: the body decides (no _meta version: legacy, refused there by name).
    CHECK(classify_post(http_headers{{"MCP-Protocol-Version", "2099-01-01"}}, plain) == era::legacy);
    CHECK(classify_post(http_headers{{"MCP-Protocol-Version", "2099-01-01"}}, msg(modern_call("echo"))) == era::modern);
    CHECK(classify_post(http_headers{}, plain) == era::legacy);
    CHECK(classify_post(http_headers{}, msg(modern_call("echo"))) == era::modern);  // then refused: header missing
}

TEST_CASE("error codes map to the HTTP status each era gives them") {
    CHECK(http_status_for(era::modern, -32020) == 400);
    CHECK(http_status_for(era::modern, -32021) == 400);
    CHECK(http_status_for(era::modern, -32022) == 400);
    CHECK(http_status_for(era::modern, -32601) == 404);
    CHECK(http_status_for(era::modern, -32700) == 400);
    CHECK(http_status_for(era::modern, -32602) == 200);
    CHECK(http_status_for(era::legacy, -32600) == 400);
    CHECK(http_status_for(era::legacy, -32601) == 200);
    CHECK(http_status_for(era::legacy, -32603) == 200);
}

TEST_CASE("response content types are told apart ignoring case and parameters") {
    CHECK(classify_content_type("application/json") == body_kind::json);
    CHECK(classify_content_type("Application/JSON; charset=utf-8") == body_kind::json);
    CHECK(classify_content_type("text/event-stream") == body_kind::event_stream);
    CHECK(classify_content_type(" text/event-stream ;charset=utf-8") == body_kind::event_stream);
    CHECK(classify_content_type("text/html") == body_kind::other);
    CHECK(classify_content_type("") == body_kind::other);
}

TEST_CASE("modern errors are the 2026 codes, and method-not-found only with HTTP 404") {
    CHECK(is_modern_error(-32020));
    CHECK(is_modern_error(-32021));
    CHECK(is_modern_error(-32022));
    CHECK(is_modern_error(-32601, 404u));
    CHECK_FALSE(is_modern_error(-32601));
    CHECK_FALSE(is_modern_error(-32601, 200u));
    CHECK_FALSE(is_modern_error(-32602, 400u));
    CHECK_FALSE(is_modern_error(-32000, 400u));
}

// ---------------------------------------------------------------- era detection

namespace {

era_detector::options detector_options(transport_kind t) {
    era_detector::options o;
    o.transport = t;
    o.client_info = implementation{"airlock", "0.1.0", std::nullopt, std::nullopt};
    return o;
}

probe_reply reply(std::string_view text, std::optional<unsigned> status = std::nullopt) { return probe_reply{status, msg(text)}; }

}  // namespace

TEST_CASE("era detection starts with a server/discover probe carrying the preferred modern version") {
    era_detector d(detector_options(transport_kind::http));
    auto s = d.start();
    REQUIRE(s.kind == era_detector::step_kind::send);
    REQUIRE(s.request.has_value());
    CHECK(s.request->method == "server/discover");
    CHECK(s.request->id == request_id(std::string("airlock-era-probe")));
    auto meta = parse_request_meta(s.request->params);
    REQUIRE(meta.has_value());
    CHECK(meta->protocol_version == "2026-07-28");
    REQUIRE(meta->client_info.has_value());
    CHECK(meta->client_info->name == "airlock");
    // The probe can be sent over HTTP with the modern headers, and a modern server accepts them.
    auto h = modern_post_headers(*s.request);
    REQUIRE(h.has_value());
    CHECK(validate_modern_post(*h, *s.request).has_value());
}

TEST_CASE("a DiscoverResult makes the server modern with the most preferred mutual version") {
    era_detector d(detector_options(transport_kind::stdio));
    d.start();
    auto s = d.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","result":{"resultType":"complete",
        "supportedVersions":["2025-11-25","2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}})"));
    REQUIRE(s.kind == era_detector::step_kind::done);
    CHECK(s.decided_era == era::modern);
    CHECK(s.version == "2026-07-28");
    REQUIRE(s.discovered.has_value());
    CHECK(s.discovered->capabilities.contains("tools"));
}

TEST_CASE("UnsupportedProtocolVersion picks a mutual version from the versions the server lists") {
    era_detector modern(detector_options(transport_kind::http));
    modern.start();
    auto m = modern.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","error":{"code":-32022,"message":"Unsupported",
        "data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}})", 400u));
    REQUIRE(m.kind == era_detector::step_kind::done);
    CHECK(m.decided_era == era::modern);
    CHECK(m.version == "2026-07-28");

    era_detector legacy_only(detector_options(transport_kind::http));
    legacy_only.start();
    auto l = legacy_only.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","error":{"code":-32022,"message":"Unsupported",
        "data":{"supported":["2025-06-18"],"requested":"2026-07-28"}}})", 400u));
    REQUIRE(l.kind == era_detector::step_kind::send);
    REQUIRE(l.request.has_value());
    CHECK(l.request->method == "initialize");
    CHECK(l.request->params->at("protocolVersion") == "2025-06-18");
}

TEST_CASE("a server with no version in common fails naming both sides") {
    era_detector d(detector_options(transport_kind::http));
    d.start();
    auto s = d.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","error":{"code":-32022,"message":"Unsupported",
        "data":{"supported":["2027-01-01"],"requested":"2026-07-28"}}})", 400u));
    REQUIRE(s.kind == era_detector::step_kind::failed);
    CHECK_THAT(s.reason, Catch::Contains("2027-01-01"));
    CHECK_THAT(s.reason, Catch::Contains("2026-07-28"));
    CHECK_THAT(s.reason, Catch::Contains("no version in common"));
    auto no_data = era_detector(detector_options(transport_kind::stdio));
    no_data.start();
    CHECK(no_data.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","error":{"code":-32022,"message":"no"}})")).kind ==
          era_detector::step_kind::failed);
}

TEST_CASE("any other error falls back to initialize, then the initialized notification, in the legacy era") {
    era_detector d(detector_options(transport_kind::stdio));
    d.start();
    auto s = d.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","error":{"code":-32601,"message":"Method not found"}})"));
    REQUIRE(s.kind == era_detector::step_kind::send);
    REQUIRE(s.request.has_value());
    CHECK(s.request->method == "initialize");
    CHECK(s.request->id == request_id(std::string("airlock-initialize")));
    auto params = parse_initialize_params(json::value(*s.request->params));
    REQUIRE(params.has_value());
    CHECK(params->protocol_version == "2025-11-25");
    CHECK(params->client_info.name == "airlock");

    auto done = d.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-initialize","result":{"protocolVersion":"2025-06-18",
        "capabilities":{"tools":{}},"serverInfo":{"name":"everything","version":"1"}}})"));
    REQUIRE(done.kind == era_detector::step_kind::done);
    CHECK(done.decided_era == era::legacy);
    CHECK(done.version == "2025-06-18");
    REQUIRE(done.notification.has_value());
    CHECK(done.notification->method == "notifications/initialized");
    REQUIRE(done.initialized.has_value());
    CHECK(done.initialized->server_info.name == "everything");
    CHECK_THAT(done.reason, Catch::Contains("-32601"));
}

TEST_CASE("legacy fallback is not keyed to one error code") {
    for (auto code : {"-32601", "-32602", "-32600", "-32000", "-32603", "1"}) {
        INFO(code);
        era_detector d(detector_options(transport_kind::stdio));
        d.start();
        auto s = d.on_reply(reply(std::string(R"({"jsonrpc":"2.0","id":"airlock-era-probe","error":{"code":)") + code +
                                  R"(,"message":"x"}})"));
        REQUIRE(s.kind == era_detector::step_kind::send);
        CHECK(s.request->method == "initialize");
    }
}

TEST_CASE("on stdio no answer to the probe means legacy; on HTTP it is a failure") {
    era_detector stdio(detector_options(transport_kind::stdio));
    stdio.start();
    auto s = stdio.on_timeout();
    REQUIRE(s.kind == era_detector::step_kind::send);
    CHECK(s.request->method == "initialize");
    CHECK(stdio.on_timeout().kind == era_detector::step_kind::failed);  // and initialize also unanswered

    era_detector http(detector_options(transport_kind::http));
    http.start();
    CHECK(http.on_timeout().kind == era_detector::step_kind::failed);
}

TEST_CASE("over HTTP, 404 with method-not-found is modern but 200 with it is legacy") {
    era_detector modern(detector_options(transport_kind::http));
    modern.start();
    auto m = modern.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","error":{"code":-32601,"message":"Method not found"}})", 404u));
    REQUIRE(m.kind == era_detector::step_kind::done);
    CHECK(m.decided_era == era::modern);

    era_detector legacy(detector_options(transport_kind::http));
    legacy.start();
    auto l = legacy.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","error":{"code":-32601,"message":"Method not found"}})", 200u));
    REQUIRE(l.kind == era_detector::step_kind::send);
    CHECK(l.request->method == "initialize");
}

TEST_CASE("a HeaderMismatch answer to the probe identifies a modern server") {
    era_detector d(detector_options(transport_kind::http));
    d.start();
    auto s = d.on_reply(reply(R"({"jsonrpc":"2.0","error":{"code":-32020,"message":"Header mismatch"}})", 400u));
    REQUIRE(s.kind == era_detector::step_kind::done);
    CHECK(s.decided_era == era::modern);
    CHECK_THAT(s.reason, Catch::Contains("HeaderMismatch"));
}

TEST_CASE("an HTTP error with an empty body falls back to legacy") {
    era_detector d(detector_options(transport_kind::http));
    d.start();
    auto s = d.on_reply(probe_reply{400u, std::nullopt});
    REQUIRE(s.kind == era_detector::step_kind::send);
    CHECK(s.request->method == "initialize");
    CHECK_THAT(s.reason, Catch::Contains("HTTP 400"));
}

TEST_CASE("a success that is not a DiscoverResult falls back to legacy") {
    era_detector d(detector_options(transport_kind::stdio));
    d.start();
    auto s = d.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","result":{}})"));
    REQUIRE(s.kind == era_detector::step_kind::send);
    CHECK(s.request->method == "initialize");
}

TEST_CASE("notifications and replies to other ids do not move the detector") {
    era_detector d(detector_options(transport_kind::stdio));
    d.start();
    CHECK(d.on_reply(reply(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}})")).kind ==
          era_detector::step_kind::wait);
    CHECK(d.on_reply(reply(R"({"jsonrpc":"2.0","id":99,"result":{}})")).kind == era_detector::step_kind::wait);
    CHECK(d.on_reply(reply(R"({"jsonrpc":"2.0","id":99,"error":{"code":-32601,"message":"x"}})")).kind ==
          era_detector::step_kind::wait);
    // A late answer to the probe after falling back is not mistaken for the initialize reply.
    d.on_timeout();
    CHECK(d.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","error":{"code":-32601,"message":"x"}})")).kind ==
          era_detector::step_kind::wait);
}

TEST_CASE("an initialize answered with a version airlock does not speak, or refused, fails") {
    era_detector d(detector_options(transport_kind::stdio));
    d.start();
    d.on_timeout();
    auto s = d.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-initialize","result":{"protocolVersion":"2024-11-05",
        "capabilities":{},"serverInfo":{"name":"old","version":"1"}}})"));
    REQUIRE(s.kind == era_detector::step_kind::failed);
    CHECK_THAT(s.reason, Catch::Contains("2024-11-05"));

    era_detector refused(detector_options(transport_kind::stdio));
    refused.start();
    refused.on_timeout();
    auto r = refused.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-initialize","error":{"code":-32601,
        "message":"initialize is not supported; this server speaks 2026-07-28"}})"));
    REQUIRE(r.kind == era_detector::step_kind::failed);
    CHECK_THAT(r.reason, Catch::Contains("speaks 2026-07-28"));
}

TEST_CASE("a client configured for legacy versions only initializes without probing") {
    auto o = detector_options(transport_kind::http);
    o.versions = {"2025-06-18"};
    era_detector d(o);
    auto s = d.start();
    REQUIRE(s.kind == era_detector::step_kind::send);
    CHECK(s.request->method == "initialize");
    CHECK(s.request->params->at("protocolVersion") == "2025-06-18");
}

TEST_CASE("a client configured for modern versions only fails against a legacy server") {
    auto o = detector_options(transport_kind::stdio);
    o.versions = {"2026-07-28"};
    era_detector d(o);
    d.start();
    auto s = d.on_reply(reply(R"({"jsonrpc":"2.0","id":"airlock-era-probe","error":{"code":-32601,"message":"x"}})"));
    REQUIRE(s.kind == era_detector::step_kind::failed);
    CHECK_THAT(s.reason, Catch::Contains("modern versions only"));
}
