#pragma once
// The Streamable HTTP transport: one upstream MCP endpoint reached over http:// or https://, in
// either era. Legacy (2025-xx): Mcp-Session-Id from initialize, MCP-Protocol-Version once
// negotiated, 404 → session_expired, server requests on SSE streams answered by POST, resumption
// with Last-Event-ID, DELETE at close. Modern (2026-07-28): the headers mirrored from each body,
// and closing the stream is the cancellation.

#include "mcp/client/transport.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/address.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::mcp {

// An upstream endpoint as its URL names it.
struct http_endpoint {
    std::string scheme;       // "http" or "https"
    std::string host;         // as written in the URL (IPv6 without brackets)
    std::uint16_t port = 0;   // as written, else 80 or 443
    std::string target;       // path and query for the request line; "/" when the URL has no path
    std::string host_header;  // the Host field: the authority without userinfo
};

// Parses an http(s) URL. Refuses other schemes, a missing host, userinfo (credentials in a URL end
// up in logs; configure them as headers) and port 0.
core::result<http_endpoint> parse_http_url(std::string_view url);

// Whether `name` can be an HTTP field name (an RFC 9110 token).
bool is_header_name(std::string_view name) noexcept;
// Whether the transport sets header `name` itself (Host, Accept, Content-Type, Mcp-*, ...), so a
// configured one could only conflict with it. Case-insensitive.
bool is_transport_header(std::string_view name) noexcept;

struct http_transport_options {
    std::string server_name;  // tags log lines
    std::string url;
    // Sent on every request, e.g. Authorization. Values are credentials: never logged. A name the
    // protocol sets itself (Accept, Content-Type, Mcp-*, Host, ...) is refused by async_open.
    std::vector<std::pair<std::string, std::string>> headers;

    bool verify_peer = true;             // https: certificate chain and host name, against the system CAs
    std::optional<std::string> ca_file;  // https: PEM file of extra trusted CAs

    std::chrono::milliseconds connect_timeout{10'000};  // resolve + TCP connect + TLS handshake
    // POSTs that are not requests (notifications, replies to server requests are bound by the
    // request), the legacy cancellation, and the DELETE at close.
    std::chrono::milliseconds message_deadline{10'000};
    // After the response arrived on an event stream, how long the rest of the stream may take to
    // end before its connection is dropped instead of pooled.
    std::chrono::milliseconds drain_deadline{2'000};

    std::size_t max_body_bytes = 16 * 1024 * 1024;  // a JSON response body (and an error body)
    std::size_t max_event_bytes = 8 * 1024 * 1024;  // one SSE event
    std::size_t pool_size = 4;                      // idle keep-alive connections kept for reuse
    std::size_t max_resumptions = 5;                // legacy: GET Last-Event-ID after a dropped stream

    // Egress check: each resolved address is offered here; refused ones are never connected to,
    // and the connection uses exactly the addresses that passed (no second lookup). Empty: all pass.
    std::function<bool(boost::asio::ip::address const&)> allow_address;
};

class http_transport final : public transport {
public:
    // Every operation runs on a strand of `exec`; callbacks (notification and server-request
    // handlers, request_options::on_notification) run there too and must not block.
    http_transport(boost::asio::any_io_executor exec, http_transport_options opts);
    ~http_transport() override;
    http_transport(http_transport const&) = delete;
    http_transport& operator=(http_transport const&) = delete;

    // Checks the URL, the configured headers and the TLS setup; connects lazily. Also reopens a
    // closed transport.
    boost::asio::awaitable<transport_result<void>> async_open() override;
    boost::asio::awaitable<transport_result<message>> async_request(request req, request_options opts) override;
    boost::asio::awaitable<transport_result<void>> async_notify(notification n) override;
    // Legacy with a session: DELETE (405 is fine); then every pooled connection is closed.
    boost::asio::awaitable<void> async_close() override;

    // A legacy version selects the legacy era and is sent as MCP-Protocol-Version; 2026-07-28
    // selects the modern era. Before any call, initialize goes out legacy and a request carrying
    // modern _meta goes out modern (what era detection needs).
    void set_protocol_version(std::string version) override;
    void set_notification_handler(std::function<void(notification const&)> handler) override;
    void set_server_request_handler(server_request_handler handler) override;

    core::destination destination() const override;  // remote{scheme, host, port}

    // Legacy: the session id the server assigned, while one is held (tests and diagnostics).
    std::optional<std::string> session_id() const;
    // Idle connections currently pooled (tests and diagnostics).
    std::size_t idle_connections() const;

    struct state;  // shared with coroutines that outlive a call (draining a finished stream)

private:
    std::shared_ptr<state> state_;
};

}  // namespace airlock::mcp
