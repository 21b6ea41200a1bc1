#include "core/secrets.hpp"
#include "service/config/config.hpp"
#include "service/ops/log.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

using namespace airlock::service;
namespace json = boost::json;

namespace {
// Every test that registers secrets leaves none behind for the next.
struct secrets_cleared {
    ~secrets_cleared() { airlock::core::secrets::clear(); }
};
}  // namespace

TEST_CASE("a JSON log line is one object with time, level, message and the request fields") {
    std::vector<log::field> fields{{"method", "POST"}, {"route", "/mcp"}, {"status", "200", true}, {"duration_ms", "1.250", true}};
    auto line = log::format_line(log_format::json, "2026-11-30T10:00:00.000Z", "info", "http request", fields);
    REQUIRE(line.back() == '\n');
    CHECK(std::count(line.begin(), line.end(), '\n') == 1);
    auto v = json::parse(line).as_object();
    CHECK(v.at("time") == "2026-11-30T10:00:00.000Z");
    CHECK(v.at("level") == "info");
    CHECK(v.at("msg") == "http request");
    CHECK(v.at("method") == "POST");
    CHECK(v.at("status") == 200);
    CHECK(v.at("duration_ms").as_double() == 1.25);
}

TEST_CASE("a message with quotes, line breaks and invalid UTF-8 still gives one parseable JSON line") {
    std::string nasty = "upstream said \"hi\"\nsecond line\t\x01 bad byte \xff end \xc3\xa9";
    auto line = log::format_line(log_format::json, "t", "warn", nasty, {});
    CHECK(std::count(line.begin(), line.end(), '\n') == 1);
    auto v = json::parse(line).as_object();
    CHECK(v.at("msg") == "upstream said \"hi\"\nsecond line\t\x01 bad byte \xef\xbf\xbd end \xc3\xa9");
}

TEST_CASE("a text log line stays on one line and shows fields as key=value") {
    std::vector<log::field> fields{{"route", "/healthz"}, {"principal", "alice smith"}};
    auto line = log::format_line(log_format::text, "2026-11-30T10:00:00.000Z", "info", "two\nlines", fields);
    CHECK(line == "2026-11-30T10:00:00.000Z info  two\\nlines route=/healthz principal=\"alice smith\"\n");
}

TEST_CASE("a registered secret is redacted from the message and from every field") {
    secrets_cleared cleanup;
    airlock::core::secrets::add("tok-0123456789abcdef");
    std::vector<log::field> fields{{"header", "Bearer tok-0123456789abcdef"}};
    for (auto format : {log_format::json, log_format::text}) {
        auto line = log::format_line(format, "t", "debug", "sent tok-0123456789abcdef twice: tok-0123456789abcdef", fields);
        CHECK(line.find("tok-0123456789abcdef") == std::string::npos);
        CHECK_THAT(line, Catch::Contains("sent [redacted] twice: [redacted]"));
        CHECK_THAT(line, Catch::Contains("Bearer [redacted]"));
    }
}

TEST_CASE("very short values are not treated as secrets, so ordinary words survive") {
    secrets_cleared cleanup;
    airlock::core::secrets::add("abc");
    auto line = log::format_line(log_format::text, "t", "info", "abc is fine", {});
    CHECK_THAT(line, Catch::Contains("abc is fine"));
}

TEST_CASE("log levels and formats parse from their configuration names only") {
    CHECK(log::parse_level("debug") == log_level::debug);
    CHECK(log::parse_level("warn") == log_level::warn);
    CHECK_FALSE(log::parse_level("DEBUG"));
    CHECK_FALSE(log::parse_level("verbose"));
    CHECK(log::parse_format("text") == log_format::text);
    CHECK(log::parse_format("json") == log_format::json);
    CHECK_FALSE(log::parse_format("logfmt"));
}
