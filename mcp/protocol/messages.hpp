#pragma once
// MCP message bodies airlock reads and writes, both eras (2025-11-25 and 2026-07-28). Readers ignore
// unknown keys and keep `_meta`; a missing or mistyped field fails with a message naming its path.

#include "core/error.hpp"
#include "mcp/protocol/jsonrpc.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::mcp {

using progress_token = request_id;  // same wire shape: string or integer

namespace method {
inline constexpr std::string_view initialize = "initialize";                  // legacy only
inline constexpr std::string_view initialized = "notifications/initialized";  // legacy only
inline constexpr std::string_view ping = "ping";                              // legacy only
inline constexpr std::string_view server_discover = "server/discover";        // modern only
inline constexpr std::string_view tools_list = "tools/list";
inline constexpr std::string_view tools_call = "tools/call";
inline constexpr std::string_view resources_read = "resources/read";
inline constexpr std::string_view prompts_get = "prompts/get";
inline constexpr std::string_view progress = "notifications/progress";
inline constexpr std::string_view cancelled = "notifications/cancelled";
}  // namespace method

// Reserved `_meta` keys (2026-07-28 basic/index "_meta").
namespace meta_key {
inline constexpr std::string_view progress_token = "progressToken";
inline constexpr std::string_view protocol_version = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view client_info = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view client_capabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view log_level = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view server_info = "io.modelcontextprotocol/serverInfo";
inline constexpr std::string_view subscription_id = "io.modelcontextprotocol/subscriptionId";
}  // namespace meta_key

// Error codes of the readers below: "invalid_params" for what a client sent (answer -32602),
// "malformed_result" for what a server sent, "input_required" for an MRTR result airlock cannot serve.

struct implementation {
    std::string name;
    std::string version;
    std::optional<std::string> title;
    std::optional<std::string> description;
    friend bool operator==(implementation const&, implementation const&) = default;
};

// Legacy handshake (initialize). Capabilities stay JSON: both sides' sets are open-ended.
struct initialize_params {
    std::string protocol_version;
    boost::json::object capabilities;
    implementation client_info;
    std::optional<boost::json::object> meta;
};

struct initialize_result {
    std::string protocol_version;
    boost::json::object capabilities;
    implementation server_info;
    std::optional<std::string> instructions;
    std::optional<boost::json::object> meta;
};

// The modern per-request `_meta` fields (2026-07-28): required on every request.
struct request_meta {
    std::string protocol_version;
    boost::json::object client_capabilities;
    std::optional<implementation> client_info;
    std::optional<std::string> log_level;
    std::optional<progress_token> progress;
};

struct tool_annotations {
    std::optional<std::string> title;
    std::optional<bool> read_only_hint;
    std::optional<bool> destructive_hint;
    std::optional<bool> idempotent_hint;
    std::optional<bool> open_world_hint;
    friend bool operator==(tool_annotations const&, tool_annotations const&) = default;
};

struct tool {
    std::string name;
    std::optional<std::string> title;
    std::optional<std::string> description;
    boost::json::object input_schema;
    std::optional<boost::json::object> output_schema;
    std::optional<tool_annotations> annotations;
    std::optional<boost::json::array> icons;
    std::optional<boost::json::object> execution;  // taskSupport: "forbidden" | "optional" | "required"
    std::optional<boost::json::object> meta;
};

// Whether a tool may only be called as a task (execution.taskSupport "required").
bool requires_task(tool const& t) noexcept;

// Annotations are hints; absent readOnlyHint means "may modify its environment" (the spec default).
bool may_mutate(tool const& t) noexcept;

enum class cache_scope { public_scope, private_scope };
std::string_view to_string(cache_scope s) noexcept;

// A tool the server listed that airlock could not read; the rest of the page is still usable.
struct rejected_tool {
    std::size_t index = 0;
    std::string name;  // empty when the name itself was unreadable
    std::string reason;
};

struct list_tools_result {
    std::vector<tool> tools;
    std::optional<std::string> next_cursor;
    std::optional<std::int64_t> ttl_ms;  // 2026-07-28 caching hint; a negative value reads as 0
    std::optional<cache_scope> scope;    // unknown values read as private: never share what wasn't declared shareable
    std::optional<std::string> result_type;
    std::optional<boost::json::object> meta;
    std::vector<rejected_tool> rejected;  // reader output only; never written
};

struct call_tool_params {
    std::string name;
    std::optional<boost::json::object> arguments;
    std::optional<boost::json::object> meta;
};

struct call_tool_result {
    boost::json::array content;  // content blocks kept as JSON: each an object with a string "type"
    std::optional<boost::json::value> structured_content;  // any JSON value, null included
    std::optional<bool> is_error;                          // absent means false
    std::optional<std::string> result_type;
    std::optional<boost::json::object> meta;
};

struct progress_params {
    progress_token token;
    double progress = 0;
    std::optional<double> total;
    std::optional<std::string> message;
    std::optional<boost::json::object> meta;
};

struct cancelled_params {
    std::optional<request_id> id;  // `requestId`: required in 2026-07-28, optional in 2025-11-25 (tasks)
    std::optional<std::string> reason;
    std::optional<boost::json::object> meta;
};

// server/discover (2026-07-28).
struct discover_result {
    std::vector<std::string> supported_versions;
    boost::json::object capabilities;
    std::optional<implementation> server_info;  // carried in _meta["io.modelcontextprotocol/serverInfo"]
    std::optional<std::string> instructions;
    std::optional<std::int64_t> ttl_ms;
    std::optional<cache_scope> scope;
    std::optional<std::string> result_type;
    std::optional<boost::json::object> meta;
};

// error.data of an UnsupportedProtocolVersion (-32022) error.
struct unsupported_version_data {
    std::vector<std::string> supported;
    std::string requested;
};

core::result<implementation> parse_implementation(boost::json::value const& v);
core::result<initialize_params> parse_initialize_params(boost::json::value const& v);
core::result<initialize_result> parse_initialize_result(boost::json::value const& v);
core::result<tool> parse_tool(boost::json::value const& v);
core::result<list_tools_result> parse_list_tools_result(boost::json::value const& v);
core::result<call_tool_params> parse_call_tool_params(boost::json::value const& v);
core::result<call_tool_result> parse_call_tool_result(boost::json::value const& v);
core::result<progress_params> parse_progress_params(boost::json::value const& v);
core::result<cancelled_params> parse_cancelled_params(boost::json::value const& v);
core::result<discover_result> parse_discover_result(boost::json::value const& v);
core::result<unsupported_version_data> parse_unsupported_version_data(boost::json::value const& v);

// Reads params._meta's modern fields; a missing required field fails "invalid_params" (answer -32602).
core::result<request_meta> parse_request_meta(boost::json::object const& params);
core::result<request_meta> parse_request_meta(std::optional<boost::json::object> const& params);
// Writes the modern fields into params._meta, keeping any other _meta keys already there.
void set_request_meta(boost::json::object& params, request_meta const& m);

// Boost.JSON conversions. value_to throws core::error_exception with the reader's message; prefer
// the parse_* functions on untrusted input.
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, implementation const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, initialize_params const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, initialize_result const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, tool_annotations const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, tool const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, list_tools_result const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, call_tool_params const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, call_tool_result const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, progress_params const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, cancelled_params const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, discover_result const& x);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, unsupported_version_data const& x);

implementation tag_invoke(boost::json::value_to_tag<implementation>, boost::json::value const& v);
initialize_params tag_invoke(boost::json::value_to_tag<initialize_params>, boost::json::value const& v);
initialize_result tag_invoke(boost::json::value_to_tag<initialize_result>, boost::json::value const& v);
tool tag_invoke(boost::json::value_to_tag<tool>, boost::json::value const& v);
list_tools_result tag_invoke(boost::json::value_to_tag<list_tools_result>, boost::json::value const& v);
call_tool_params tag_invoke(boost::json::value_to_tag<call_tool_params>, boost::json::value const& v);
call_tool_result tag_invoke(boost::json::value_to_tag<call_tool_result>, boost::json::value const& v);
progress_params tag_invoke(boost::json::value_to_tag<progress_params>, boost::json::value const& v);
cancelled_params tag_invoke(boost::json::value_to_tag<cancelled_params>, boost::json::value const& v);
discover_result tag_invoke(boost::json::value_to_tag<discover_result>, boost::json::value const& v);

}  // namespace airlock::mcp
