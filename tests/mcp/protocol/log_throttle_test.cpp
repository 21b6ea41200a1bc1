#include "mcp/protocol/log_throttle.hpp"

#include <catch2/catch.hpp>

#include <string>

using airlock::mcp::log_throttle;
using namespace std::chrono_literals;

namespace {

// A throttle on a clock the test moves by hand.
struct throttled {
    log_throttle::clock::time_point t{};
    log_throttle throttle{10s, [this] { return t; }};
};

}  // namespace

TEST_CASE("a repeated event is logged at once, then once per interval with the count of those not logged") {
    throttled f;
    auto first = f.throttle.admit("dropped");
    REQUIRE(first);
    CHECK(first->empty());
    for (int i = 0; i < 999; ++i) {
        f.t += 5ms;
        CHECK_FALSE(f.throttle.admit("dropped"));
    }
    f.t += 10s;
    auto next = f.throttle.admit("dropped");
    REQUIRE(next);
    CHECK_THAT(*next, Catch::Contains("999 more like this") && Catch::Contains("at most once every 10 s"));
    // The count starts again from there.
    f.t += 1s;
    CHECK_FALSE(f.throttle.admit("dropped"));
    f.t += 10s;
    auto third = f.throttle.admit("dropped");
    REQUIRE(third);
    CHECK_THAT(*third, Catch::Contains("(1 more like this"));
}

TEST_CASE("an event that does not repeat within the interval is logged each time, with nothing appended") {
    throttled f;
    for (int i = 0; i < 5; ++i) {
        auto line = f.throttle.admit("refused");
        REQUIRE(line);
        CHECK(line->empty());
        f.t += 11s;
    }
}

TEST_CASE("events of different keys are throttled apart") {
    throttled f;
    CHECK(f.throttle.admit("host 10.0.0.1"));
    CHECK(f.throttle.admit("host 10.0.0.2"));
    CHECK_FALSE(f.throttle.admit("host 10.0.0.1"));
    CHECK_FALSE(f.throttle.admit("host 10.0.0.2"));
}

TEST_CASE("a flood of distinct keys neither grows the throttle without end nor silences a key for good") {
    throttled f;
    // Keys made of client input (an address per request, say): far more than the throttle keeps.
    int logged = 0;
    for (int i = 0; i < 100'000; ++i)
        if (f.throttle.admit("client " + std::to_string(i))) ++logged;
    CHECK(logged <= static_cast<int>(log_throttle::max_keys) + 1);
    CHECK(f.throttle.size() <= log_throttle::max_keys + 1);
    f.t += 10s;
    auto again = f.throttle.admit("client 0");
    REQUIRE(again);
}

TEST_CASE("a throttle with a sub-second interval names it in milliseconds") {
    log_throttle::clock::time_point t{};
    log_throttle throttle{250ms, [&] { return t; }};
    throttle.admit("k");
    throttle.admit("k");
    t += 300ms;
    auto line = throttle.admit("k");
    REQUIRE(line);
    CHECK_THAT(*line, Catch::Contains("at most once every 250 ms"));
}
