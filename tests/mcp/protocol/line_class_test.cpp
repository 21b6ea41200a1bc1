#include "mcp/protocol/line_class.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace airlock::mcp;
using kind = line_class::kind;

namespace {

// Frames `line` past a limit of 32 bytes, as the stdio transport's framer would skip it.
oversized_line skipped(std::string const& line) {
    line_framer f(32);
    std::string input = line + "\n";
    std::string_view data(input);
    while (!data.empty())
        if (f.take(data) == line_framer::ended::oversized) return f.skipped();
    FAIL("the line was not skipped as oversized");
    return {};
}

}  // namespace

TEST_CASE("an empty line and a line of blanks are blank") {
    CHECK(classify_line("").what == kind::blank);
    CHECK(classify_line(" \t ").what == kind::blank);
    CHECK(classify_line("\r").what == kind::blank);
}

TEST_CASE("a JSON-RPC response line is a message whose id is the request it answers") {
    auto c = classify_line(R"({"jsonrpc":"2.0","id":7,"result":{}})");
    REQUIRE(c.what == kind::message);
    REQUIRE(c.msg);
    auto const* r = std::get_if<response>(&*c.msg);
    REQUIRE(r);
    CHECK(r->id == request_id(std::int64_t{7}));
}

TEST_CASE("a line ended by CRLF is read without its CR") {
    auto c = classify_line("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r");
    REQUIRE(c.what == kind::message);
    CHECK(std::holds_alternative<notification>(*c.msg));
    CHECK(c.text.back() == '}');
}

TEST_CASE("a line that is not JSON is not JSON-RPC and says why") {
    auto c = classify_line("npm WARN deprecated something");
    CHECK(c.what == kind::not_json_rpc);
    CHECK_FALSE(c.reason.empty());
    CHECK_FALSE(c.id);
    CHECK(c.text == "npm WARN deprecated something");
}

TEST_CASE("a broken reply with an id and no method is the unreadable reply to that request") {
    auto c = classify_line(R"({"jsonrpc":"2.0","id":"call-3","result":{},"error":{"code":1,"message":"both"}})");
    REQUIRE(c.what == kind::unreadable_reply);
    REQUIRE(c.id);
    CHECK(*c.id == request_id(std::string("call-3")));
    CHECK_FALSE(c.reason.empty());
}

TEST_CASE("a broken request with an id answers nothing: it is only not JSON-RPC") {
    auto c = classify_line(R"({"jsonrpc":"1.0","id":4,"method":"tools/call"})");
    CHECK(c.what == kind::not_json_rpc);
    CHECK_FALSE(c.id);
}

TEST_CASE("an over-long line with a method is not a reply") {
    auto o = classify_oversized(skipped(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"data":")" +
                                        std::string(200, 'x') + "\"}}"));
    CHECK(o.what == oversized_class::kind::not_a_reply);
}

TEST_CASE("an over-long reply whose id shows is the reply to that request") {
    auto o = classify_oversized(skipped(R"({"jsonrpc":"2.0","id":12,"result":{"pad":")" + std::string(200, 'x') + "\"}}"));
    REQUIRE(o.what == oversized_class::kind::reply_to);
    CHECK(o.id == request_id(std::int64_t{12}));
}

TEST_CASE("an over-long reply whose id cannot be seen is a reply to an unknown request") {
    auto o = classify_oversized(skipped(R"({"jsonrpc":"2.0","result":{"pad":")" + std::string(9000, 'x') +
                                        R"("},"pad2":")" + std::string(9000, 'y') + R"(","id":)" + "5" + std::string(5000, ' ') + "}"));
    CHECK(o.what == oversized_class::kind::reply_to_unknown);
    CHECK_FALSE(o.id);
}
