#pragma once
// The MCP client: one upstream server behind one transport, in whichever era it speaks, exposed to
// the rest of airlock as a core::tool_client.

#include "core/tool.hpp"
#include "mcp/protocol/era.hpp"
#include "mcp/protocol/messages.hpp"
#include "mcp/client/transport.hpp"

#include <boost/system/result.hpp>

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace airlock::mcp {

struct client_options {
    std::string server_name;                                  // the server part of every tool://server/name
    std::chrono::milliseconds call_deadline{60'000};          // per call unless the caller gives one
    std::chrono::milliseconds connect_deadline{15'000};       // era detection and initialize
    transport_kind kind = transport_kind::stdio;
    implementation client_info{"airlock", "0", std::nullopt, std::nullopt};
    // What airlock declares it can do as this server's client (legacy initialize, modern _meta).
    // A gateway that relays sampling and elicitation to its own clients declares them here.
    boost::json::object capabilities;
};

// A request other than tools/list and tools/call, relayed as it is (resources/*, prompts/*, ...).
struct forward_options {
    std::optional<std::chrono::milliseconds> deadline;  // the client's call_deadline when absent
    // Notifications the server sends about this request (progress under airlock's own token, logs).
    // When set, the request carries a progress token of airlock's making.
    std::function<void(notification const&)> on_notification;
    // Requests the server sends on this request's own response stream (see request_options).
    server_request_handler on_server_request;
};
// The upstream's result object, or its JSON-RPC error; a transport failure reads as an internal
// error whose message says what happened.
using forward_result = boost::system::result<boost::json::object, error_object>;

// One upstream tool as airlock names it. Upstream names may use '-', which a ToolId component
// cannot (it is how wire names show '.'), so '-' is read as '.': `get-sum` becomes
// tool://everything/get.sum, whose wire name is everything__get-sum again. Nor may a component
// hold "__" (it separates server and tool on the wire), so "__" is read as "_.": another airlock's
// `everything__echo` becomes tool://inner/everything_.echo, on the wire inner__everything_-echo.
struct upstream_tool {
    core::tool_id id;
    std::string upstream_name;  // what the server calls it, byte for byte
    mcp::tool spec;             // as listed (schema, annotations, description)
};

// Maps an upstream tool name to the airlock tool name, or an error when it cannot be represented.
core::result<std::string> airlock_tool_name(std::string_view upstream_name);

class mcp_client final : public core::tool_client {
public:
    mcp_client(std::unique_ptr<transport> t, client_options options);
    ~mcp_client() override;

    // Detects the era and completes the handshake (legacy: initialize + initialized). Calls and
    // listings connect on demand, so calling this first is optional.
    boost::asio::awaitable<core::tool_result<void>> async_connect();

    // tools/list, following every page. Tools whose names cannot be represented are skipped (logged).
    boost::asio::awaitable<core::tool_result<std::vector<upstream_tool>>> async_list_tools();

    // tools/call with the whole MCP result (content, structuredContent, isError), for the gateway.
    // `on_progress` receives the server's progress notifications for this call.
    boost::asio::awaitable<core::tool_result<call_tool_result>> async_call_tool(
        core::tool_id tool, boost::json::value arguments, std::optional<core::provenance> prov,
        std::function<void(progress_params const&)> on_progress = {},
        std::optional<std::chrono::milliseconds> deadline = std::nullopt,
        std::function<void(notification const&)> on_notification = {},
        server_request_handler on_server_request = {});

    // Any other request (resources/read, prompts/get, completion/complete, logging/setLevel, ...),
    // connecting on demand. `params` go out as given, except _meta.progressToken (see forward_options).
    boost::asio::awaitable<forward_result> async_forward(std::string method, boost::json::object params,
                                                         forward_options opts = {});

    // core::tool_client: structuredContent when the tool gave one, else {"content": [...]};
    // isError → tool_failed.
    boost::asio::awaitable<core::tool_result<boost::json::value>> async_call(
        core::tool_id tool, boost::json::value arguments, std::optional<core::provenance> prov) override;
    core::destination destination_of(core::tool_id const& tool) const override;
    // Where every request of this client goes (the same for all its tools).
    core::destination destination() const;

    // MCP ping, connecting on demand: succeeds on any JSON-RPC reply (an error reply is an answer
    // too), fails when the server cannot be reached or does not answer within `deadline`.
    boost::asio::awaitable<core::tool_result<void>> async_ping(std::chrono::milliseconds deadline);

    boost::asio::awaitable<void> async_close();

    // Notifications the server sends outside any call (tools/list_changed, resources/updated, ...).
    void set_notification_handler(std::function<void(notification const&)> handler);
    // Requests the server sends to airlock (sampling/createMessage, elicitation/create, roots/list).
    void set_server_request_handler(server_request_handler handler);

    std::string const& server_name() const noexcept { return options_.server_name; }
    // The era and version in use; empty version before the first connect.
    era current_era() const;
    std::string protocol_version() const;
    // Which handshake the client is connected by: 1 for the first, one more for each reconnection
    // (a restarted child, a new HTTP session); 0 while not connected. A server reached again may
    // not be the one whose tools were listed.
    std::uint64_t connection() const;
    // The capabilities the server declared in its handshake; nullopt before the first connect.
    // What the server said of how to use it (initialize or server/discover), as it said it.
    std::optional<std::string> instructions() const;
    std::optional<boost::json::object> server_capabilities() const;

private:
    boost::asio::awaitable<core::tool_result<void>> async_ensure_connected();
    // Era detection and initialize, by the one caller that connects (async_ensure_connected).
    boost::asio::awaitable<core::tool_result<void>> async_handshake();
    // Reads the tool catalogue again for a call of `uri`; a failure is reported as the call's.
    boost::asio::awaitable<core::tool_result<void>> async_relist_for(std::string const& uri);
    boost::asio::awaitable<transport_result<message>> async_send(std::string method, boost::json::object params,
                                                                 request_options opts);
    core::tool_error to_tool_error(transport_error const& e, std::string const& tool) const;
    std::string next_id();

    std::unique_ptr<transport> transport_;
    client_options options_;
    mutable std::mutex mutex_;
    bool connected_ = false;
    bool connecting_ = false;
    std::uint64_t handshakes_ = 0;
    std::uint64_t losses_at_handshake_ = 0;  // transport_->losses() when the last handshake began
    era era_ = era::legacy;
    std::string version_;
    std::optional<std::string> instructions_;
    std::optional<boost::json::object> server_capabilities_;
    std::map<std::string, std::string> upstream_names_;  // airlock tool name → upstream name
    // upstream name → definition as listed; shared, so a call holds its definition without copying
    // it and a concurrent re-listing cannot pull it away mid-call
    std::map<std::string, std::shared_ptr<tool const>> upstream_specs_;
    std::atomic<std::uint64_t> ids_{0};
};

}  // namespace airlock::mcp
