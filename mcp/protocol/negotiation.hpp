#pragma once
// Version negotiation: legacy initialize on either side, and the modern refusal of a version.

#include "core/error.hpp"
#include "mcp/protocol/jsonrpc.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace airlock::mcp {

// Legacy initialize, server side: the client's version when it is a legacy version airlock speaks,
// otherwise the latest legacy version (the spec's "respond with another version it supports").
std::string_view negotiate_initialize_version(std::string_view requested) noexcept;
// Legacy initialize, client side: accepts the server's answer only if it is a legacy version airlock
// speaks ("unsupported_version" otherwise: the client should disconnect).
core::result<std::string> accept_initialize_version(std::string_view answered);

// The modern UnsupportedProtocolVersion (-32022) error, listing every version airlock supports.
error_response unsupported_version_error(std::optional<request_id> id, std::string_view requested);

}  // namespace airlock::mcp
