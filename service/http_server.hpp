#pragma once
// The HTTP/1.1 server: Beast on one io_context, every connection on its own strand, with header and
// body limits, read and idle deadlines, a connection cap, keep-alive and graceful shutdown.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace airlock::service {

namespace http = boost::beast::http;

using http_request = http::request<http::string_body>;
using http_response = http::response<http::string_body>;

struct http_server_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8787;  // 0 picks a free port; local_endpoint() tells which
    std::size_t header_limit = 16 * 1024;
    std::size_t body_limit = 4 * 1024 * 1024;
    std::chrono::milliseconds read_timeout{30'000};  // a request must arrive whole within this
    std::chrono::milliseconds idle_timeout{60'000};  // a kept-alive connection with no request is closed
    std::size_t max_connections = 1024;
};

// Produces the response for one request. Runs on the connection's strand; may suspend.
using http_handler = std::function<boost::asio::awaitable<http_response>(http_request&)>;

// A response with a JSON body and the headers every airlock JSON reply carries.
http_response json_response(http::status status, std::string body, unsigned version = 11, bool keep_alive = true);
// {"error":{"code":..., "message":...}}
http_response json_error(http::status status, std::string_view code, std::string_view message,
                         unsigned version = 11, bool keep_alive = true);

class http_server {
public:
    http_server(boost::asio::io_context& ioc, http_server_options options, http_handler handler);
    ~http_server();

    // Binds and listens; throws boost::system::system_error naming the address when it cannot.
    void listen();
    boost::asio::ip::tcp::endpoint local_endpoint() const;
    // Starts accepting on the io_context; returns immediately.
    void start();
    // Stops accepting and closes idle connections; in-flight requests finish their response.
    void stop();

    std::size_t active_connections() const noexcept;

private:
    struct state;
    std::shared_ptr<state> state_;
};

}  // namespace airlock::service
