#pragma once
// The rules of a Streamable HTTP POST in each era: the headers a client sends, the checks a server
// makes before it reads the body as a request, and the HTTP status of a JSON-RPC error.

#include "core/error.hpp"
#include "mcp/protocol/http_headers.hpp"
#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/messages.hpp"
#include "mcp/protocol/versions.hpp"

#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::mcp {

// -------- client side

// Legacy session state a client keeps per server (Streamable HTTP, 2025-03-26 .. 2025-11-25).
struct legacy_session {
    std::string protocol_version;           // empty until initialize has been answered
    std::optional<std::string> session_id;  // as assigned by the server, if it assigned one
};

// Headers of a legacy POST: Accept and Content-Type always; MCP-Protocol-Version and Mcp-Session-Id
// once initialize has been answered (the spec sends them on "all subsequent requests").
http_headers legacy_post_headers(legacy_session const& s);
// Headers of the DELETE that ends a legacy session.
http_headers legacy_delete_headers(legacy_session const& s);
// Mcp-Session-Id from the response to initialize; the spec allows only visible ASCII (0x21-0x7E).
core::result<std::optional<std::string>> session_id_from_response(http_headers const& response);

// Headers of a modern POST, all derived from the request body: MCP-Protocol-Version (from
// params._meta), Mcp-Method, Mcp-Name (tools/call, resources/read, prompts/get) and, for tools/call
// when `called` is given, one Mcp-Param-* per x-mcp-header argument present and not null.
// Fails "invalid_request" when the body lacks what a header mirrors or an argument cannot be mirrored.
core::result<http_headers> modern_post_headers(request const& r, tool const* called = nullptr);

// -------- server side

// What to answer a POST that fails the checks: `body` sent as JSON with HTTP `status`.
struct http_rejection {
    unsigned status = 400;
    error_response body;
    friend bool operator==(http_rejection const&, http_rejection const&) = default;
};
[[noreturn]] void throw_exception_from_error(http_rejection const& e, boost::source_location const&);

template <class T>
using http_checked = boost::system::result<T, http_rejection>;

// Which era a POST to a dual-era endpoint belongs to: initialize, or a legacy MCP-Protocol-Version,
// or neither the header nor modern _meta → legacy; a modern or unknown MCP-Protocol-Version, or
// modern _meta → modern (an unknown version then gets UnsupportedProtocolVersion, which lists ours).
era classify_post(http_headers const& h, message const& body);

// Checks a modern POST's headers against its body (2026-07-28 "Server Validation"), in this order:
// responses are refused (400, -32600); MCP-Protocol-Version present (400, -32020); the body's
// required _meta (400, -32602); header equals _meta version (400, -32020); version supported (400,
// -32022); Mcp-Method present and equal (400, -32020); Mcp-Name present, decodable and equal for
// tools/call, resources/read, prompts/get (400, -32020); and, when `called` is the tool named in
// the body, every Mcp-Param-* its schema declares (400, -32020). A header given twice is a
// mismatch. Notifications are only checked for headers they do carry (the spec defines none).
http_checked<void> validate_modern_post(http_headers const& h, message const& body, tool const* called = nullptr);
// The Mcp-Param-* part of that: every header `called` declares with x-mcp-header against `arguments`
// of a tools/call (400, -32020 on a header missing, extra, repeated, undecodable or different).
http_checked<void> validate_param_headers(http_headers const& h, std::optional<request_id> id,
                                          boost::json::object const& arguments, tool const& called);

// Checks a legacy POST. `find_session` maps a session id to the version negotiated for it, or
// nullopt when unknown (→ 404, so the client re-initializes). Returns the protocol version in effect:
// for initialize the negotiated one, otherwise the header's, else the session's, else 2025-03-26.
http_checked<std::string> validate_legacy_post(
    http_headers const& h, message const& body, bool sessions_required,
    std::function<std::optional<std::string>(std::string_view)> const& find_session);

// The HTTP status for a JSON-RPC error a server sends in the given era: modern -32700, -32600,
// -32020, -32021, -32022 → 400 and -32601 → 404; legacy -32700, -32600 → 400; any other code → 200
// (the exchange worked; the error is in the body).
unsigned http_status_for(era e, std::int64_t code) noexcept;

// An error a modern server sends and a legacy one would not: -32020, -32021, -32022, and -32601
// with HTTP 404 (legacy servers use other codes, or -32601 without that status).
bool is_modern_error(std::int64_t code, std::optional<unsigned> http_status = std::nullopt) noexcept;

}  // namespace airlock::mcp
