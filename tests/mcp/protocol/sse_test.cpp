#include "mcp/protocol/sse.hpp"

#include <catch2/catch.hpp>

using namespace airlock::mcp;

namespace {

std::vector<sse_event> parse_all(std::string_view stream, sse_parser& p) {
    std::vector<sse_event> out;
    auto r = p.feed(stream, out);
    REQUIRE(r.has_value());
    return out;
}

std::vector<sse_event> parse_all(std::string_view stream) {
    sse_parser p;
    return parse_all(stream, p);
}

sse_event ev(std::string type, std::string data, std::string id = {}, std::optional<std::uint64_t> retry = {}) {
    return sse_event{std::move(type), std::move(data), std::move(id), retry};
}

// A stream exercising every rule at once: BOM, all three line ends, comments, fields without a
// colon, retry, ids, a second BOM (content, not stripped), and events without data.
std::string const mixed_stream =
    "\xEF\xBB\xBF"
    ": keep-alive\r\n"
    "event: notice\r\n"
    "id: 1\r\n"
    "data: first\r\n"
    "data:  indented\r\n"
    "\r\n"
    "retry: 2500\n"
    "data\n"
    "\n"
    "id: 2\r"
    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r"
    "\r"
    "id\n"
    "event: only-type\n"
    "\n"
    "unknown: field\n"
    "data:x\n"
    "\n";

std::vector<sse_event> const mixed_events = {
    ev("notice", "first\n indented", "1"),
    ev("message", "", "1", 2500),
    ev("message", R"({"jsonrpc":"2.0","method":"notifications/progress"})", "2"),
    ev("message", "x", ""),
};

}  // namespace

TEST_CASE("an event's type defaults to message and its data is the data line") {
    auto events = parse_all("data: hello\n\n");
    REQUIRE(events.size() == 1);
    CHECK(events[0] == ev("message", "hello"));
}

TEST_CASE("several data lines are joined with a line feed") {
    auto events = parse_all("data: a\ndata: b\ndata:\ndata: c\n\n");
    REQUIRE(events.size() == 1);
    CHECK(events[0].data == "a\nb\n\nc");
}

TEST_CASE("event, id and retry fields are read") {
    auto events = parse_all("event: endpoint\nid: 42\nretry: 3000\ndata: /messages\n\n");
    REQUIRE(events.size() == 1);
    CHECK(events[0] == ev("endpoint", "/messages", "42", 3000));
}

TEST_CASE("CRLF, LF and a lone CR all end lines") {
    auto crlf = parse_all("data: a\r\n\r\n");
    auto lf = parse_all("data: a\n\n");
    auto cr = parse_all("data: a\r\r");
    auto mixed = parse_all("data: a\r\ndata: b\rdata: c\n\r\n");
    REQUIRE(crlf.size() == 1);
    CHECK(crlf == lf);
    CHECK(cr == lf);
    REQUIRE(mixed.size() == 1);
    CHECK(mixed[0].data == "a\nb\nc");
}

TEST_CASE("comment lines are ignored, including keep-alives") {
    auto events = parse_all(":\r\n: ping\ndata: x\n:comment inside\n\n:\n\n");
    REQUIRE(events.size() == 1);
    CHECK(events[0].data == "x");
}

TEST_CASE("a byte order mark is stripped at the start of the stream only") {
    auto events = parse_all("\xEF\xBB\xBF" "data: a\n\n\xEF\xBB\xBF" "data: b\n\n");
    // The second BOM is part of a field name "\xEF\xBB\xBFdata", which is unknown and ignored.
    REQUIRE(events.size() == 1);
    CHECK(events[0].data == "a");
}

TEST_CASE("a stream that starts like a BOM but is not one keeps those bytes") {
    auto events = parse_all("\xEF\xBB" "data: a\n\ndata: b\n\n");
    REQUIRE(events.size() == 1);  // the first line's field is "\xEF\xBBdata": unknown
    CHECK(events[0].data == "b");
}

TEST_CASE("a field without a colon is that field with an empty value") {
    auto events = parse_all("data\n\nevent\ndata: x\n\n");
    REQUIRE(events.size() == 2);
    CHECK(events[0] == ev("message", ""));
    CHECK(events[1].type == "message");
}

TEST_CASE("only one space after the colon is removed") {
    auto events = parse_all("data:  two\n\ndata:none\n\ndata:\tTab\n\n");
    REQUIRE(events.size() == 3);
    CHECK(events[0].data == " two");
    CHECK(events[1].data == "none");
    CHECK(events[2].data == "\tTab");
}

TEST_CASE("an id holding NUL is ignored") {
    std::string stream = "id: 1\ndata: a\n\nid: 2";
    stream += '\0';
    stream += "x\ndata: b\n\n";
    sse_parser p;
    auto events = parse_all(stream, p);
    REQUIRE(events.size() == 2);
    CHECK(events[1].id == "1");
    CHECK(p.last_event_id() == "1");
}

TEST_CASE("retry is honoured only when it is all digits") {
    sse_parser p;
    auto events = parse_all("retry: 100\ndata: a\n\nretry: 10a\ndata: b\n\nretry: -1\nretry:\nretry: 1.5\ndata: c\n\n", p);
    REQUIRE(events.size() == 3);
    CHECK(events[0].retry == 100u);
    CHECK_FALSE(events[1].retry.has_value());
    CHECK_FALSE(events[2].retry.has_value());
    CHECK(p.reconnection_time_ms() == 100u);
    auto huge = parse_all("retry: 99999999999999999999999\ndata: a\n\n");
    REQUIRE(huge.size() == 1);
    CHECK_FALSE(huge[0].retry.has_value());
}

TEST_CASE("the last event id carries over to later events until an empty id resets it") {
    sse_parser p;
    auto events = parse_all("id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", p);
    REQUIRE(events.size() == 3);
    CHECK(events[0].id == "7");
    CHECK(events[1].id == "7");
    CHECK(events[2].id.empty());
    CHECK(p.last_event_id().empty());
}

TEST_CASE("a block without data is not dispatched but its id and retry still count") {
    sse_parser p;
    auto events = parse_all("id: 5\nretry: 1000\nevent: x\n\ndata: later\n\n", p);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == "message");  // the type of the undispatched block is forgotten
    CHECK(events[0].id == "5");
    CHECK(p.reconnection_time_ms() == 1000u);
}

TEST_CASE("unknown field names are ignored") {
    auto events = parse_all("foo: bar\nDATA: shout\ndata: x\n\n");
    REQUIRE(events.size() == 1);
    CHECK(events[0].data == "x");
}

TEST_CASE("the mixed reference stream parses to the expected events") {
    sse_parser p;
    CHECK(parse_all(mixed_stream, p) == mixed_events);
    CHECK(p.reconnection_time_ms() == 2500u);
}

TEST_CASE("splitting a stream at every byte boundary yields the same events") {
    for (std::size_t cut = 0; cut <= mixed_stream.size(); ++cut) {
        INFO("cut at " << cut);
        sse_parser p;
        std::vector<sse_event> out;
        REQUIRE(p.feed(std::string_view(mixed_stream).substr(0, cut), out).has_value());
        REQUIRE(p.feed(std::string_view(mixed_stream).substr(cut), out).has_value());
        CHECK(out == mixed_events);
        CHECK(p.last_event_id() == "");
    }
}

TEST_CASE("feeding a stream one byte at a time yields the same events") {
    sse_parser p;
    std::vector<sse_event> out;
    for (char c : mixed_stream) REQUIRE(p.feed(std::string_view(&c, 1), out).has_value());
    CHECK(out == mixed_events);
    CHECK(p.reconnection_time_ms() == 2500u);
}

TEST_CASE("splitting a stream at every pair of boundaries yields the same events") {
    for (std::size_t a = 0; a <= mixed_stream.size(); ++a) {
        for (std::size_t b = a; b <= mixed_stream.size(); ++b) {
            sse_parser p;
            std::vector<sse_event> out;
            std::string_view s(mixed_stream);
            REQUIRE(p.feed(s.substr(0, a), out).has_value());
            REQUIRE(p.feed(s.substr(a, b - a), out).has_value());
            REQUIRE(p.feed(s.substr(b), out).has_value());
            if (out != mixed_events) FAIL("cuts at " << a << " and " << b << " changed the events");
        }
    }
    SUCCEED();
}

TEST_CASE("an event larger than the limit fails with a clear error and the parser stays failed") {
    sse_parser p(64);
    std::vector<sse_event> out;
    REQUIRE(p.feed("data: small\n\n", out).has_value());
    std::string big = "data: " + std::string(40, 'a') + "\ndata: " + std::string(40, 'b') + "\n\n";
    auto r = p.feed(big, out);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "sse_event_too_large");
    CHECK_THAT(r.error().message, Catch::Contains("64 bytes"));
    CHECK(out.size() == 1);  // the event before the fault is kept
    auto again = p.feed("data: x\n\n", out);
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().code == "sse_event_too_large");
}

TEST_CASE("a line that never ends is bounded by the same limit") {
    sse_parser p(100);
    std::vector<sse_event> out;
    bool failed = false;
    for (int i = 0; i < 50 && !failed; ++i) failed = !p.feed("xxxxxxxxxx", out).has_value();
    CHECK(failed);
}

TEST_CASE("an event exactly at the limit is accepted and one byte more is refused, however it is split") {
    // The limit counts what is held: data and type read so far plus the whole line being read.
    std::string const stream = "data: 0123456789\n\n";  // one 16-byte line
    for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
        INFO("cut at " << cut);
        sse_parser fits(16);
        std::vector<sse_event> out;
        REQUIRE(fits.feed(std::string_view(stream).substr(0, cut), out).has_value());
        REQUIRE(fits.feed(std::string_view(stream).substr(cut), out).has_value());
        REQUIRE(out.size() == 1);
        CHECK(out[0].data == "0123456789");
        sse_parser tight(15);
        auto first = tight.feed(std::string_view(stream).substr(0, cut), out);
        auto second = tight.feed(std::string_view(stream).substr(cut), out);
        CHECK_FALSE((first.has_value() && second.has_value()));
    }
}

TEST_CASE("a stream that ends mid-event discards it and says so") {
    sse_parser p;
    std::vector<sse_event> out;
    REQUIRE(p.feed("data: complete\n\ndata: partial\n", out).has_value());
    CHECK(out.size() == 1);
    CHECK(p.finish());
    sse_parser clean;
    REQUIRE(clean.feed("data: complete\n\n", out).has_value());
    CHECK_FALSE(clean.finish());
}

TEST_CASE("the writer splits data with line breaks into data lines that read back as one value") {
    auto text = format_sse_event(sse_frame{std::nullopt, "line1\nline2", std::nullopt, std::nullopt});
    REQUIRE(text.has_value());
    CHECK(*text == "data: line1\ndata: line2\n\n");
    // CRLF and lone CR are line breaks too; the reader turns every one of them into '\n'.
    auto crlf = format_sse_event(sse_frame{std::nullopt, "a\r\nb\rc", std::nullopt, std::nullopt});
    REQUIRE(crlf.has_value());
    CHECK(*crlf == "data: a\ndata: b\ndata: c\n\n");
    auto events = parse_all(*crlf);
    REQUIRE(events.size() == 1);
    CHECK(events[0].data == "a\nb\nc");
}

TEST_CASE("written events read back unchanged, leading spaces and empty data included") {
    std::vector<sse_frame> frames = {
        {std::nullopt, R"({"jsonrpc":"2.0","id":1,"result":{}})", std::nullopt, std::nullopt},
        {"message", " leading space", "ev-1", std::nullopt},
        {"custom", "", "ev-2", 5000},
        {std::nullopt, "multi\n\nline\n", std::nullopt, std::nullopt},
        {std::nullopt, ":not a comment", "", std::nullopt},
    };
    std::string stream;
    for (auto const& f : frames) {
        auto t = format_sse_event(f);
        REQUIRE(t.has_value());
        stream += *t;
    }
    auto events = parse_all(stream);
    REQUIRE(events.size() == frames.size());
    CHECK(events[0] == ev("message", frames[0].data));
    CHECK(events[1] == ev("message", " leading space", "ev-1"));
    CHECK(events[2] == ev("custom", "", "ev-2", 5000));
    CHECK(events[3] == ev("message", "multi\n\nline\n", "ev-2"));
    CHECK(events[4] == ev("message", ":not a comment", ""));
}

TEST_CASE("the writer refuses an event type or id that would inject fields") {
    auto type = format_sse_event(sse_frame{"evil\ndata: x", "d", std::nullopt, std::nullopt});
    REQUIRE_FALSE(type.has_value());
    CHECK(type.error().code == "invalid_sse_field");
    auto id = format_sse_event(sse_frame{std::nullopt, "d", "1\r2", std::nullopt});
    REQUIRE_FALSE(id.has_value());
    CHECK(id.error().code == "invalid_sse_field");
    auto nul = format_sse_event(sse_frame{std::nullopt, "d", std::string("1\0002", 3), std::nullopt});
    REQUIRE_FALSE(nul.has_value());
    CHECK_THAT(nul.error().message, Catch::Contains("NUL"));
}

TEST_CASE("a written comment is ignored by the reader") {
    CHECK(format_sse_comment() == ":\n");
    auto c = format_sse_comment("keep\nalive");
    CHECK(c == ": keep\n: alive\n");
    auto events = parse_all(c + "data: after\n\n");
    REQUIRE(events.size() == 1);
    CHECK(events[0].data == "after");
}
