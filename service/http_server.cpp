#include "service/http_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <spdlog/spdlog.h>

#include <list>
#include <mutex>

namespace airlock::service {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using asio::as_tuple;
using asio::use_awaitable;

http_response json_response(http::status status, std::string body, unsigned version, bool keep_alive) {
    http_response res{status, version};
    res.set(http::field::content_type, "application/json");
    res.set(http::field::cache_control, "no-store");
    res.keep_alive(keep_alive);
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

http_response json_error(http::status status, std::string_view code, std::string_view message, unsigned version,
                         bool keep_alive) {
    boost::json::value v = {{"error", {{"code", code}, {"message", message}}}};
    return json_response(status, boost::json::serialize(v), version, keep_alive);
}

struct http_server::state : std::enable_shared_from_this<state> {
    asio::io_context& ioc;
    http_server_options options;
    http_handler handler;
    tcp::acceptor acceptor;
    std::atomic<std::size_t> connections{0};
    std::atomic<bool> stopping{false};
    std::mutex streams_mutex;
    std::list<beast::tcp_stream*> streams;  // live connections, so stop() can close idle ones

    state(asio::io_context& ioc_, http_server_options opts, http_handler h)
        : ioc(ioc_), options(std::move(opts)), handler(std::move(h)), acceptor(asio::make_strand(ioc_)) {}

    asio::awaitable<void> accept_loop() {
        for (;;) {
            auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(ioc), as_tuple(use_awaitable));
            if (ec == asio::error::operation_aborted || stopping) co_return;
            if (ec) {
                // Descriptor exhaustion and similar are transient: log, breathe, go on accepting.
                spdlog::warn("accept failed: {}", ec.message());
                asio::steady_timer t(acceptor.get_executor(), std::chrono::milliseconds(50));
                co_await t.async_wait(as_tuple(use_awaitable));
                continue;
            }
            auto self = shared_from_this();
            auto exec = socket.get_executor();
            auto session_task = session(std::move(socket));
            asio::co_spawn(exec, std::move(session_task), [self](std::exception_ptr e) {
                if (!e) return;
                try {
                    std::rethrow_exception(e);
                } catch (std::exception const& ex) {
                    spdlog::error("connection ended by an internal error: {}", ex.what());
                }
            });
        }
    }

    asio::awaitable<void> write_and_close(beast::tcp_stream& stream, http_response res) {
        res.keep_alive(false);
        stream.expires_after(options.read_timeout);
        co_await http::async_write(stream, res, as_tuple(use_awaitable));
        beast::error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }

    asio::awaitable<void> session(tcp::socket socket) {
        beast::tcp_stream stream(std::move(socket));
        std::size_t now = ++connections;
        struct guard {
            state& s;
            std::list<beast::tcp_stream*>::iterator it;
            ~guard() {
                --s.connections;
                std::lock_guard lock(s.streams_mutex);
                s.streams.erase(it);
            }
        };
        std::list<beast::tcp_stream*>::iterator it;
        {
            std::lock_guard lock(streams_mutex);
            it = streams.insert(streams.end(), &stream);
        }
        guard g{*this, it};
        if (now > options.max_connections) {
            co_await write_and_close(stream, json_error(http::status::service_unavailable, "over_capacity",
                                                        "too many connections; retry later", 11, false));
            co_return;
        }

        beast::flat_buffer buffer;
        bool first = true;
        for (;;) {
            http::request_parser<http::string_body> parser;
            parser.header_limit(static_cast<std::uint32_t>(options.header_limit));
            parser.body_limit(options.body_limit);
            // Until the first byte of a request arrives the idle deadline applies; a client that
            // opens a connection and sends nothing is closed after it as well.
            stream.expires_after(first ? options.read_timeout : options.idle_timeout);
            auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, as_tuple(use_awaitable));
            if (!hec) {
                stream.expires_after(options.read_timeout);
                auto [bec, bn] = co_await http::async_read(stream, buffer, parser, as_tuple(use_awaitable));
                hec = bec;
            }
            if (hec) {
                if (hec == http::error::end_of_stream || hec == beast::error::timeout ||
                    hec == asio::error::connection_reset || hec == asio::error::operation_aborted || stopping)
                    co_return;
                if (hec == http::error::header_limit) {
                    co_await write_and_close(stream, json_error(http::status::request_header_fields_too_large,
                                                                "header_too_large",
                                                                "request headers exceed " +
                                                                    std::to_string(options.header_limit) + " bytes"));
                } else if (hec == http::error::body_limit) {
                    co_await write_and_close(stream, json_error(http::status::payload_too_large, "body_too_large",
                                                                "request body exceeds " +
                                                                    std::to_string(options.body_limit) + " bytes"));
                } else {
                    co_await write_and_close(
                        stream, json_error(http::status::bad_request, "bad_request", "malformed HTTP request: " + hec.message()));
                }
                co_return;
            }
            first = false;
            auto req = parser.release();
            bool keep_alive = req.keep_alive() && !stopping;
            http_response res = co_await handler(req);
            res.version(req.version());
            res.keep_alive(keep_alive && res.keep_alive());
            stream.expires_after(options.read_timeout);
            auto [wec, wn] = co_await http::async_write(stream, res, as_tuple(use_awaitable));
            if (wec || !res.keep_alive()) {
                beast::error_code ignored;
                stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
                co_return;
            }
        }
    }
};

http_server::http_server(asio::io_context& ioc, http_server_options options, http_handler handler)
    : state_(std::make_shared<state>(ioc, std::move(options), std::move(handler))) {}

http_server::~http_server() = default;

void http_server::listen() {
    auto& s = *state_;
    tcp::endpoint ep(asio::ip::make_address(s.options.host), s.options.port);
    s.acceptor.open(ep.protocol());
    s.acceptor.set_option(asio::socket_base::reuse_address(true));
    s.acceptor.bind(ep);
    s.acceptor.listen(asio::socket_base::max_listen_connections);
}

tcp::endpoint http_server::local_endpoint() const { return state_->acceptor.local_endpoint(); }

void http_server::start() {
    auto s = state_;
    asio::co_spawn(s->acceptor.get_executor(), s->accept_loop(), asio::detached);
}

void http_server::stop() {
    auto s = state_;
    s->stopping = true;
    asio::post(s->acceptor.get_executor(), [s] {
        beast::error_code ignored;
        s->acceptor.close(ignored);
    });
    std::lock_guard lock(s->streams_mutex);
    for (auto* stream : s->streams) {
        // Each stream belongs to its own strand: close it there.
        asio::post(stream->get_executor(), [stream, s] {
            std::lock_guard inner(s->streams_mutex);
            for (auto* live : s->streams)
                if (live == stream) {
                    beast::error_code ignored;
                    stream->socket().cancel(ignored);
                }
        });
    }
}

std::size_t http_server::active_connections() const noexcept { return state_->connections; }

}  // namespace airlock::service
