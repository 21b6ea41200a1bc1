#pragma once
// Durations as the configuration file and airlock's messages write them: a whole number and a unit.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::service {

// "250ms", "30s", "5m", "1h" or "30d"; nullopt for anything else, a bare number included.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);
// "300us" or "2ms", up to `max`; nullopt for anything else, a bare number included.
std::optional<std::chrono::microseconds> parse_short_duration(std::string_view text, std::chrono::microseconds max);
// The largest unit that writes `d` exactly: 1800000ms → "30m", 1500ms → "1500ms"; parse_duration reads it back.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace airlock::service
