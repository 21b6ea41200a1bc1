#pragma once
// The domain failures that reach a client: each answers a REST request with an HTTP status
// (service/rest/problem.cpp) and a JSON-RPC request with an error code (to_jsonrpc_code, here), so
// both maps are written once, as exhaustive switches a new code cannot slip past. The spelling a
// client reads (a problem's `title`, the end of its `type`) is to_string's, and it never changes:
// clients match on it.

#include <boost/system/error_category.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>
#include <type_traits>

namespace airlock::core {

// Values start at 1: an error_code of 0 means success.
enum class errc {
    // the request itself
    bad_request = 1,          // the target, the query or the body cannot be read
    invalid_field,            // a field or parameter is wrong; the problem's errors name it
    invalid_input,            // the run's input is not what the agent takes
    unsupported_media_type,   // a body that is not application/json
    too_deep,                 // a body nested deeper than airlock parses
    not_found,                // no route for the path
    method_not_allowed,       // a route for the path, not for the method
    // the door
    forbidden_host,           // a Host header not served here (DNS rebinding protection)
    forbidden_origin,         // an Origin not allowed
    unauthorized,             // no credentials, or credentials nobody issued
    forbidden,                // an authenticated principal asking for what it may not do
    // what the request names
    unknown_run,
    unknown_agent,
    unknown_capability,
    unknown_provider,
    // the state of a run
    not_running,              // it cannot be cancelled or driven now
    sealed,                   // it has ended
    not_pending,              // no such approval waits for a decision
    divergence,               // a strict replay differs from the journal
    conflict,                 // an idempotency key used for another run
    not_an_agent_run,         // a gateway session's run (or airlock's own) where an agent's run is needed: replay
    // the runtime
    at_capacity,              // every run slot is busy: retry after a while
    unavailable,              // stopping, or no agent runtime configured
    closed,                   // the journal is closed
    // airlock's own faults
    invalid_run,              // a run id that is not one airlock mints
    invalid_runner,           // the runner was built without what it needs
    malformed_record,         // a journal record airlock cannot read
    not_admitted,             // a journal whose first record is not the run's admission
    internal,                 // a bug: the router found no handler for a matched route
};

// Every code, in declaration order: for lookups by spelling and for tests that cover them all.
inline constexpr errc all_errcs[] = {
    errc::bad_request,     errc::invalid_field,     errc::invalid_input,   errc::unsupported_media_type,
    errc::too_deep,        errc::not_found,         errc::method_not_allowed, errc::forbidden_host,
    errc::forbidden_origin, errc::unauthorized,     errc::forbidden,       errc::unknown_run,
    errc::unknown_agent,   errc::unknown_capability, errc::unknown_provider, errc::not_running,
    errc::sealed,          errc::not_pending,       errc::divergence,      errc::conflict,        errc::not_an_agent_run,
    errc::at_capacity,     errc::unavailable,       errc::closed,          errc::invalid_run,
    errc::invalid_runner,  errc::malformed_record,  errc::not_admitted,    errc::internal,
};
static_assert(std::size(all_errcs) == static_cast<std::size_t>(errc::internal),
              "all_errcs lists every errc, and errc::internal stays the last one");

// The stable wire spelling: "unknown_run", "at_capacity", ...
std::string_view to_string(errc e) noexcept;
// The code a wire spelling names; nullopt for any other string (a store's own codes, for one).
std::optional<errc> errc_from_string(std::string_view code) noexcept;
// The JSON-RPC error code a JSON-RPC answer carries for it (-32600 invalid request, -32602 invalid
// params, -32601 method not found, -32603 internal error).
std::int64_t to_jsonrpc_code(errc e) noexcept;

// The boost::system category of airlock's domain failures ("airlock"); message() is to_string.
boost::system::error_category const& errc_category() noexcept;
boost::system::error_code make_error_code(errc e) noexcept;

}  // namespace airlock::core

template <>
struct boost::system::is_error_code_enum<airlock::core::errc> : std::true_type {};
