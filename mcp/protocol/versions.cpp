#include "mcp/protocol/versions.hpp"

#include <array>

namespace airlock::mcp {

namespace {

constexpr std::array<std::string_view, 4> all_versions = {version::modern, version::legacy_latest,
                                                          version::legacy_2025_06_18, version::legacy_2025_03_26};

}  // namespace

std::string_view to_string(era e) noexcept { return e == era::modern ? "modern" : "legacy"; }

std::span<std::string_view const> supported_versions() noexcept { return all_versions; }

std::optional<era> era_of(std::string_view v) noexcept {
    if (v == version::modern) return era::modern;
    if (v == version::legacy_latest || v == version::legacy_2025_06_18 || v == version::legacy_2025_03_26) return era::legacy;
    return std::nullopt;
}

}  // namespace airlock::mcp
