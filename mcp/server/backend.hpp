#pragma once
// The server side of MCP, apart from transports: what an endpoint (Streamable HTTP or stdio) asks
// of the thing that actually serves requests — airlock's gateway. The endpoint owns the protocol
// mechanics (initialize, ping, sessions, eras, headers, SSE, cancellation); the backend owns meaning.

#include "mcp/protocol/era.hpp"
#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/messages.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/system/result.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace airlock::mcp {

using handler_result = boost::system::result<boost::json::object, error_object>;

// Everything a backend may know about, and do with, the request it is serving.
struct request_context {
    std::string principal;         // who is calling (from authentication); "" when unauthenticated is allowed
    // How the caller proved it, when by an OAuth access token: {"method", "issuer", "subject",
    // "token_id", "scopes"} (never the token). Empty for a static bearer token, stdio and anonymous callers.
    boost::json::object authentication;
    std::string session_id;        // legacy: the Mcp-Session-Id (stdio: one id for the process); modern: ""
    era client_era = era::legacy;  // the era of this request
    std::string protocol_version;  // negotiated (legacy) or from _meta (modern)
    boost::json::object client_capabilities;  // from initialize (legacy) or _meta (modern)
    std::optional<progress_token> progress;   // the client's progressToken for this request, if any
    std::string request_id_text;              // the downstream request id, for logs and journals
    // A modern request over HTTP: its Mcp-Param-* headers (possibly none), which a tools/call must
    // match against the called tool's x-mcp-header parameters; nullopt where no headers exist.
    std::optional<http_headers> param_headers;

    // Sends a notification to the client in the context of this request (progress, logging): on the
    // request's SSE stream over HTTP, on stdout over stdio. Never blocks the backend for long.
    std::function<boost::asio::awaitable<void>(notification)> notify;
    // Sends a request to the client (sampling/createMessage, elicitation/create, roots/list) and
    // returns its answer; fails with an error_object when the client refused or went away. A
    // 2026-07-28 client is asked through an InputRequiredResult and answers in its retry (MRTR).
    std::function<boost::asio::awaitable<handler_result>(std::string method, boost::json::object params)> ask_client;
    // Emitted when the client cancels this request (notifications/cancelled, or a closed modern
    // stream); backends bind it to the work they do on the client's behalf.
    boost::asio::cancellation_slot cancelled;
};

class server_backend {
public:
    virtual ~server_backend() = default;

    // What initialize (legacy) and server/discover (modern) report.
    virtual implementation server_info() const = 0;
    virtual boost::json::object server_capabilities(std::string const& principal) const = 0;
    virtual std::optional<std::string> instructions(std::string const& principal) const {
        (void)principal;
        return std::nullopt;
    }

    // Any request other than initialize, ping and server/discover (the endpoint answers those):
    // tools/list, tools/call, resources/*, prompts/*, completion/complete, logging/setLevel, ...
    // An unknown method → error_object{-32601}.
    virtual boost::asio::awaitable<handler_result> async_handle(request req, request_context& ctx) = 0;

    // Client notifications other than initialized and cancelled (roots/list_changed, ...).
    virtual boost::asio::awaitable<void> async_notification(notification n, request_context& ctx) = 0;

    // A downstream session ended (DELETE, expiry, stdio EOF): release what it held.
    virtual void session_closed(std::string const& session_id) { (void)session_id; }

    // Server-initiated notifications not tied to a request (tools/list_changed, ...): the endpoint
    // registers one sink per open server-notification stream (legacy GET, modern
    // subscriptions/listen, stdio) and removes it when the stream closes.
    using notification_sink = std::function<void(notification const&)>;
    virtual std::uint64_t add_listener(std::string const& principal, notification_sink sink) = 0;
    // The same for a legacy session's stream (GET, or stdio): what concerns one session only
    // (resources/updated for its subscriptions) reaches that session's stream alone.
    virtual std::uint64_t add_session_listener(std::string const& principal, std::string const& session_id,
                                               notification_sink sink) {
        (void)session_id;
        return add_listener(principal, std::move(sink));
    }
    virtual void remove_listener(std::uint64_t id) = 0;
};

}  // namespace airlock::mcp
