#include "service/durations.hpp"

#include <charconv>
#include <cstdint>

namespace airlock::service {

using std::chrono::milliseconds;

// Whole numbers with a unit only: a bare "30" could be seconds or milliseconds, and a timeout off by
// a factor of 1000 is the kind of mistake that only shows in production.
std::optional<milliseconds> parse_duration(std::string_view text) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0 || digits > 12) return std::nullopt;
    std::uint64_t n = 0;
    std::from_chars(text.data(), text.data() + digits, n);
    auto unit = text.substr(digits);
    std::uint64_t scale = 0;
    if (unit == "ms") scale = 1;
    else if (unit == "s") scale = 1000;
    else if (unit == "m") scale = 60'000;
    else if (unit == "h") scale = 3'600'000;
    else return std::nullopt;
    // 12 digits of hours still fits in 64 bits of milliseconds, but nobody means a timeout of
    // centuries; a cap keeps later arithmetic on deadlines from overflowing.
    constexpr std::uint64_t max_ms = std::uint64_t{10} * 365 * 24 * 3'600'000;
    if (n > max_ms / scale) return std::nullopt;
    return milliseconds(static_cast<milliseconds::rep>(n * scale));
}

std::string format_duration(milliseconds d) {
    auto n = d.count();
    if (n != 0 && n % 3'600'000 == 0) return std::to_string(n / 3'600'000) + "h";
    if (n != 0 && n % 60'000 == 0) return std::to_string(n / 60'000) + "m";
    if (n % 1000 == 0) return std::to_string(n / 1000) + "s";
    return std::to_string(n) + "ms";
}

}  // namespace airlock::service
