#pragma once
// The MCP endpoint (`/mcp`) over Streamable HTTP, both eras on one path: legacy sessions
// (2025-03-26 .. 2025-11-25: initialize, Mcp-Session-Id, GET stream, DELETE) and modern stateless
// requests (2026-07-28: _meta, mirrored headers, server/discover, subscriptions/listen), chosen per
// request. It guards the door (Host, Origin, bearer token), owns the protocol mechanics (sessions,
// JSON-or-SSE replies, server→client requests, cancellation) and leaves meaning to a server_backend.
//
// Wiring it into the HTTP server (the port may be 0 until listen() has picked one):
//
//     auto endpoint = std::make_shared<mcp_endpoint>(gateway, endpoint_options);
//     http_server server(ioc, http_options, make_mcp_handler(endpoint, rest_routes));
//     server.listen();
//     endpoint->listening_on(http_options.host, server.local_endpoint().port());  // before start()
//     server.start();
//     ...  on SIGTERM: endpoint->close_streams(); server.stop(); (the grace period) endpoint->shutdown();

#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/messages.hpp"
#include "mcp/server/backend.hpp"
#include "mcp/server/rules.hpp"
#include "service/http/door.hpp"
#include "service/http/http_server.hpp"

#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

struct mcp_endpoint_options {
    // Where the HTTP server listens (the port as bound): the Host/Origin defaults derive from it.
    std::string listen_host = "127.0.0.1";
    std::uint16_t listen_port = 0;
    bool unix_socket = false;  // listening on a unix socket: the Host header says nothing, any is accepted

    // Host header values ("host:port", compared case-insensitively). Empty: when listening on
    // loopback, 127.0.0.1:PORT, localhost:PORT and [::1]:PORT; otherwise any Host.
    std::vector<std::string> allowed_hosts;
    // Origin header values ("scheme://host[:port]"). Empty: when listening on loopback, http and
    // https origins of the default hosts; otherwise none. A request without Origin is not affected.
    std::vector<std::string> allowed_origins;

    // Maps a bearer token to its principal, nullopt when it is no token of ours. The comparison
    // must be constant-time; the endpoint never logs, stores or forwards the token.
    std::function<std::optional<std::string>(std::string_view token)> authenticate;
    // Requests without an Authorization header are served as principal "". Without `authenticate`
    // this admits every request; off (the default), such a request gets 401.
    bool allow_anonymous = false;
    // OAuth access tokens beside the static ones (auth.oauth); empty: none are accepted.
    door_oauth oauth;

    // Legacy sessions: one with nothing in flight and no GET stream open ends after the idle
    // timeout; an initialize beyond max_sessions gets 503, and beyond the caller's own share
    // (max_sessions_per_principal, at least 1) 429, so one principal cannot lock the others out.
    std::chrono::milliseconds session_idle_timeout{30 * 60 * 1000};
    std::size_t max_sessions = 1024;
    std::size_t max_sessions_per_principal = 64;
    std::chrono::milliseconds keep_alive_interval{15'000};  // SSE comment on quiet streams
    std::chrono::milliseconds sse_retry{1'000};             // the `retry:` a legacy priming event carries
    std::size_t stream_buffer = 256;  // events queued for a slow notification stream before some are dropped

    // Multi round-trip requests (2026-07-28 InputRequiredResult): a modern request whose backend
    // asks the client something is answered with the questions and a requestState; it stays
    // running, in this process, until a retry brings the answers or the state lapses.
    std::chrono::milliseconds input_request_ttl{300'000};  // how long a requestState stays good
    std::chrono::milliseconds input_gather{25};  // after a first question, how long to wait for more in the same round
    std::size_t max_pending_inputs = 1024;       // requests parked waiting for answers, over all clients
    std::size_t max_questions = 16;              // open questions per request

    std::function<void(std::uint8_t*, std::size_t)> random;             // CSPRNG for session ids; RAND_bytes when empty
    std::function<std::chrono::steady_clock::time_point()> clock;       // for idle expiry; steady_clock when empty
};

class mcp_endpoint {
public:
    mcp_endpoint(std::shared_ptr<mcp::server_backend> backend, mcp_endpoint_options options);
    ~mcp_endpoint();
    mcp_endpoint(mcp_endpoint const&) = delete;
    mcp_endpoint& operator=(mcp_endpoint const&) = delete;

    // Sets the address the Host/Origin defaults derive from (when none are configured), once the
    // port is known. Call before the server starts.
    void listening_on(std::string host, std::uint16_t port, bool unix_socket = false);

    // Serves one HTTP request to the endpoint path (POST, GET, DELETE; others → 405). Runs on the
    // connection's strand.
    boost::asio::awaitable<http_reply> async_handle(http_request& req);

    // For a drain, before http_server::stop(): ends every notification stream (a modern
    // subscription gets its completion result first); requests in flight go on.
    void close_streams();
    // For a stop: ends every notification stream and every legacy session, cancelling what is
    // still in flight.
    void shutdown();

    std::size_t session_count() const;

private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

// Sends requests for `path` (the part of the target before '?') to the endpoint and every other
// request to `fallback`.
http_handler make_mcp_handler(std::shared_ptr<mcp_endpoint> endpoint, http_response_handler fallback,
                              std::string path = "/mcp");
// For http_server_options::refusal_body: a request for `path` that the server refuses by itself
// (413, 431) is answered with a JSON-RPC error an MCP client can show (-32600, and no id: the
// request was not read); other paths keep the server's own body.
std::function<std::optional<std::string>(std::string_view target, std::string_view message)> mcp_refusal_body(
    std::string path = "/mcp");

// The rules both endpoints apply, by their old name.
namespace mcp_rules = mcp::rules;

}  // namespace airlock::service
