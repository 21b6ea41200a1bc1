#pragma once
// Rules both MCP endpoints (Streamable HTTP and stdio) apply, apart from any transport: what a
// modern result carries, which methods 2026-07-28 removed, the errors both eras answer with, the
// subscriptions of subscriptions/listen, and how a legacy session id is drawn.

#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/messages.hpp"
#include "mcp/server/backend.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::mcp::rules {

// The DiscoverResult: every version airlock speaks, the backend's capabilities and instructions,
// serverInfo in _meta, resultType "complete", ttlMs 0 and cacheScope "private".
boost::json::object discover_result(mcp::server_backend const& backend, std::string const& principal);
// Adds resultType "complete" unless the backend set one; on a complete result of a cacheable
// operation (tools/list, prompts/list, resources/list, resources/templates/list, resources/read)
// ttlMs 0 and cacheScope "private" unless set.
void decorate_modern_result(std::string_view method, boost::json::object& result);

// Methods 2026-07-28 removed (the initialize handshake, ping, logging/setLevel, resource
// subscriptions): a modern request for one is answered as one for an unknown method (-32601; on
// HTTP, 404), which is how the spec says a server that does not implement a method answers.
bool removed_in_modern(std::string_view method) noexcept;
// An initialize sent by a 2026-07-28 client: no params.protocolVersion (which every legacy
// initialize carries) and a 2026-07-28 version in params._meta. Both endpoints otherwise treat
// initialize as the start of a legacy session.
bool is_modern_initialize(mcp::request const& r);
// MissingRequiredClientCapabilityError (-32021) naming `capability` in data.requiredCapabilities
// (a ClientCapabilities object: {"sampling": {}}).
mcp::error_object missing_client_capability(std::string_view capability);
// The error a request gets when airlock stops before it finished (-32603, saying so): its client
// should fail at once rather than wait for an answer that will not come.
mcp::error_object cut_off_by_stop();
// The same for a request whose legacy session its client deleted while it ran.
mcp::error_object cut_off_by_delete();
// A legacy upstream's error as a 2026-07-28 caller expects it: resources/read's "not found" is
// -32602 since SEP-2164 (it was -32002), message and data kept.
void modernize_error(std::string_view method, mcp::error_object& e);

// params._meta.progressToken, if it is a valid token.
std::optional<mcp::progress_token> progress_token_of(std::optional<boost::json::object> const& params);
// The client capability a server→client request needs ("sampling" for sampling/createMessage, ...).
std::optional<std::string_view> client_capability_for(std::string_view method) noexcept;

// subscriptions/listen: what the client asked for, and what airlock honours (list changes of
// tools, prompts and resources; resource subscriptions are not offered).
struct subscription_filter {
    bool tools = false;
    bool prompts = false;
    bool resources = false;
};
subscription_filter parse_subscription_filter(std::optional<boost::json::object> const& params);
bool admits(subscription_filter const& f, mcp::notification const& n) noexcept;
// notifications/subscriptions/acknowledged for the listen request `id`.
mcp::notification subscription_acknowledged(mcp::request_id const& id, subscription_filter const& f);
// `n` with _meta["io.modelcontextprotocol/subscriptionId"] = id.
mcp::notification tag_subscription(mcp::notification n, mcp::request_id const& id);
// The result that ends a subscription gracefully.
boost::json::object subscription_completed(mcp::request_id const& id);

// 128 bits from the CSPRNG as 32 lowercase hex digits (visible ASCII, as the spec requires).
std::string new_session_id(std::function<void(std::uint8_t*, std::size_t)> const& random);

}  // namespace airlock::mcp::rules
