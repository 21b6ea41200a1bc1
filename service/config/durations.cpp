#include "service/config/durations.hpp"

#include <charconv>
#include <cstdint>
#include <initializer_list>

namespace airlock::service {

using std::chrono::milliseconds;

namespace {

struct unit_scale {
    std::string_view unit;
    std::uint64_t scale;
};

// A whole number of at most `max_digits` digits and one of `units` right after it, as a count of
// the smallest unit; nullopt for anything else, or when the count would pass `max`.
std::optional<std::uint64_t> scaled_count(std::string_view text, std::size_t max_digits,
                                          std::initializer_list<unit_scale> units, std::uint64_t max) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0 || digits > max_digits) return std::nullopt;
    std::uint64_t n = 0;
    std::from_chars(text.data(), text.data() + digits, n);
    auto const unit = text.substr(digits);
    for (auto const& u : units)
        if (u.unit == unit) return n > max / u.scale ? std::nullopt : std::optional<std::uint64_t>(n * u.scale);
    return std::nullopt;
}

}  // namespace

// Whole numbers with a unit only: a bare "30" could be seconds or milliseconds, and a timeout off by
// a factor of 1000 is the kind of mistake that only shows in production.
std::optional<milliseconds> parse_duration(std::string_view text) {
    // 12 digits of hours still fits in 64 bits of milliseconds, but nobody means a timeout of
    // centuries; a cap keeps later arithmetic on deadlines from overflowing.
    constexpr std::uint64_t max_ms = std::uint64_t{10} * 365 * 24 * 3'600'000;
    auto const n = scaled_count(text, 12, {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}}, max_ms);
    if (!n) return std::nullopt;
    return milliseconds(static_cast<milliseconds::rep>(*n));
}

std::optional<std::chrono::microseconds> parse_short_duration(std::string_view text, std::chrono::microseconds max) {
    auto const n = scaled_count(text, 6, {{"us", 1}, {"ms", 1000}}, static_cast<std::uint64_t>(max.count()));
    if (!n) return std::nullopt;
    return std::chrono::microseconds(static_cast<std::chrono::microseconds::rep>(*n));
}

std::string format_duration(milliseconds d) {
    auto n = d.count();
    if (n != 0 && n % 3'600'000 == 0) return std::to_string(n / 3'600'000) + "h";
    if (n != 0 && n % 60'000 == 0) return std::to_string(n / 60'000) + "m";
    if (n % 1000 == 0) return std::to_string(n / 1000) + "s";
    return std::to_string(n) + "ms";
}

}  // namespace airlock::service
