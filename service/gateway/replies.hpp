#pragma once
// The errors the gateway answers requests with, in one place: the texts are part of the wire.

#include "core/error.hpp"
#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/server/backend.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace airlock::service {

mcp::error_object invalid_params(std::string message);

// What a request is told when the run it would journal to could not be had: airlock is stopping
// (in the words of the endpoints' message for a request cut off by the stop), or the journal
// failed. Logs which, naming the request (`refused`).
mcp::error_object no_run(core::error const& e, std::string_view refused);

// The spec's code for a resource that does not exist (or that this caller may not see).
inline constexpr std::int64_t resource_not_found = -32002;
mcp::error_object no_such_resource(std::string const& uri);

bool is_method_not_found(mcp::handler_result const& r);

}  // namespace airlock::service
