// The pieces of the provider HTTP client that need no server: Retry-After and secret scrubbing.

#include "service/agents/providers/http_client.hpp"

#include <catch2/catch.hpp>

using namespace airlock::service::providers;
using namespace std::chrono_literals;

namespace {

// Sun, 06 Nov 1994 08:49:37 GMT, the RFC 9110 example.
std::chrono::system_clock::time_point rfc_example() { return std::chrono::system_clock::from_time_t(784111777); }

}  // namespace

TEST_CASE("Retry-After in delay-seconds is read as seconds") {
    CHECK(parse_retry_after("120", rfc_example()) == 120s);
    CHECK(parse_retry_after(" 0 ", rfc_example()) == 0s);
}

TEST_CASE("Retry-After as an HTTP date is the time from now until then, in every form RFC 9110 allows") {
    auto now = rfc_example() - 30s;
    CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now) == 30s);
    CHECK(parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now) == 30s);
    CHECK(parse_retry_after("Sun Nov  6 08:49:37 1994", now) == 30s);
}

TEST_CASE("a Retry-After date in the past means retry now") {
    CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", rfc_example() + 1h) == 0s);
}

TEST_CASE("a Retry-After that is neither seconds nor a date is ignored") {
    CHECK(!parse_retry_after("soon", rfc_example()));
    CHECK(!parse_retry_after("-5", rfc_example()));
    CHECK(!parse_retry_after("", rfc_example()));
}

TEST_CASE("an absurdly long Retry-After is clamped instead of overflowing") {
    auto r = parse_retry_after("99999999999999999999999", rfc_example());
    REQUIRE(r);
    CHECK(*r > std::chrono::hours(24 * 365));
}

TEST_CASE("scrub replaces every occurrence of every secret") {
    CHECK(scrub("key sk-1234 and again sk-1234.", {"sk-1234"}) == "key [redacted] and again [redacted].");
    CHECK(scrub("nothing here", {"sk-1234", ""}) == "nothing here");
}
