#pragma once
// Keep-alive HTTP/1.1 connections to one http(s) endpoint, shared by the MCP Streamable HTTP
// transport and the model providers: resolution with an egress check on every address, connect
// and TLS (SNI, chain and host name verified) under a deadline, one request written and its
// response header read, bodies read under a limit, and idle connections pooled for reuse.
//
// This header names Beast types: include it from .cpp files only. Every member runs on the strand
// the pool was built with.

#include "mcp/protocol/era.hpp"
#include "mcp/client/any_stream.hpp"
#include "mcp/client/http_transport.hpp"
#include "mcp/client/transport.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::mcp {

struct http_pool_options {
    std::string log_name;  // tags log lines ("mcp http NAME", "provider NAME")
    std::string url;
    // Sent on every request. Values are credentials: never logged, never in an error.
    std::vector<std::pair<std::string, std::string>> headers;
    bool verify_peer = true;
    std::optional<std::string> ca_file;
    std::chrono::milliseconds connect_timeout{10'000};  // resolve + TCP connect + TLS handshake
    std::size_t pool_size = 4;
    // Offered each resolved address; refused ones are never connected to. Empty: all pass.
    std::function<bool(boost::asio::ip::address const&)> allow_address;
};

namespace http_wire {

// One HTTP/1.1 connection, plain or TLS. Owned by one exchange at a time, or idle in the pool.
struct connection {
    // TLS over the TCP stream, or the TCP stream itself: one type, so every read and write of the
    // pool and its callers is compiled once (any_stream.hpp).
    std::unique_ptr<any_stream<boost::beast::tcp_stream>> stream;
    boost::beast::flat_buffer buffer;
    bool reused = false;

    // Beast reads as much as the buffer's free capacity, and no less than 512 bytes: a buffer that
    // never grows past 512 reads a reply 512 bytes at a time, a syscall, a timer update and a
    // trip through the event loop each.
    static constexpr std::size_t read_chunk = 16 * 1024;
    connection() { buffer.reserve(read_chunk); }

    boost::beast::tcp_stream& lowest();
    void close();
};

using response_parser = boost::beast::http::response_parser<boost::beast::http::buffer_body>;

// A request that went out on a connection, with its response header read.
struct exchange {
    std::unique_ptr<connection> conn;
    std::unique_ptr<response_parser> parser;

    unsigned status() const;
    std::string_view content_type() const;
    std::string_view field(std::string_view name) const;  // empty when absent
    http_headers headers() const;
};

struct outgoing {
    boost::beast::http::verb verb = boost::beast::http::verb::post;
    std::string target;  // empty: the URL's own path and query
    std::string body;
    http_headers headers;
};

using time_point = std::chrono::steady_clock::time_point;

// Reads whatever body bytes arrive next (at most `size`) into `buf`; returns how many.
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> read_body_some(exchange& ex, char* buf,
                                                                                          std::size_t size,
                                                                                          time_point deadline);

// The whole body, or `too_large` once it passes `limit`.
struct body_read {
    boost::system::error_code ec;
    bool too_large = false;
    std::string text;
};
boost::asio::awaitable<body_read> read_body(exchange& ex, std::size_t limit, time_point deadline);

// "timed out" for Beast's timeout, else the error's message.
std::string describe(boost::system::error_code const& ec);

}  // namespace http_wire

class http_pool {
public:
    http_pool(boost::asio::strand<boost::asio::any_io_executor> strand, http_pool_options opts);
    http_pool(http_pool const&) = delete;
    http_pool& operator=(http_pool const&) = delete;

    // Why nothing can be sent at all (bad URL, bad header, unreadable CA file); nullopt when fine.
    std::optional<std::string> const& setup_problem() const noexcept { return setup_problem_; }
    bool has_endpoint() const noexcept { return endpoint_.has_value(); }
    http_endpoint const& endpoint() const { return *endpoint_; }  // only when has_endpoint()
    std::string where() const;  // "scheme://host[:port]", for messages

    // Sends one request and reads its response header. A pooled connection the server had closed
    // is replaced only while nothing of the request was written. Errors: not_sent (nothing left),
    // deadline (written, no header in time), no_reply (written, then the connection failed).
    boost::asio::awaitable<transport_result<http_wire::exchange>> async_send(http_wire::outgoing out,
                                                                              http_wire::time_point deadline);

    // Pools the connection when its response was read to the end and it may be kept alive.
    void release(http_wire::exchange& ex);
    // Reads and discards the rest of a (small) body so the connection can be pooled.
    boost::asio::awaitable<void> async_discard_body(http_wire::exchange& ex, http_wire::time_point deadline);

    // Closes every idle connection; until reopen(), nothing is pooled again.
    void close();
    void reopen() noexcept { closed_ = false; }
    std::size_t idle_connections() const noexcept { return idle_count_; }

private:
    boost::asio::awaitable<transport_result<std::unique_ptr<http_wire::connection>>> async_connect(
        http_wire::time_point deadline);
    boost::asio::awaitable<transport_result<std::unique_ptr<http_wire::connection>>> async_acquire(
        http_wire::time_point deadline);
    void setup_tls();

    boost::asio::strand<boost::asio::any_io_executor> strand_;
    http_pool_options opts_;
    core::result<http_endpoint> endpoint_;
    std::optional<boost::asio::ssl::context> tls_ctx_;
    std::optional<std::string> setup_problem_;
    std::vector<std::unique_ptr<http_wire::connection>> idle_;
    std::atomic<std::size_t> idle_count_{0};
    bool closed_ = false;
};

}  // namespace airlock::mcp
