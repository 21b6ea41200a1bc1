#pragma once
// MCP's two eras and every rule that differs between them, as pure functions: which versions airlock
// speaks, initialize negotiation (legacy), the Streamable HTTP header rules a client follows and a
// server checks, and the small state machine a client uses to find out which era a server speaks.
//
//   legacy  2025-03-26, 2025-06-18, 2025-11-25: initialize handshake, Mcp-Session-Id, MCP-Protocol-Version.
//   modern  2026-07-28: stateless; every request carries _meta (protocolVersion, clientCapabilities)
//           and, on HTTP, MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-* headers.

#include "core/error.hpp"
#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/messages.hpp"

#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// Legacy initialize, server side: the client's version when it is a legacy version airlock speaks,
// otherwise the latest legacy version (the spec's "respond with another version it supports").
std::string_view negotiate_initialize_version(std::string_view requested) noexcept;
// Legacy initialize, client side: accepts the server's answer only if it is a legacy version airlock
// speaks ("unsupported_version" otherwise: the client should disconnect).
core::result<std::string> accept_initialize_version(std::string_view answered);

// The modern UnsupportedProtocolVersion (-32022) error, listing every version airlock supports.
error_response unsupported_version_error(std::optional<request_id> id, std::string_view requested);

// ---------------------------------------------------------------- HTTP headers

namespace header {
inline constexpr std::string_view accept = "Accept";
inline constexpr std::string_view content_type = "Content-Type";
inline constexpr std::string_view protocol_version = "MCP-Protocol-Version";
inline constexpr std::string_view session_id = "Mcp-Session-Id";  // legacy only
inline constexpr std::string_view method = "Mcp-Method";          // modern only
inline constexpr std::string_view name = "Mcp-Name";              // modern only
inline constexpr std::string_view param_prefix = "Mcp-Param-";    // modern only, from x-mcp-header
inline constexpr std::string_view last_event_id = "Last-Event-ID";  // legacy resumption only
inline constexpr std::string_view accept_both = "application/json, text/event-stream";
}  // namespace header

struct http_header {
    std::string name;
    std::string value;
    friend bool operator==(http_header const&, http_header const&) = default;
};

// An ordered list of header fields; lookups compare names ASCII case-insensitively (RFC 9110),
// values exactly as received.
class http_headers {
public:
    http_headers() = default;
    http_headers(std::initializer_list<std::pair<std::string_view, std::string_view>> fields);

    void add(std::string_view name, std::string_view value);
    std::optional<std::string_view> get(std::string_view name) const;  // the first field of that name
    std::size_t count(std::string_view name) const;

    std::vector<http_header> const& fields() const noexcept { return fields_; }
    auto begin() const noexcept { return fields_.begin(); }
    auto end() const noexcept { return fields_.end(); }

private:
    std::vector<http_header> fields_;
};

// Value encoding for Mcp-Name and Mcp-Param-*: plain when the value is header-safe printable ASCII
// with no leading or trailing blank, otherwise `=?base64?{base64 of the UTF-8}?=`; a plain value
// that looks like the sentinel is encoded too.
std::string encode_header_value(std::string_view value);
// The inverse, for a value as received. Fails "invalid_header_value" on characters RFC 9110 does
// not allow in a field value, or on a sentinel whose content is not base64.
core::result<std::string> decode_header_value(std::string_view value);

// One parameter a tool mirrors into a header via `x-mcp-header` in its inputSchema.
struct param_header {
    std::string name;               // the {name} in Mcp-Param-{name}, as the schema spells it
    std::vector<std::string> path;  // property names from the schema root to the parameter
    std::string type;               // "string", "integer" or "boolean"
    friend bool operator==(param_header const&, param_header const&) = default;
};

// The tool's x-mcp-header annotations, checked against every constraint of the spec (non-empty
// token, case-insensitively unique, primitive type, reachable only through `properties`). Fails
// "invalid_x_mcp_header" naming the tool and the reason; an HTTP client must then drop the tool.
core::result<std::vector<param_header>> param_headers_of(tool const& t);

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

// What a response's Content-Type announces (media type compared case-insensitively, parameters ignored).
enum class body_kind { json, event_stream, other };
body_kind classify_content_type(std::string_view content_type) noexcept;

// An error a modern server sends and a legacy one would not: -32020, -32021, -32022, and -32601
// with HTTP 404 (legacy servers use other codes, or -32601 without that status).
bool is_modern_error(std::int64_t code, std::optional<unsigned> http_status = std::nullopt) noexcept;

// ---------------------------------------------------------------- era detection (client)

enum class transport_kind { stdio, http };

// A reply to the request the detector asked to send.
struct probe_reply {
    std::optional<unsigned> http_status;  // HTTP only
    std::optional<message> body;          // nullopt: an empty or unreadable body
};

// Finds out which era a server speaks (2026-07-28 versioning, "Backward Compatibility"): probe with
// server/discover carrying our preferred modern version; a DiscoverResult or a recognised modern
// error means modern (pick a mutual version from what it lists); any other error, or on stdio no
// answer in time, means legacy: initialize, then notifications/initialized. The caller performs the
// sends and reports replies; the detector never does I/O. Its request ids are the strings
// "airlock-era-probe" and "airlock-initialize".
class era_detector {
public:
    struct options {
        transport_kind transport = transport_kind::stdio;
        implementation client_info;
        boost::json::object client_capabilities;
        // Versions the client is willing to speak, most preferred first; each must be one airlock speaks.
        std::vector<std::string> versions = {std::string(version::modern), std::string(version::legacy_latest),
                                             std::string(version::legacy_2025_06_18),
                                             std::string(version::legacy_2025_03_26)};
    };

    enum class step_kind {
        send,    // send `request`, then report its reply (on_reply) or its absence (on_timeout)
        wait,    // the input was not the awaited reply (another id, a notification): keep waiting
        done,    // decided: `decided_era` and `version`; for legacy, send `notification` first
        failed,  // no way to talk to this server: `reason` says why
    };

    struct step {
        step_kind kind = step_kind::wait;
        std::optional<mcp::request> request;
        std::optional<mcp::notification> notification;
        era decided_era = era::modern;
        std::string version;
        std::optional<discover_result> discovered;    // modern, when the probe returned one
        std::optional<initialize_result> initialized;  // legacy
        std::string reason;                            // how it was decided, or why it failed
    };

    explicit era_detector(options o);

    step start();                              // the server/discover probe
    step on_reply(probe_reply const& reply);   // a reply to the last request sent
    step on_timeout();                         // no reply within the caller's deadline

private:
    enum class state { idle, probing, initializing, finished };
    step send_initialize(std::string legacy_version, std::string why);
    step decide_modern(std::string version, std::string why, std::optional<discover_result> d = std::nullopt);
    step choose_from(std::vector<std::string> const& offered, std::string const& context,
                     std::optional<discover_result> d);
    step fail(std::string why);

    options opts_;
    state state_ = state::idle;
    std::string fallback_reason_;
};

}  // namespace airlock::mcp
