#pragma once
// `airlock stdio`: serves one MCP client over stdin/stdout (newline-delimited JSON-RPC), both eras:
// a client that sends initialize gets a legacy session for the life of the process; a request
// carrying _meta["io.modelcontextprotocol/protocolVersion"] is served statelessly (2026-07-28).
// Same backend as the HTTP endpoint. Nothing but MCP messages is written to the output; logs belong
// on stderr (main() sets that up). The server never sends a modern client a request: what the
// backend asks during a modern request reaches the client as an InputRequiredResult (MRTR).

#include "mcp/server/backend.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace airlock::service {

// Ends a session before its input does (`airlock stdio` on SIGTERM or SIGINT). Shared between
// the caller and the session; request() may come from any thread, before or during the session.
class stdio_stop {
public:
    // The first request ends the session as end of input does (each request it cuts off is
    // answered with an error saying airlock is stopping); the next one cuts short the wait for
    // requests still running.
    void request();
    // The session's hook: called for each request, those made before it was attached included.
    void attach(std::function<void()> on_request);

private:
    std::mutex mutex_;
    int requests_ = 0;
    std::function<void()> on_request_;
};

struct stdio_endpoint_options {
    std::string principal;  // every request is this principal's (the configured stdio principal)
    // A longer line is skipped up to its newline and answered with -32600; the session goes on.
    std::size_t max_message_bytes = 4 * 1024 * 1024;
    // After end of input, how long requests still running get to wind down (they are cancelled).
    std::chrono::milliseconds drain_grace{5'000};
    std::function<void(std::uint8_t*, std::size_t)> random;  // CSPRNG for ids and keys; RAND_bytes when empty
    std::shared_ptr<stdio_stop> stop;  // lets the caller end the session early; none when empty

    // Multi round-trip requests (2026-07-28 InputRequiredResult), as on the HTTP endpoint: a
    // modern tools/call, prompts/get or resources/read whose backend asks the client something is
    // answered with the questions and a requestState; it stays running until a retry brings the
    // answers, the client cancels the retry, input ends or the state lapses.
    std::chrono::milliseconds input_request_ttl{300'000};  // how long a requestState stays good
    std::chrono::milliseconds input_gather{25};  // after a first question, how long to wait for more in the same round
    std::size_t max_pending_inputs = 1024;       // requests parked waiting for answers
    std::size_t max_questions = 16;              // open questions per request
};

// Serves until end of input on `in_fd` (or a fatal read error, or options.stop), then cancels what is still
// running (each request is answered with -32603, airlock is stopping), removes its listeners,
// tells the backend the session closed, writes out what is queued and returns. The descriptors are duplicated: the caller's stay open. Both must be
// pipes, sockets or terminals (not regular files). May be spawned on any executor; it makes a
// strand of its own.
boost::asio::awaitable<void> async_serve_stdio(std::shared_ptr<mcp::server_backend> backend,
                                               stdio_endpoint_options options, int in_fd = 0, int out_fd = 1);

}  // namespace airlock::service
