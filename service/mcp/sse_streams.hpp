#pragma once
// The SSE side of the Streamable HTTP endpoint (`/mcp`): the head and events of a text/event-stream
// reply, the keep-alive comments of a quiet stream, and the server-notification streams (a legacy
// session's GET stream, a modern subscriptions/listen) with the backend listener that feeds them.

#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/log_throttle.hpp"
#include "mcp/server/backend.hpp"
#include "service/http/http_server.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace airlock::service {

// The head of an SSE reply.
http::response<http::empty_body> sse_head(unsigned version);
// One event carrying `data` (serialized JSON), with an event id and a `retry:` when given.
std::string sse_event(std::string data, std::optional<std::string> id = std::nullopt,
                      std::optional<std::uint64_t> retry = std::nullopt);

// Sends an SSE comment whenever a stream has been quiet for `every`, until `timer` is cancelled or
// the server has closed the body.
boost::asio::awaitable<void> async_keep_alive(std::shared_ptr<boost::asio::steady_timer> timer,
                                              std::shared_ptr<http_body_channel> body, std::chrono::milliseconds every);

// An open server-notification stream: a legacy GET stream or a modern subscriptions/listen.
struct listen_stream {
    std::shared_ptr<http_body_channel> body;
    std::uint64_t listener = 0;
    bool listening = false;
    std::optional<mcp::request_id> subscription;  // modern: the listen request's id
    std::shared_ptr<boost::asio::steady_timer> keep_alive;
    std::atomic<bool> ended{false};
};

struct listen_options {
    std::size_t buffer = 256;  // events queued for a slow stream before some are dropped
    std::chrono::milliseconds keep_alive{15'000};
    std::shared_ptr<mcp::log_throttle> dropped;  // logs what a slow stream drops
};

// Opens `ls` with `opening` as its first event and a backend listener for `principal` (and
// `session_id`, for a legacy session's stream) whose notifications `format` turns into events (or
// drops: nullopt). When the stream ends, the listener goes and `on_close` runs.
boost::asio::awaitable<http_stream> async_open_listen_stream(
    std::shared_ptr<mcp::server_backend> backend, listen_options const& options, unsigned version,
    std::string const& principal, std::shared_ptr<listen_stream> ls, std::string opening,
    std::function<std::optional<std::string>(mcp::notification const&)> format, std::function<void()> on_close,
    std::string session_id = {});

// Ends a notification stream from the server's side (session end, shutdown), after `closing` when
// given (the response that ends a modern subscription gracefully).
void end_listen_stream(std::shared_ptr<listen_stream> const& ls, std::optional<std::string> closing);

}  // namespace airlock::service
