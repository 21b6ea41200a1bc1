#pragma once
// The MCP versions airlock speaks and the era each belongs to.
//
//   legacy  2025-03-26, 2025-06-18, 2025-11-25: initialize handshake, Mcp-Session-Id, MCP-Protocol-Version.
//   modern  2026-07-28: stateless; every request carries _meta (protocolVersion, clientCapabilities)
//           and, on HTTP, MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-* headers.

#include <optional>
#include <span>
#include <string_view>

namespace airlock::mcp {

enum class era { legacy, modern };
std::string_view to_string(era e) noexcept;

namespace version {
inline constexpr std::string_view modern = "2026-07-28";
inline constexpr std::string_view legacy_latest = "2025-11-25";
inline constexpr std::string_view legacy_2025_06_18 = "2025-06-18";
inline constexpr std::string_view legacy_2025_03_26 = "2025-03-26";  // also what a header-less legacy POST means
}  // namespace version

// Every version airlock speaks, most preferred first.
std::span<std::string_view const> supported_versions() noexcept;
// The era of a version airlock speaks; nullopt for any other string.
std::optional<era> era_of(std::string_view version) noexcept;

}  // namespace airlock::mcp
