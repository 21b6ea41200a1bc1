#pragma once
// Sizes as the configuration file writes them: a whole number and an optional unit.

#include <cstddef>
#include <optional>
#include <string_view>

namespace airlock::service {

// Parses a size ("512", "64KiB", "4MiB", "1GiB", "10MB"); durations are parse_duration's (durations.hpp).
std::optional<std::size_t> parse_size(std::string_view text);

}  // namespace airlock::service
