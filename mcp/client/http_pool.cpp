#include "mcp/client/http_pool.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <spdlog/spdlog.h>

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace airlock::mcp {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using asio::as_tuple;
using asio::use_awaitable;
using clock_type = std::chrono::steady_clock;
using namespace asio::experimental::awaitable_operators;
using http_wire::connection;
using http_wire::exchange;
using http_wire::time_point;

namespace {

using kind = transport_error::kind;

// Error bodies are read only to be discarded or quoted; a server that sends more is not telling
// us anything a person needs.
constexpr std::size_t max_discarded_body_bytes = 64 * 1024;
constexpr std::uint32_t max_header_bytes = 64 * 1024;

// A pooled connection may have been closed by the server while it sat idle. Reading one byte
// without consuming it tells: nothing to read (EAGAIN) is the only state in which it can carry a
// request; EOF or unsolicited bytes mean it must not be reused.
bool idle_connection_usable(tcp::socket& s) {
    if (!s.is_open()) return false;
    char byte;
    auto n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

asio::awaitable<std::tuple<beast::error_code, std::size_t>> write_request(connection& c,
                                                                          http::request<http::string_body>& req,
                                                                          time_point deadline) {
    c.lowest().expires_at(deadline);
    co_return co_await http::async_write(*c.stream, req, as_tuple(use_awaitable));
}

asio::awaitable<beast::error_code> read_header(exchange& ex, time_point deadline) {
    auto& c = *ex.conn;
    c.lowest().expires_at(deadline);
    auto [ec, n] = co_await http::async_read_header(*c.stream, c.buffer, *ex.parser, as_tuple(use_awaitable));
    co_return ec;
}

}  // namespace

// ---------------------------------------------------------------- wire pieces

namespace http_wire {

beast::tcp_stream& connection::lowest() { return stream->next_layer(); }

void connection::close() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
}

unsigned exchange::status() const { return parser->get().result_int(); }
std::string_view exchange::content_type() const { return parser->get()[http::field::content_type]; }
std::string_view exchange::field(std::string_view name) const { return parser->get()[name]; }

http_headers exchange::headers() const {
    http_headers h;
    for (auto const& f : parser->get()) h.add(f.name_string(), f.value());
    return h;
}

asio::awaitable<std::tuple<beast::error_code, std::size_t>> read_body_some(exchange& ex, char* buf, std::size_t size,
                                                                           time_point deadline) {
    auto& c = *ex.conn;
    auto& body = ex.parser->get().body();
    body.data = buf;
    body.size = size;
    c.lowest().expires_at(deadline);
    auto [ec, n] = co_await http::async_read_some(*c.stream, c.buffer, *ex.parser, as_tuple(use_awaitable));
    // need_buffer only says our buffer is full; the caller reads again.
    if (ec == http::error::need_buffer) ec = {};
    co_return std::tuple{ec, size - body.size};
}

asio::awaitable<body_read> read_body(exchange& ex, std::size_t limit, time_point deadline) {
    body_read out;
    std::array<char, 16 * 1024> buf;
    while (!ex.parser->is_done()) {
        auto [ec, n] = co_await read_body_some(ex, buf.data(), buf.size(), deadline);
        if (out.text.size() + n > limit) {
            out.too_large = true;
            co_return out;
        }
        out.text.append(buf.data(), n);
        if (ec) {
            out.ec = ec;
            co_return out;
        }
    }
    co_return out;
}

std::string describe(beast::error_code const& ec) {
    if (ec == beast::error::timeout) return "timed out";
    return ec.message();
}

}  // namespace http_wire

using http_wire::describe;

// ---------------------------------------------------------------- pool

http_pool::http_pool(asio::strand<asio::any_io_executor> strand, http_pool_options opts)
    : strand_(std::move(strand)), opts_(std::move(opts)), endpoint_(parse_http_url(opts_.url)) {
    if (!endpoint_) {
        setup_problem_ = endpoint_.error().message;
        return;
    }
    for (auto const& [name, value] : opts_.headers) {
        if (!is_header_name(name)) {
            setup_problem_ = "configured header name '" + name + "' is not an HTTP token";
            return;
        }
        // The value is a credential: say which header is wrong, never what it holds.
        if (value.find_first_of("\r\n") != std::string::npos || value.find('\0') != std::string::npos) {
            setup_problem_ = "configured header '" + name + "' has a value with a line break or NUL";
            return;
        }
    }
    if (endpoint_->scheme == "https") setup_tls();
}

void http_pool::setup_tls() {
    tls_ctx_.emplace(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(tls_ctx_->native_handle(), TLS1_2_VERSION);
    beast::error_code ec;
    if (opts_.verify_peer) {
        tls_ctx_->set_verify_mode(ssl::verify_peer, ec);
        tls_ctx_->set_default_verify_paths(ec);
        if (ec) spdlog::warn("{}: cannot load the system CA store: {}", opts_.log_name, ec.message());
        ec.clear();
    } else {
        spdlog::warn("{}: TLS peer verification is OFF for {}", opts_.log_name, where());
        tls_ctx_->set_verify_mode(ssl::verify_none, ec);
    }
    if (opts_.ca_file) {
        tls_ctx_->load_verify_file(*opts_.ca_file, ec);
        if (ec) setup_problem_ = "cannot load CA file '" + *opts_.ca_file + "': " + ec.message();
    }
}

std::string http_pool::where() const { return endpoint().scheme + "://" + endpoint().host_header; }

asio::awaitable<transport_result<std::unique_ptr<connection>>> http_pool::async_connect(time_point deadline) {
    auto const& e = endpoint();
    auto connect_deadline = std::min(deadline, clock_type::now() + opts_.connect_timeout);

    tcp::resolver resolver(strand_);
    asio::steady_timer timer(strand_, connect_deadline);
    // GCC 12 mishandles temporaries inside a co_await expression: every argument is a named local.
    std::string service = std::to_string(e.port);
    auto resolving = resolver.async_resolve(e.host, service, as_tuple(use_awaitable));
    auto timing_out = timer.async_wait(as_tuple(use_awaitable));
    auto raced = co_await (std::move(resolving) || std::move(timing_out));
    if (raced.index() == 1) co_return transport_fault(kind::not_sent, "resolving " + e.host + " timed out");
    auto [rec, results] = std::get<0>(std::move(raced));
    if (rec) co_return transport_fault(kind::not_sent, "cannot resolve " + e.host + ": " + rec.message());

    // The addresses checked are the addresses connected to: no second lookup can swap them.
    std::vector<tcp::endpoint> allowed;
    std::string refused;
    for (auto const& r : results) {
        auto addr = r.endpoint().address();
        if (!opts_.allow_address || opts_.allow_address(addr)) {
            allowed.push_back(r.endpoint());
        } else {
            refused += (refused.empty() ? "" : ", ") + addr.to_string();
        }
    }
    if (allowed.empty())
        co_return transport_fault(kind::not_sent, "no address of " + e.host + " may be connected to (refused by the egress check: " +
                                           refused + ")");

    auto c = std::make_unique<connection>();
    beast::tcp_stream stream(strand_);
    stream.expires_at(connect_deadline);
    auto [cec, connected] = co_await stream.async_connect(allowed, as_tuple(use_awaitable));
    if (cec) co_return transport_fault(kind::not_sent, "cannot connect to " + where() + ": " + describe(cec));
    stream.socket().set_option(tcp::no_delay(true), cec);

    if (!tls_ctx_) {
        c->stream = std::make_unique<any_stream_of<beast::tcp_stream>>(std::move(stream));
        co_return c;
    }
    auto secured = std::make_unique<any_stream_of<beast::ssl_stream<beast::tcp_stream>>>(std::move(stream), *tls_ctx_);
    auto& tls = secured->get();
    auto* handle = tls.native_handle();
    boost::system::error_code not_ip;
    asio::ip::make_address(e.host, not_ip);
    // SNI carries host names only (RFC 6066); an IP literal is verified against the
    // certificate's IP entries instead.
    if (not_ip && !SSL_set_tlsext_host_name(handle, e.host.c_str()))
        co_return transport_fault(kind::not_sent, "cannot set the TLS server name for " + e.host);
    if (opts_.verify_peer) tls.set_verify_callback(ssl::host_name_verification(e.host));
    beast::get_lowest_layer(tls).expires_at(connect_deadline);
    auto [hec] = co_await tls.async_handshake(ssl::stream_base::client, as_tuple(use_awaitable));
    if (hec) co_return transport_fault(kind::not_sent, "TLS handshake with " + where() + " failed: " + describe(hec));
    c->stream = std::move(secured);
    co_return c;
}

asio::awaitable<transport_result<std::unique_ptr<connection>>> http_pool::async_acquire(time_point deadline) {
    while (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        idle_count_ = idle_.size();
        if (c->buffer.size() == 0 && idle_connection_usable(c->lowest().socket())) {
            c->reused = true;
            co_return c;
        }
        c->close();
    }
    co_return co_await async_connect(deadline);
}

void http_pool::release(exchange& ex) {
    if (!ex.conn) return;
    auto c = std::move(ex.conn);
    auto const& p = *ex.parser;
    if (!closed_ && p.is_done() && p.get().keep_alive() && c->buffer.size() == 0 && idle_.size() < opts_.pool_size) {
        idle_.push_back(std::move(c));
        idle_count_ = idle_.size();
        return;
    }
    c->close();
}

asio::awaitable<transport_result<exchange>> http_pool::async_send(http_wire::outgoing out, time_point deadline) {
    auto const& e = endpoint();
    std::string target = out.target.empty() ? e.target : std::move(out.target);
    http::request<http::string_body> req{out.verb, target, 11};
    req.set(http::field::host, e.host_header);
    req.set(http::field::user_agent, "airlock");
    for (auto const& [n, v] : opts_.headers) req.set(n, v);
    for (auto const& f : out.headers) req.set(f.name, f.value);
    if (out.verb == http::verb::post) {
        req.body() = std::move(out.body);
        req.prepare_payload();
    }

    for (std::size_t attempt = 0;; ++attempt) {
        auto c = co_await async_acquire(deadline);
        if (!c) co_return c.error();
        auto [wec, written] = co_await write_request(**c, req, deadline);
        if (wec) {
            bool reused = (*c)->reused;
            (*c)->close();
            if (written == 0 && reused && attempt <= opts_.pool_size) continue;
            if (written == 0) co_return transport_fault(kind::not_sent, "cannot send to " + where() + ": " + describe(wec));
            co_return transport_fault(wec == beast::error::timeout ? kind::deadline : kind::no_reply,
                           "sending to " + where() + " failed part-way: " + describe(wec));
        }
        exchange ex{std::move(*c), std::make_unique<http_wire::response_parser>()};
        ex.parser->header_limit(max_header_bytes);
        ex.parser->body_limit(boost::none);  // bounded by the readers: per event, or a body limit
        auto rec = co_await read_header(ex, deadline);
        if (rec) {
            ex.conn->close();
            if (rec == beast::error::timeout)
                co_return transport_fault(kind::deadline, "no response from " + where() + " within the deadline");
            co_return transport_fault(kind::no_reply, "the connection to " + where() + " failed after the request was sent: " +
                                               describe(rec));
        }
        co_return ex;
    }
}

asio::awaitable<void> http_pool::async_discard_body(exchange& ex, time_point deadline) {
    auto r = co_await http_wire::read_body(ex, max_discarded_body_bytes, deadline);
    if (r.ec || r.too_large) {
        ex.conn->close();
        ex.conn.reset();
        co_return;
    }
    release(ex);
}

void http_pool::close() {
    closed_ = true;
    for (auto& c : idle_) c->close();
    idle_.clear();
    idle_count_ = 0;
}

}  // namespace airlock::mcp
