#pragma once
// A transport moves JSON-RPC messages between airlock (as MCP client) and one upstream server:
// a stdio child process or a Streamable HTTP endpoint. It knows bytes, framing, sessions and
// deadlines; the MCP client above it knows methods, eras and what a reply means.

#include "core/tool.hpp"
#include "mcp/protocol/jsonrpc.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace airlock::mcp {

struct tool;  // mcp/protocol/messages.hpp

// What went wrong, and — what matters for a tool call — whether the request had left.
struct transport_error {
    enum class kind {
        not_sent,         // failed before the request was written: it certainly did not happen
        no_reply,         // written, then the connection or process went away: in doubt
        deadline,         // written, no reply within the deadline: in doubt
        cancelled,        // written, then whoever awaited it gave up before the reply: in doubt
        session_expired,  // legacy HTTP: 404 for our session id; re-initialize and retry once
        http_status,      // the server answered with an HTTP error status and no JSON-RPC body
        protocol,         // the reply could not be understood (not JSON-RPC, wrong content type)
    };
    kind what = kind::not_sent;
    std::string detail;
    unsigned http_status = 0;  // when what == http_status (or the status that came with another kind)
};

std::string_view to_string(transport_error::kind k) noexcept;

inline transport_error transport_fault(transport_error::kind k, std::string detail, unsigned status = 0) {
    return transport_error{k, std::move(detail), status};
}

template <class T>
using transport_result = boost::system::result<T, transport_error>;

[[noreturn]] void throw_exception_from_error(transport_error const& e, boost::source_location const&);

// Answers requests the server sends to the client (ping, sampling, elicitation, roots). The result
// is the `result` object to send back, or an error response.
using server_request_handler =
    std::function<boost::asio::awaitable<boost::system::result<boost::json::object, error_object>>(request)>;

struct request_options {
    std::chrono::milliseconds deadline{60'000};
    // Notifications the server sends about this request (progress, logging) while it runs.
    std::function<void(notification const&)> on_notification;
    // tools/call over modern HTTP: the called tool as listed, so its x-mcp-header arguments are
    // mirrored into Mcp-Param-* headers (the spec requires it). Other transports ignore it.
    tool const* called = nullptr;
    // Requests the server sends on this request's own response stream (Streamable HTTP), such as a
    // sampling question asked during a tools/call, go here instead of to the transport-wide handler:
    // the stream says which request they belong to. stdio has no such tie and ignores it.
    server_request_handler on_server_request;
};


class transport {
public:
    virtual ~transport() = default;

    // Starts the child or checks the URL; idempotent. Fails not_sent when it cannot.
    virtual boost::asio::awaitable<transport_result<void>> async_open() = 0;
    // Sends `req` and completes with the response (result or error) that carries its id. On a
    // deadline the transport itself tells the server (notifications/cancelled on legacy
    // connections, closing the stream on modern ones) before it returns `deadline`.
    virtual boost::asio::awaitable<transport_result<message>> async_request(request req, request_options opts) = 0;
    virtual boost::asio::awaitable<transport_result<void>> async_notify(notification n) = 0;
    // The spec's shutdown: stdio closes stdin, waits, SIGTERM, SIGKILL; legacy HTTP sends DELETE.
    virtual boost::asio::awaitable<void> async_close() = 0;

    // Counts the server's losses: it changes whenever the server the next request would reach may
    // not be the one the last handshake was made with (a stdio child that exited, even while idle).
    // A client that sees it change handshakes again before sending anything else.
    virtual std::uint64_t losses() const { return 0; }

    // Legacy HTTP: MCP-Protocol-Version to send once negotiated. Modern: the era of the headers.
    virtual void set_protocol_version(std::string version) = 0;
    // Notifications not tied to a request (list_changed, resource updates).
    virtual void set_notification_handler(std::function<void(notification const&)> handler) = 0;
    virtual void set_server_request_handler(server_request_handler handler) = 0;

    // Where this transport sends: process{argv0} or remote{scheme, host, port}.
    virtual core::destination destination() const = 0;
};

}  // namespace airlock::mcp
