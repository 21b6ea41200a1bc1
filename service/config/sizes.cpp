#include "service/config/sizes.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <utility>

namespace airlock::service {

std::optional<std::size_t> parse_size(std::string_view text) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0 || digits > 19) return std::nullopt;
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + digits, n);
    if (ec != std::errc{}) return std::nullopt;
    auto unit = text.substr(digits);
    if (unit.starts_with(' ')) unit.remove_prefix(1);
    static constexpr std::pair<std::string_view, std::uint64_t> units[] = {
        {"", 1},
        {"B", 1},
        {"KiB", std::uint64_t{1} << 10},
        {"MiB", std::uint64_t{1} << 20},
        {"GiB", std::uint64_t{1} << 30},
        {"TiB", std::uint64_t{1} << 40},
        {"KB", 1000},
        {"MB", 1000'000},
        {"GB", 1000'000'000},
        {"TB", 1000'000'000'000},
    };
    for (auto const& [name, scale] : units) {
        if (unit != name) continue;
        if (n > std::numeric_limits<std::size_t>::max() / scale) return std::nullopt;
        return static_cast<std::size_t>(n * scale);
    }
    return std::nullopt;
}

}  // namespace airlock::service
