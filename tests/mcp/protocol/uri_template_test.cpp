#include "mcp/protocol/uri_template.hpp"

#include <catch2/catch.hpp>

using airlock::mcp::uri_template;

namespace {

bool matches(std::string_view tmpl, std::string const& uri) {
    auto t = uri_template::parse(tmpl);
    REQUIRE(t);
    return t->matches(uri);
}

}  // namespace

TEST_CASE("a simple expression matches one path segment and no more") {
    CHECK(matches("file:///logs/{name}", "file:///logs/today.txt"));
    CHECK(matches("file:///logs/{name}", "file:///logs/"));
    CHECK_FALSE(matches("file:///logs/{name}", "file:///logs/2026/today.txt"));
    CHECK_FALSE(matches("file:///logs/{name}", "file:///logs/today.txt?x=1"));
}

TEST_CASE("a reserved expression matches across slashes") {
    CHECK(matches("file:///{+path}", "file:///a/b/c.txt"));
    CHECK(matches("docs://{#section}", "docs://intro/part/2"));
}

TEST_CASE("a query expression matches an optional query and nothing else") {
    CHECK(matches("search://items{?q,limit}", "search://items"));
    CHECK(matches("search://items{?q,limit}", "search://items?q=x&limit=3"));
    CHECK_FALSE(matches("search://items{?q,limit}", "search://items/more"));
    CHECK(matches("search://items?fixed=1{&q}", "search://items?fixed=1&q=2"));
}

TEST_CASE("a path-segment expression matches an optional path") {
    CHECK(matches("repo://r{/segments}", "repo://r"));
    CHECK(matches("repo://r{/segments}", "repo://r/a/b"));
    CHECK_FALSE(matches("repo://r{/segments}", "repo://r/a?x"));
}

TEST_CASE("the literal part of a template matches itself only, regex characters included") {
    CHECK(matches("data://a.b/{x}", "data://a.b/1"));
    CHECK_FALSE(matches("data://a.b/{x}", "data://aXb/1"));
    CHECK(matches("calc://(1+2)*[3]/{x}", "calc://(1+2)*[3]/y"));
    CHECK_FALSE(matches("calc://(1+2)*[3]/{x}", "calc://12223/y"));
}

TEST_CASE("a template with an expression left open is refused") {
    CHECK_FALSE(uri_template::parse("file:///{name"));
    CHECK(uri_template::parse("file:///plain"));
}

TEST_CASE("a template keeps its text") {
    auto t = uri_template::parse("file:///{name}");
    REQUIRE(t);
    CHECK(t->text() == "file:///{name}");
}

// Templates come from upstreams and URIs from clients. A backtracking regex took exponential time on
// adjacent expressions (found by the uri_template fuzz target) and recursed once per character of a
// long URI, so either could hang or overflow the stack of a gateway thread.
TEST_CASE("a template of many adjacent expressions and a long URI are matched in one pass") {
    std::string tmpl = "x://";
    for (int i = 0; i < 40; ++i) tmpl += "{.a}{;b}{/c}";
    tmpl += "!";
    std::string const uri = "x://" + std::string(2000, 'a') + "/b/c/" + std::string(2000, 'd');
    CHECK_FALSE(matches(tmpl, uri));  // every split of the run is a way to fail
    CHECK(matches(tmpl, uri + "!"));
}

TEST_CASE("a URI of a million characters is matched without recursion") {
    std::string const uri = "file:///" + std::string(1'000'000, 'a');
    CHECK(matches("file:///{+path}", uri));
    CHECK(matches("file:///{name}", uri));
    CHECK_FALSE(matches("file:///{name}", uri + "/"));
}
