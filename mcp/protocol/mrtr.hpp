#pragma once
// Multi round-trip requests (2026-07-28, SEP-2322) apart from any transport: which requests may end
// in an InputRequiredResult, how input requests are named, how a client's inputResponses are
// checked, and the integrity-protected requestState that ties a retry to the request it continues.
// The endpoints (Streamable HTTP and stdio, through mcp/server/mrtr_rounds.*) keep the request running
// between rounds; this file holds the rules they apply.

#include "core/error.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::mcp::mrtr {

// tools/call, prompts/get and resources/read: the requests the spec lets a server answer with an
// InputRequiredResult. Any other request never does.
bool allows_input_required(std::string_view method) noexcept;

// Where a server→client request may name its input request: params._meta["dev.airlock/inputKey"].
// A legacy upstream behind airlock cannot otherwise choose the key its question is filed under,
// and a client that answers questions ahead of time (inputResponses on a first attempt) needs
// stable keys.
inline constexpr std::string_view key_hint_meta = "dev.airlock/inputKey";

// 1..64 characters of [A-Za-z0-9_.-].
bool valid_key(std::string_view key) noexcept;
// Removes the key hint from `params` (and _meta when it is left empty); returns it when valid.
std::optional<std::string> take_key_hint(boost::json::object& params);

// inputResponses of a request's params: absent → nullopt; present and not an object whose values
// are all objects → an error naming the field.
core::result<std::optional<boost::json::object>> input_responses_of(boost::json::object const& params);

// Checks a client's answer to a question of `method` (elicitation/create, sampling/createMessage,
// roots/list); the message names the field, under `where` ("inputResponses.user_name").
std::optional<std::string> check_input_response(std::string_view method, boost::json::value const& answer,
                                                std::string_view where);

// SHA-256 (hex) of the canonical {method, params} without _meta, inputResponses and requestState:
// a requestState is honoured only on a retry of the request it was issued for.
std::string request_digest(std::string_view method, boost::json::object const& params);

// What a requestState carries: the pending request it continues, the round it answers and when it
// lapses (seconds since the epoch). The principal and the request digest are bound by the MAC
// without being written into the state.
struct request_state {
    std::string pending;  // hex id of the pending request
    std::uint64_t round = 0;
    std::int64_t expires = 0;
    friend bool operator==(request_state const&, request_state const&) = default;
};

// Seals and opens requestState values with HMAC-SHA256 under a key that never leaves the process.
class state_sealer {
public:
    explicit state_sealer(std::array<std::uint8_t, 32> key) : key_(key) {}
    std::string seal(request_state const& s, std::string_view principal, std::string_view digest) const;
    // Errors (code "invalid_request_state"): malformed, MAC mismatch (altered, or presented by another
    // caller or on another request), lapsed at `now`.
    core::result<request_state> open(std::string_view text, std::string_view principal, std::string_view digest,
                                     std::int64_t now) const;

private:
    std::string mac(std::string_view body, std::string_view principal, std::string_view digest) const;
    std::array<std::uint8_t, 32> key_;
};

// {"resultType": "input_required", "inputRequests": ..., "requestState": ...}
boost::json::object input_required_result(boost::json::object input_requests, std::string request_state);

}  // namespace airlock::mcp::mrtr
