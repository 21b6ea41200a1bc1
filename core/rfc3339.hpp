#pragma once
// Timestamps as journal records and the REST API write them: RFC 3339 UTC, whole seconds.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::core {

// "2026-11-30T10:59:50Z". Takes whole seconds: a parsed time may lie beyond the years a nanosecond
// system_clock::time_point holds (1677-2262), and converting it there would overflow.
std::string rfc3339(std::chrono::sys_seconds t);
std::string rfc3339(std::chrono::system_clock::time_point t);  // its floor to the second

// An RFC 3339 date-time, YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), as the instant it names; nullopt
// for anything else, trailing bytes included. A fraction is dropped (the floor).
std::optional<std::chrono::sys_seconds> parse_rfc3339(std::string_view s);

// A `since` bound for listing runs: any RFC 3339 time, in the one spelling admitted_at is compared in
// (see core::run_filter); nullopt when `s` is not an RFC 3339 time.
std::optional<std::string> since_bound(std::string_view s);

}  // namespace airlock::core
