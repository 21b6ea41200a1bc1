// RFC 3339 times as the journal writes and reads them, across every year a four-digit spelling has.

#include "core/rfc3339.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

using namespace airlock::core;

TEST_CASE("a time is written in UTC to the second, a fraction dropped") {
    using namespace std::chrono;
    sys_seconds const t = sys_days{2026y / November / 30} + hours{10} + minutes{59} + seconds{50};
    CHECK(rfc3339(t) == "2026-11-30T10:59:50Z");
    CHECK(rfc3339(system_clock::time_point(t) + milliseconds{999}) == "2026-11-30T10:59:50Z");
}

// A nanosecond system_clock::time_point ends in 2262: a date past it (a prune "sealed before 2999",
// a REST `since` of 9999) once overflowed a signed integer on its way to text.
TEST_CASE("times outside the years a nanosecond clock holds are written and read back exactly") {
    for (std::string const text : {"0000-01-01T00:00:00Z", "1600-02-29T12:00:00Z", "2262-04-12T00:00:00Z",
                                   "2999-01-01T00:00:00Z", "9999-12-31T23:59:59Z"}) {
        INFO(text);
        auto const t = parse_rfc3339(text);
        REQUIRE(t.has_value());
        CHECK(rfc3339(*t) == text);
    }
}

TEST_CASE("a since bound is clamped to the four-digit years, however far its offset carries it") {
    CHECK(since_bound("9999-12-31T23:59:59-12:00") == "9999-12-31T23:59:59Z");
    CHECK(since_bound("0000-01-01T00:00:00+12:00") == "0000-01-01T00:00:00Z");
    CHECK(since_bound("2026-11-30T11:00:00+01:00") == "2026-11-30T10:00:00Z");
    CHECK_FALSE(since_bound("2026-11-30").has_value());
}
