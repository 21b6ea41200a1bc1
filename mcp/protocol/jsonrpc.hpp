#pragma once
// JSON-RPC 2.0 as MCP uses it: one message per frame, string or integer ids (never null), no batches.
// Parsing returns either a typed message or the error response to send back; nothing here does I/O.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace airlock::mcp {

// A request id: an integer that fits int64, or a string. JSON `null` is never an id in MCP.
using request_id = std::variant<std::int64_t, std::string>;

// Error codes: JSON-RPC 2.0's standard set and the ones MCP 2026-07-28 reserves (-32020..-32099).
namespace rpc_code {
inline constexpr std::int64_t parse_error = -32700;       // ParseError: the bytes are not JSON
inline constexpr std::int64_t invalid_request = -32600;   // InvalidRequest: JSON, but not a JSON-RPC message
inline constexpr std::int64_t method_not_found = -32601;  // MethodNotFound
inline constexpr std::int64_t invalid_params = -32602;    // InvalidParams (also: missing required _meta)
inline constexpr std::int64_t internal_error = -32603;    // InternalError
inline constexpr std::int64_t header_mismatch = -32020;   // HeaderMismatch: HTTP headers disagree with the body
inline constexpr std::int64_t missing_required_client_capability = -32021;  // MissingRequiredClientCapability
inline constexpr std::int64_t unsupported_protocol_version = -32022;        // UnsupportedProtocolVersion
}  // namespace rpc_code

// The spec's name for a code ("ParseError", "HeaderMismatch", ...), or "" for any other code.
std::string_view rpc_code_name(std::int64_t code) noexcept;

struct request {
    request_id id;
    std::string method;
    std::optional<boost::json::object> params;
    friend bool operator==(request const&, request const&) = default;
};

struct notification {
    std::string method;
    std::optional<boost::json::object> params;
    friend bool operator==(notification const&, notification const&) = default;
};

struct response {
    request_id id;
    boost::json::object result;
    friend bool operator==(response const&, response const&) = default;
};

struct error_object {
    std::int64_t code = 0;
    std::string message;
    std::optional<boost::json::value> data;
    friend bool operator==(error_object const&, error_object const&) = default;
};

struct error_response {
    std::optional<request_id> id;  // absent when the id of the offending message could not be read
    error_object error;
    friend bool operator==(error_response const&, error_response const&) = default;
};

using message = std::variant<request, notification, response, error_response>;

// An incoming message that was refused, and the error response that answers it. A distinct type
// (not error_response itself) because `message` can hold an error_response that is perfectly valid.
struct rejected_message {
    error_response reply;
    friend bool operator==(rejected_message const&, rejected_message const&) = default;
};

using parse_result = boost::system::result<message, rejected_message>;

// Thrown by parse_result::value() on an error: reading a value that is not there is a bug.
[[noreturn]] void throw_exception_from_error(rejected_message const& e, boost::source_location const&);

// Parses one message from text (strict I-JSON: duplicate member names are refused, so a router and
// a server can never read different values for the same key). Arrays are refused with -32600:
// batching was removed from MCP in 2025-06-18 and no era airlock speaks uses it.
parse_result parse_message(std::string_view text);
// Same, for an already-parsed value (a different name: a string literal converts to json::value).
parse_result read_message(boost::json::value const& v);

error_response make_error_response(std::optional<request_id> id, std::int64_t code, std::string message,
                                   std::optional<boost::json::value> data = std::nullopt);

boost::json::value to_json(request_id const& id);
boost::json::value to_json(message const& m);
std::string serialize(message const& m);  // compact JSON text, no trailing newline
std::string serialize(request const& r);  // the same, without copying the request into a message

// For logs and error texts: 7 or "abc" (with quotes).
std::string to_string(request_id const& id);

// The id a reply to `m` must carry: a request's or response's id, an error's id if known.
std::optional<request_id> id_of(message const& m);

// A request id or progress token read from JSON: integer (fits int64) or string; anything else fails.
std::optional<request_id> read_request_id(boost::json::value const& v);

// A message too long to be read whole, as far as its first bytes tell: whether it is a request or
// notification (a top-level "method"), and its top-level id when those bytes hold it whole.
struct message_head {
    bool has_method = false;
    std::optional<request_id> id;
};
message_head read_message_head(std::string_view first_bytes);

// The top-level id of a message from its last bytes, when the id is among the members those bytes
// hold whole (`...,"jsonrpc":"2.0","id":7}`, the order the TypeScript SDK writes its replies in, or
// `...},"id":7,"jsonrpc":"2.0"}`).
std::optional<request_id> read_trailing_id(std::string_view last_bytes);

void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, request const& r);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, notification const& n);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, response const& r);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, error_response const& e);

}  // namespace airlock::mcp
