// What the HTTP server refuses before any handler sees a request, as the pure rules over a parsed
// request: a repeated single-valued field, and each class of Transfer-Encoding framing.
#include "service/http/request_rules.hpp"

#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>
#include <utility>

using namespace airlock::service;

namespace {

http_request request(std::initializer_list<std::pair<std::string, std::string>> fields, unsigned version = 11) {
    http_request req{http::verb::post, "/mcp", version};
    for (auto const& [name, value] : fields) req.insert(name, value);
    return req;
}

}  // namespace

TEST_CASE("request rules: a single-valued field sent twice is named, whatever its case; other repeats pass") {
    CHECK_FALSE(repeated_singleton_field(request({{"Host", "a"}, {"Accept", "x"}, {"Accept", "y"}})));
    auto twice = repeated_singleton_field(request({{"Authorization", "Bearer a"}, {"authorization", "Bearer b"}}));
    REQUIRE(twice);
    CHECK(*twice == "Authorization");
    for (auto const* name : {"Host", "Origin", "Content-Type", "Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method",
                             "Mcp-Name", "Last-Event-ID", "Idempotency-Key"}) {
        INFO(name);
        auto r = repeated_singleton_field(request({{name, "1"}, {name, "2"}}));
        REQUIRE(r);
        CHECK(*r == name);
    }
}

TEST_CASE("request rules: the target of a whole request line, and nothing from a partial one") {
    CHECK(request_line_target("GET /v1/runs?x=1 HTTP/1.1\r\nHost: a\r\n") == "/v1/runs?x=1");
    CHECK(request_line_target("POST /mcp HTTP/1.1\r\n") == "/mcp");
    CHECK(request_line_target("POST /mcp HTTP/1.1").empty());  // the line has not ended
    CHECK(request_line_target("GARBAGE\r\n").empty());
    CHECK(request_line_target("").empty());
}

TEST_CASE("request rules: chunked alone, a length, or neither pass; every other framing is refused with its status") {
    CHECK_FALSE(refuse_framing(request({})));
    CHECK_FALSE(refuse_framing(request({{"Content-Length", "12"}})));
    CHECK_FALSE(refuse_framing(request({{"Transfer-Encoding", "chunked"}})));
    CHECK_FALSE(refuse_framing(request({{"Transfer-Encoding", " \tChunked\t "}})));

    struct row {
        char const* what;
        http_request req;
        http::status status;
        std::string_view code;
    };
    row const rows[] = {
        {"HTTP/1.0 with chunked", request({{"Transfer-Encoding", "chunked"}}, 10), http::status::bad_request,
         "bad_transfer_encoding"},
        {"chunked beside Content-Length", request({{"Transfer-Encoding", "chunked"}, {"Content-Length", "5"}}),
         http::status::bad_request, "bad_transfer_encoding"},
        {"chunked twice", request({{"Transfer-Encoding", "chunked, chunked"}}), http::status::bad_request,
         "bad_transfer_encoding"},
        {"chunked twice over two fields", request({{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}}),
         http::status::bad_request, "bad_transfer_encoding"},
        {"chunked not last", request({{"Transfer-Encoding", "chunked, gzip"}}), http::status::bad_request,
         "bad_transfer_encoding"},
        {"an empty coding list", request({{"Transfer-Encoding", " , "}}), http::status::bad_request,
         "bad_transfer_encoding"},
        {"gzip then chunked", request({{"Transfer-Encoding", "gzip, chunked"}}), http::status::not_implemented,
         "unsupported_transfer_coding"},
        {"gzip and chunked in two fields", request({{"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}}),
         http::status::not_implemented, "unsupported_transfer_coding"},
    };
    for (auto const& r : rows) {
        INFO(r.what);
        auto refused = refuse_framing(r.req);
        REQUIRE(refused);
        CHECK(refused->status == r.status);
        CHECK(refused->code == r.code);
        CHECK_FALSE(refused->message.empty());
    }
}
