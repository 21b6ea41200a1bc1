#pragma once
// The HTTP/1.1 server: Beast on one io_context, every connection on its own strand, over TCP or a
// unix socket, optionally TLS, with header and body limits, read, idle and write deadlines, a
// connection cap, keep-alive, streamed (chunked) responses and graceful shutdown.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "service/http/forwarded.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace airlock::service {

namespace http = boost::beast::http;

using http_request = http::request<http::string_body>;
using http_response = http::response<http::string_body>;

struct http_tls_files {
    std::filesystem::path cert_file;  // PEM certificate chain, leaf first
    std::filesystem::path key_file;   // PEM private key of the leaf
};

struct http_server_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8787;  // 0 picks a free port; local_endpoint() tells which
    std::optional<std::filesystem::path> unix_socket;  // when set, listen on this path instead of host:port
    unsigned unix_socket_mode = 0660;                  // applied before the socket accepts anyone
    std::optional<http_tls_files> tls;                 // when set, every connection is TLS
    std::size_t header_limit = 16 * 1024;
    std::size_t body_limit = 4 * 1024 * 1024;
    std::chrono::milliseconds read_timeout{30'000};   // a request (and a TLS handshake) must arrive whole within this
    std::chrono::milliseconds idle_timeout{60'000};   // a kept-alive connection with no request is closed
    std::chrono::milliseconds write_timeout{30'000};  // one response, or one chunk of a stream, must be taken within this
    // Past it, a new connection first makes room by closing the connection idle longest (kept
    // alive, or opened, with no request begun); with none idle it is over capacity (see below).
    std::size_t max_connections = 1024;
    // Connections one client address may hold at once (0: no such cap); past it, that address's
    // own idle connection goes first, and with none idle the new one is over capacity. The address
    // is the peer's (an IPv6 peer counts by its /64): a proxy in `trusted` and a unix-socket peer
    // speak for many clients, so they are held only to max_connections.
    std::size_t max_connections_per_client = 0;
    // Over capacity, a connection still has its first request read, in one of this many slots
    // kept beyond the caps, so the operations endpoints answer under any load: a request for
    // which `served_over_capacity` holds is served and the connection closed; any other (or any,
    // with every slot taken or no function) gets 503.
    std::size_t reserved_connections = 16;
    std::function<bool(std::string_view target)> served_over_capacity;
    // Peers whose X-Forwarded-For / Forwarded headers say who the client is (forwarded.hpp).
    proxy_trust trusted;
    // Called on the connection's strand when the server answers by itself, before any handler saw
    // a request: 400 (malformed), 413, 431, 501 (a transfer coding it does not read), 503 (over a
    // connection cap). For logs and metrics.
    std::function<void(unsigned status)> on_refused;
    // The JSON body of the server's own 413 and 431 replies and its refusals of a Transfer-Encoding,
    // for a route whose clients read another error shape than json_error's: given the request target
    // (as far as the server read it; empty when its request line was not read whole) and what the
    // refusal says. nullopt, or no function: json_error's body. The status stays whatever the body.
    std::function<std::optional<std::string>(std::string_view target, std::string_view message)> refusal_body;
};

// The effective client address of a request the server read: the peer's IP address, "unix" for a
// unix-socket peer, or the address a trusted proxy forwarded for. The server sets it on every
// request (any header of that name a client sent is dropped first), so handlers and logs can use it.
std::string_view client_address(http_request const& req);

// The body of a streamed response. The producer async_sends chunks (error_code{}, bytes), then
// (asio::error::eof, "") to end the body; any other error code cuts the response off (the client
// sees an incomplete body). The server closes the channel when the stream ends for any reason, so
// a producer's later sends fail: that is how it learns the client went away. Do not end the body
// with close(): a closed channel drops what it still buffers.
using http_body_channel =
    boost::asio::experimental::concurrent_channel<void(boost::system::error_code, std::string)>;
std::shared_ptr<http_body_channel> make_body_channel(boost::asio::any_io_executor executor, std::size_t capacity = 64);

// A response whose body is produced over time: sent with chunked transfer coding (HTTP/1.0: raw,
// then the connection closes). The connection has exactly one writer, the server; it reads the
// client meanwhile, so a client that disconnects ends the stream at once, not at the next write.
struct http_stream {
    http::response<http::empty_body> head;  // status and headers; the server sets the framing ones
    std::shared_ptr<http_body_channel> body;
    // A notification stream with no natural end: stop() closes it. Other streams are responses in
    // progress, and stop() lets them finish like any other in-flight response.
    bool long_lived = false;
    // Called once, on the connection's strand, when the stream has ended: `completed` is true when
    // the producer ended the body and it was all written; false when the client went away, a write
    // failed or timed out, the producer aborted, or the server stopped it.
    std::function<void(bool completed)> on_end;
};

using http_reply = std::variant<http_response, http_stream>;

// Produces the reply to one request. Runs on the connection's strand; may suspend. While it runs
// the server watches the connection: if the client goes away the handler's pending operation is
// cancelled (terminal cancellation), and whatever it returns is discarded (a stream's on_end(false)
// is called).
using http_handler = std::function<boost::asio::awaitable<http_reply>(http_request&)>;
// A handler that only ever answers with a whole response.
using http_response_handler = std::function<boost::asio::awaitable<http_response>(http_request&)>;

// A response with a JSON body and the headers every airlock JSON reply carries.
http_response json_response(http::status status, std::string body, unsigned version = 11, bool keep_alive = true);
// {"error":{"code":..., "message":...}}
http_response json_error(http::status status, std::string_view code, std::string_view message,
                         unsigned version = 11, bool keep_alive = true);

class http_server {
public:
    http_server(boost::asio::io_context& ioc, http_server_options options, http_handler handler);
    http_server(boost::asio::io_context& ioc, http_server_options options, http_response_handler handler);
    ~http_server();

    // Loads the TLS files (if any), binds and listens. Throws boost::system::system_error whose
    // what() names the address, socket path or file at fault; nothing is left listening then.
    void listen();
    // The TCP address bound (after listen); a default endpoint when listening on a unix socket.
    boost::asio::ip::tcp::endpoint local_endpoint() const;
    // Starts accepting on the io_context; returns immediately.
    void start();
    // Stops accepting, closes idle connections and long-lived streams; in-flight requests (and
    // streamed responses) finish, then their connections close. Removes the unix socket file.
    void stop();

    std::size_t active_connections() const noexcept;

private:
    struct state;
    std::shared_ptr<state> state_;
};

}  // namespace airlock::service
