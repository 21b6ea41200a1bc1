#include "mcp/protocol/jsonrpc.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

using namespace airlock::mcp;
namespace json = boost::json;

namespace {

// The refusal for `text`, which must not parse.
error_response refusal(std::string_view text) {
    auto r = parse_message(text);
    REQUIRE_FALSE(r.has_value());
    return r.error().reply;
}

}  // namespace

TEST_CASE("a request with an integer id parses into a typed request") {
    auto r = parse_message(R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"c1"}})");
    REQUIRE(r.has_value());
    auto const* req = std::get_if<request>(&*r);
    REQUIRE(req != nullptr);
    CHECK(req->id == request_id(std::int64_t{7}));
    CHECK(req->method == "tools/list");
    REQUIRE(req->params.has_value());
    CHECK(req->params->at("cursor") == "c1");
}

TEST_CASE("a request with a string id keeps the id as a string") {
    auto r = parse_message(R"({"jsonrpc":"2.0","id":"7","method":"ping"})");
    REQUIRE(r.has_value());
    auto const& req = std::get<request>(*r);
    CHECK(req.id == request_id(std::string("7")));
    CHECK_FALSE(req.params.has_value());
}

TEST_CASE("a message with a method and no id is a notification") {
    auto r = parse_message(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}})");
    REQUIRE(r.has_value());
    REQUIRE(std::holds_alternative<notification>(*r));
    CHECK(std::get<notification>(*r).method == "notifications/progress");
    CHECK_FALSE(id_of(*r).has_value());
}

TEST_CASE("a result response parses with its id and result object") {
    auto r = parse_message(R"({"jsonrpc":"2.0","id":3,"result":{"tools":[]}})");
    REQUIRE(r.has_value());
    auto const& resp = std::get<response>(*r);
    CHECK(resp.id == request_id(std::int64_t{3}));
    CHECK(resp.result.contains("tools"));
}

TEST_CASE("an error response parses with its code, message and data") {
    auto r = parse_message(R"({"jsonrpc":"2.0","id":"a","error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}})");
    REQUIRE(r.has_value());
    auto const& e = std::get<error_response>(*r);
    CHECK(e.id == request_id(std::string("a")));
    CHECK(e.error.code == rpc_code::unsupported_protocol_version);
    CHECK(e.error.message == "Unsupported protocol version");
    REQUIRE(e.error.data.has_value());
    CHECK(e.error.data->at("supported").as_array().size() == 1);
}

TEST_CASE("an error response whose id is absent or null is still a valid message") {
    for (auto text : {R"({"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}})",
                      R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})"}) {
        INFO(text);
        auto r = parse_message(text);
        REQUIRE(r.has_value());
        auto const& e = std::get<error_response>(*r);
        CHECK_FALSE(e.id.has_value());
        CHECK(e.error.code == rpc_code::parse_error);
    }
}

TEST_CASE("bytes that are not JSON are answered with a -32700 parse error and no id") {
    for (auto text : {"", "{", "{\"jsonrpc\":\"2.0\",", "not json", "{\"a\":1}x"}) {
        INFO(text);
        auto e = refusal(text);
        CHECK(e.error.code == rpc_code::parse_error);
        CHECK_FALSE(e.id.has_value());
        CHECK_THAT(e.error.message, Catch::StartsWith("Parse error"));
    }
}

TEST_CASE("a message with a duplicate member name is refused as a parse error") {
    // Two "method" keys could be read differently by a router and a server.
    auto e = refusal(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"})");
    CHECK(e.error.code == rpc_code::parse_error);
    CHECK_THAT(e.error.message, Catch::Contains("duplicate"));
}

TEST_CASE("a batch array is refused with -32600 naming batching") {
    for (auto text : {R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", "[]"}) {
        INFO(text);
        auto e = refusal(text);
        CHECK(e.error.code == rpc_code::invalid_request);
        CHECK_FALSE(e.id.has_value());
        CHECK_THAT(e.error.message, Catch::Contains("batch"));
    }
}

TEST_CASE("JSON that is not an object is refused with -32600") {
    for (auto text : {"1", "\"x\"", "null", "true"}) {
        INFO(text);
        auto e = refusal(text);
        CHECK(e.error.code == rpc_code::invalid_request);
        CHECK_THAT(e.error.message, Catch::Contains("must be a JSON object"));
    }
}

TEST_CASE("a request with a null id is refused with -32600") {
    auto e = refusal(R"({"jsonrpc":"2.0","id":null,"method":"tools/list"})");
    CHECK(e.error.code == rpc_code::invalid_request);
    CHECK_FALSE(e.id.has_value());
    CHECK_THAT(e.error.message, Catch::Contains("never null"));
}

TEST_CASE("a request id that is neither a string nor an integer is refused") {
    for (auto text : {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", R"({"jsonrpc":"2.0","id":true,"method":"ping"})",
                      R"({"jsonrpc":"2.0","id":{},"method":"ping"})",
                      R"({"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"})"}) {
        INFO(text);
        auto e = refusal(text);
        CHECK(e.error.code == rpc_code::invalid_request);
        CHECK_FALSE(e.id.has_value());
        CHECK_THAT(e.error.message, Catch::Contains("id must be a string or an integer"));
    }
}

TEST_CASE("a missing or wrong jsonrpc version is refused and the refusal names the request id") {
    auto missing = refusal(R"({"id":4,"method":"ping"})");
    CHECK(missing.error.code == rpc_code::invalid_request);
    CHECK(missing.id == request_id(std::int64_t{4}));
    auto wrong = refusal(R"({"jsonrpc":"1.0","id":"x","method":"ping"})");
    CHECK(wrong.error.code == rpc_code::invalid_request);
    CHECK(wrong.id == request_id(std::string("x")));
    auto number = refusal(R"({"jsonrpc":2.0,"id":5,"method":"ping"})");
    CHECK(number.id == request_id(std::int64_t{5}));
}

TEST_CASE("a method that is not a string is refused with the request id") {
    auto e = refusal(R"({"jsonrpc":"2.0","id":9,"method":42})");
    CHECK(e.error.code == rpc_code::invalid_request);
    CHECK(e.id == request_id(std::int64_t{9}));
    CHECK_THAT(e.error.message, Catch::Contains("method must be a string"));
}

TEST_CASE("params that are not an object are refused") {
    for (auto text : {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":["a",1]})",
                      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":null})"}) {
        INFO(text);
        auto e = refusal(text);
        CHECK(e.error.code == rpc_code::invalid_request);
        CHECK(e.id == request_id(std::int64_t{1}));
        CHECK_THAT(e.error.message, Catch::Contains("params must be an object"));
    }
    auto note = refusal(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"})");
    CHECK(note.error.code == rpc_code::invalid_request);
}

TEST_CASE("a message mixing a method with a result or error is refused") {
    auto e = refusal(R"({"jsonrpc":"2.0","id":1,"method":"ping","result":{}})");
    CHECK(e.error.code == rpc_code::invalid_request);
    CHECK(e.id == request_id(std::int64_t{1}));
}

TEST_CASE("a response carrying both result and error is refused") {
    auto e = refusal(R"({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}})");
    CHECK(e.error.code == rpc_code::invalid_request);
    CHECK_THAT(e.error.message, Catch::Contains("both result and error"));
}

TEST_CASE("a result response without an id, or with a result that is not an object, is refused") {
    auto no_id = refusal(R"({"jsonrpc":"2.0","result":{}})");
    CHECK(no_id.error.code == rpc_code::invalid_request);
    auto not_object = refusal(R"({"jsonrpc":"2.0","id":2,"result":[1,2]})");
    CHECK(not_object.error.code == rpc_code::invalid_request);
    CHECK(not_object.id == request_id(std::int64_t{2}));
    CHECK_THAT(not_object.error.message, Catch::Contains("result must be an object"));
}

TEST_CASE("an error object without an integer code or a string message is refused") {
    struct bad {
        char const* text;
        char const* says;
    };
    bad const cases[] = {
        {R"({"jsonrpc":"2.0","id":1,"error":{"message":"m"}})", "error.code is missing"},
        {R"({"jsonrpc":"2.0","id":1,"error":{"code":"-32600","message":"m"}})", "error.code must be an integer"},
        {R"({"jsonrpc":"2.0","id":1,"error":{"code":-32600.5,"message":"m"}})", "error.code must be an integer"},
        {R"({"jsonrpc":"2.0","id":1,"error":{"code":-32600}})", "error.message is missing"},
        {R"({"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":7}})", "error.message must be a string"},
        {R"({"jsonrpc":"2.0","id":1,"error":"boom"})", "error must be an object"},
    };
    for (auto const& c : cases) {
        INFO(c.text);
        auto e = refusal(c.text);
        CHECK(e.error.code == rpc_code::invalid_request);
        CHECK(e.id == request_id(std::int64_t{1}));
        CHECK_THAT(e.error.message, Catch::Contains(c.says));
    }
}

TEST_CASE("an object with neither a method nor a result nor an error is refused") {
    auto e = refusal(R"({"jsonrpc":"2.0","id":12})");
    CHECK(e.error.code == rpc_code::invalid_request);
    CHECK(e.id == request_id(std::int64_t{12}));
}

TEST_CASE("unknown top-level members of a message are ignored") {
    auto r = parse_message(R"({"jsonrpc":"2.0","id":1,"method":"ping","x-trace":"abc"})");
    REQUIRE(r.has_value());
    CHECK(std::get<request>(*r).method == "ping");
}

TEST_CASE("every kind of message serializes and parses back to itself") {
    json::object params;
    params["name"] = "echo";
    message const samples[] = {
        request{request_id(std::int64_t{-3}), "tools/call", params},
        request{request_id(std::string("r-1")), "ping", std::nullopt},
        notification{"notifications/cancelled", params},
        notification{"notifications/initialized", std::nullopt},
        response{request_id(std::int64_t{9}), params},
        make_error_response(request_id(std::string("q")), rpc_code::method_not_found, "Method not found", json::value("x")),
        make_error_response(std::nullopt, rpc_code::parse_error, "Parse error"),
    };
    for (auto const& m : samples) {
        auto text = serialize(m);
        INFO(text);
        auto back = parse_message(text);
        REQUIRE(back.has_value());
        CHECK(*back == m);
    }
}

TEST_CASE("a message is written as its JSON form, escapes included, with numbers as their senders write them") {
    json::object params;
    params["name"] = "say \"hi\"\n";
    params["arguments"] = {{"text", "caf\u00e9 \u2028"}, {"n", 1.5}, {"list", json::array{1, "two", nullptr}}};
    std::string const odd_method = "tools/\"call\"\u0001";
    message const samples[] = {
        request{request_id(std::int64_t{-3}), odd_method, params},
        request{request_id(std::string("id \"7\"")), "ping", std::nullopt},
        notification{odd_method, params},
        notification{"notifications/initialized", std::nullopt},
        response{request_id(std::string("\u00e9")), params},
        response{request_id(std::int64_t{0}), json::object{}},
    };
    for (auto const& m : samples) {
        auto text = serialize(m);
        INFO(text);
        CHECK(json::parse(text) == to_json(m));
        if (auto const* r = std::get_if<request>(&m)) CHECK(serialize(*r) == text);
    }
    // 1.5, not Boost.JSON's 1.5E0; escapes as the canonical form writes them.
    auto text = serialize(samples[0]);
    CHECK_THAT(text, Catch::Contains(R"("n":1.5)") && Catch::Contains(R"(\"call\"\u0001)"));
    json::object numbers{{"a", 0.1}, {"b", 21.5}, {"c", 1e21}, {"d", -2.5e-7}, {"e", std::int64_t{-7}},
                         {"f", std::uint64_t{18446744073709551615ull}}};
    CHECK(serialize(response{request_id(std::int64_t{1}), numbers}) ==
          R"({"jsonrpc":"2.0","id":1,"result":{"a":0.1,"b":21.5,"c":1e+21,"d":-2.5e-7,"e":-7,"f":18446744073709551615}})");
}

TEST_CASE("an error response with an unknown id is written without an id member") {
    auto text = serialize(make_error_response(std::nullopt, rpc_code::invalid_request, "Invalid request"));
    auto v = json::parse(text).as_object();
    CHECK_FALSE(v.contains("id"));
    CHECK(v.at("jsonrpc") == "2.0");
    CHECK(v.at("error").at("code") == -32600);
}

TEST_CASE("a refusal can be sent as is: it serializes as a JSON-RPC error response") {
    auto r = parse_message(R"({"jsonrpc":"2.0","id":"k","method":5})");
    REQUIRE_FALSE(r.has_value());
    auto v = json::parse(serialize(r.error().reply)).as_object();
    CHECK(v.at("id") == "k");
    CHECK(v.at("error").at("code") == -32600);
}

TEST_CASE("the standard and the 2026 error codes carry the spec's names") {
    CHECK(rpc_code_name(-32700) == "ParseError");
    CHECK(rpc_code_name(-32600) == "InvalidRequest");
    CHECK(rpc_code_name(-32601) == "MethodNotFound");
    CHECK(rpc_code_name(-32602) == "InvalidParams");
    CHECK(rpc_code_name(-32603) == "InternalError");
    CHECK(rpc_code_name(-32020) == "HeaderMismatch");
    CHECK(rpc_code_name(-32021) == "MissingRequiredClientCapability");
    CHECK(rpc_code_name(-32022) == "UnsupportedProtocolVersion");
    CHECK(rpc_code_name(-32002).empty());
}

TEST_CASE("request ids print as integers or quoted strings") {
    CHECK(to_string(request_id(std::int64_t{42})) == "42");
    CHECK(to_string(request_id(std::string("a\"b"))) == "\"a\\\"b\"");
}

// ---- glimpses of a message too long to read ---------------------------------------------------

TEST_CASE("the head of a reply cut off inside its result names its id when the id comes first") {
    auto head = read_message_head(R"({"jsonrpc":"2.0", "id" : 42,"result":{"content":[{"type":"text","text":"aaaa)");
    CHECK_FALSE(head.has_method);
    REQUIRE(head.id.has_value());
    CHECK(*head.id == request_id(std::int64_t{42}));
}

TEST_CASE("the head of a reply reads a string id and skips nested values with braces inside strings") {
    auto head = read_message_head(R"({"_meta":{"a":["}\"",{"id":1}]},"id":"airlock-9","result":{"x":)");
    REQUIRE(head.id.has_value());
    CHECK(*head.id == request_id(std::string("airlock-9")));
}

TEST_CASE("the head of a reply whose id comes after the cut-off names no id") {
    CHECK_FALSE(read_message_head(R"({"result":{"content":[{"text":"aaaa)").id.has_value());
    CHECK_FALSE(read_message_head(R"({"result":{"id":3,"text":"aaaa)").id.has_value());
    CHECK_FALSE(read_message_head(R"({"jsonrpc":"2.0","id":12)").id.has_value());  // 12 may go on: 123
    CHECK_FALSE(read_message_head("not json at all").id.has_value());
}

TEST_CASE("the head of a notification or request says it has a method") {
    CHECK(read_message_head(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"data":"aaa)").has_method);
    CHECK(read_message_head(R"({"method":"sampling/createMessage","params":{"messages":[)").has_method);
    CHECK_FALSE(read_message_head(R"({"result":{"method":"x"},"id":1)").has_method);
}

TEST_CASE("the last bytes of a reply in the TypeScript SDK's order name its id") {
    auto id = read_trailing_id(R"(aaaa"}]},"jsonrpc":"2.0","id":17})");
    REQUIRE(id.has_value());
    CHECK(*id == request_id(std::int64_t{17}));
    auto named = read_trailing_id("aaa\"}, \"id\" : \"airlock-3\" }\r");
    REQUIRE(named.has_value());
    CHECK(*named == request_id(std::string("airlock-3")));
}

TEST_CASE("the last bytes of a message name its id when whole members follow it up to the end") {
    auto id = read_trailing_id(R"(aaaa"}}},"id":7,"jsonrpc":"2.0"})");
    REQUIRE(id.has_value());
    CHECK(*id == request_id(std::int64_t{7}));
    auto spaced = read_trailing_id("aa\"}} , \"id\" : \"r-9\" , \"jsonrpc\" : \"2.0\" , \"x\" : [1, {\"y\": \"}\"}] }\n");
    REQUIRE(spaced.has_value());
    CHECK(*spaced == request_id(std::string("r-9")));
}

TEST_CASE("the last bytes of a message name no id when the last member is not a top-level id") {
    CHECK_FALSE(read_trailing_id(R"(aaaa"},"structuredContent":{"id":5}})").has_value());  // nested
    CHECK_FALSE(read_trailing_id(R"(,"id":5},"jsonrpc":"2.0"})").has_value());
    CHECK_FALSE(read_trailing_id(R"(aaa\"id\":\"x"})").has_value());  // inside a string
    CHECK_FALSE(read_trailing_id(R"(,"id":1.5})").has_value());        // not an id
    CHECK_FALSE(read_trailing_id(R"(,"id":5)").has_value());           // the object does not end
    CHECK_FALSE(read_trailing_id(R"(aa","id":5,"jsonrpc":"2.0"},"x":1})").has_value());  // nested, members after it
    CHECK_FALSE(read_trailing_id(R"(aa","id":5,"jsonrpc":"2.)").has_value());             // cut off
}

TEST_CASE("an id that is not usable is refused saying what it is, never contradicting itself") {
    struct example {
        char const* id;
        char const* says;
    };
    for (auto [id, says] : {example{"9223372036854775808", "9223372036854775808 is outside that range"},
                            example{"18446744073709551615", "from -2^63 to 2^63-1"},
                            example{"1.5", "not a number with a fraction or an exponent"},
                            example{"1e3", "not a number with a fraction or an exponent"},
                            example{"true", "not a boolean"}, example{"[1]", "not an array"}}) {
        INFO(id);
        for (std::string text : {std::string(R"({"jsonrpc":"2.0","id":)") + id + R"(,"method":"ping"})",
                                 std::string(R"({"jsonrpc":"2.0","id":)") + id + R"(,"result":{}})"}) {
            auto e = refusal(text);
            CHECK(e.error.code == rpc_code::invalid_request);
            CHECK_THAT(e.error.message, Catch::Contains(says));
            CHECK_THAT(e.error.message, !Catch::Contains("integer, not an integer"));
        }
    }
    // The edges of the range are ids.
    CHECK(parse_message(R"({"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"})").has_value());
    CHECK(parse_message(R"({"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"})").has_value());
}

TEST_CASE("a message nested deeper than airlock reads is refused as invalid params, with its id, naming the limit") {
    std::string deep = std::string(200, '[') + std::string(200, ']');
    auto e = refusal(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{"a":)" + deep + "}}}");
    CHECK(e.error.code == rpc_code::invalid_params);
    CHECK(e.id == request_id(std::int64_t{4}));
    CHECK_THAT(e.error.message, Catch::Contains("deeper than 128 levels"));
    // Shapes that are not JSON stay parse errors.
    CHECK(refusal(R"({"jsonrpc":"2.0","id":4,"method":)").error.code == rpc_code::parse_error);
}

// Found by the jsonrpc_decode fuzz target: the ParseError answering a body with a stray UTF-8 byte
// repeated the byte raw, so the answer itself was not valid UTF-8 and no strict client could read it.
TEST_CASE("the ParseError answering a stray non-ASCII byte is itself a readable JSON-RPC message") {
    auto parsed = parse_message("{\"jsonrpc\":\"2.0\",\"id\":\xde\x96\x89lock\"}");
    REQUIRE_FALSE(parsed.has_value());
    auto const& reply = parsed.error().reply;
    CHECK(reply.error.code == rpc_code::parse_error);
    auto answer = parse_message(serialize(message{reply}));
    REQUIRE(answer.has_value());
    CHECK(std::get<error_response>(*answer) == reply);
}
