#pragma once
// MCP's Streamable HTTP header fields: their names, an ordered field list, the encoding of the
// values mirrored from a body (Mcp-Name, Mcp-Param-*), the x-mcp-header annotations a tool declares,
// and what a response's Content-Type announces.

#include "core/error.hpp"
#include "mcp/protocol/messages.hpp"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::mcp {

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

// What a response's Content-Type announces (media type compared case-insensitively, parameters ignored).
enum class body_kind { json, event_stream, other };
body_kind classify_content_type(std::string_view content_type) noexcept;

}  // namespace airlock::mcp
