#include "service/http/http_server.hpp"

#include "service/http/request_rules.hpp"
#include "mcp/client/any_stream.hpp"
#include "mcp/client/spawn_logged.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <spdlog/spdlog.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <algorithm>
#include <list>
#include <unordered_map>
#include <mutex>

namespace airlock::service {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using asio::as_tuple;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

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

std::shared_ptr<http_body_channel> make_body_channel(asio::any_io_executor executor, std::size_t capacity) {
    return std::make_shared<http_body_channel>(std::move(executor), capacity);
}

namespace {

// Set by the server on each request it read; never taken from the client.
constexpr std::string_view client_address_field = "Airlock-Client-Address";

}  // namespace

std::string_view client_address(http_request const& req) {
    auto it = req.find(client_address_field);
    return it == req.end() ? std::string_view{} : std::string_view(it->value().data(), it->value().size());
}

namespace {

// TCP and unix-socket connections share one stream type: a generic stream socket holds either. Plain
// and TLS streams are served through one type-erased stream over it (mcp/client/any_stream.hpp), so
// the request loop and Beast's HTTP operations are compiled once, not once per kind of stream.
using generic_protocol = asio::generic::stream_protocol;
using plain_stream = beast::basic_stream<generic_protocol>;
using tls_stream = beast::ssl_stream<plain_stream>;
using stream_type = mcp::any_stream<plain_stream>;

[[noreturn]] void fail(boost::system::error_code ec, std::string const& what) { throw boost::system::system_error(ec, what); }

// What stop() may do to a connection. Touched only on the connection's strand, but for the
// atomics, which the accept path reads to choose an idle connection to close.
struct connection {
    enum class phase { reading, handling, streaming };

    explicit connection(asio::any_io_executor ex) : strand(ex), stop_timer(ex) {}

    asio::any_io_executor strand;
    phase now = phase::reading;
    bool long_lived = false;
    std::function<void()> cancel_io;  // cancels the socket's pending operations; empty once the socket is gone
    asio::steady_timer stop_timer;    // cancelled by stop() to end a long-lived stream
    std::string peer;                 // the peer's IP address, or "unix"
    std::string client_key;           // what the per-client cap counts it under; empty: not counted
    bool over_capacity = false;       // in a reserved slot: one request, and only those served over capacity
    std::string refusal;              // over capacity: what its 503 says
    // Waiting for the first byte of a request, nothing of it read: closing it loses nothing.
    std::atomic<bool> idle{false};
    std::atomic<std::chrono::steady_clock::rep> idle_since{0};
    std::atomic<bool> chosen{false};  // picked to be closed to make room; not picked twice
    bool pipelined = false;    // the client sent a request before the answer to the previous one
    bool input_ended = false;  // ...and then ended its input: what it sent is answered, then the connection closes
};

std::string peer_of(generic_protocol::socket const& socket) {
    boost::system::error_code ec;
    auto g = socket.remote_endpoint(ec);
    if (ec) return "unknown";
    if (g.protocol().family() == AF_UNIX) return "unix";
    tcp::endpoint out;
    if (g.size() > out.capacity()) return "unknown";
    std::memcpy(out.data(), g.data(), g.size());
    out.resize(g.size());
    auto a = out.address();
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).to_string();
    return a.to_string();
}

// What the per-client cap counts a peer under: its address, an IPv6 one by its /64 (what one host
// or site is usually given); empty for a peer the cap leaves alone: a unix-socket peer and a
// trusted proxy, behind which every client shares one address, and a peer of unknown address.
std::string client_key_of(std::string const& peer, proxy_trust const& trusted) {
    if (peer == "unix") return {};
    boost::system::error_code ec;
    auto a = asio::ip::make_address(peer, ec);
    if (ec) return {};
    for (auto const& n : trusted.networks)
        if (contains(n, a)) return {};
    if (!a.is_v6()) return peer;
    auto bytes = a.to_v6().to_bytes();
    std::fill(bytes.begin() + 8, bytes.end(), 0);
    return asio::ip::make_address_v6(bytes).to_string() + "/64";
}

// The client behind the proxies this server trusts (forwarded.hpp), set as the request's client address.
void set_client_address(http_request& req, std::string const& peer, proxy_trust const& trusted) {
    std::vector<std::string_view> forwarded, xff;
    if (!trusted.empty()) {
        for (auto const& f : req) {
            if (f.name() == http::field::forwarded) forwarded.emplace_back(f.value().data(), f.value().size());
            else if (beast::iequals(f.name_string(), "X-Forwarded-For")) xff.emplace_back(f.value().data(), f.value().size());
        }
    }
    auto who = effective_client_address(peer, forwarded, xff, trusted);
    req.erase(client_address_field);
    req.set(client_address_field, who);
}

void end_stream(http_stream& st, bool completed) {
    if (st.body) st.body->close();
    if (st.on_end) {
        auto f = std::move(st.on_end);
        st.on_end = nullptr;
        f(completed);
    }
}

}  // namespace

// Reserved slots (http_server_options::reserved_connections) one client address may hold at once.
constexpr std::size_t reserved_per_client = 2;

struct http_server::state : std::enable_shared_from_this<state> {
    asio::io_context& ioc;
    http_server_options options;
    http_handler handler;
    asio::basic_socket_acceptor<generic_protocol> acceptor;
    std::shared_ptr<ssl::context> tls;
    std::optional<std::filesystem::path> bound_path;  // the unix socket file we created
    std::atomic<std::size_t> connections{0};
    std::atomic<bool> stopping{false};
    std::mutex connections_mutex;
    std::list<std::shared_ptr<connection>> live;
    struct client_count {
        std::size_t connections = 0;
        std::size_t reserved = 0;  // of them in reserved slots
    };
    std::unordered_map<std::string, client_count> per_client;  // by client_key; under connections_mutex
    std::size_t reserved_in_use = 0;                           // under connections_mutex

    state(asio::io_context& ioc_, http_server_options opts, http_handler h)
        : ioc(ioc_), options(std::move(opts)), handler(std::move(h)), acceptor(asio::make_strand(ioc_)) {}

    ~state() { remove_socket_file(); }

    void remove_socket_file() {
        if (!bound_path) return;
        ::unlink(bound_path->c_str());
        bound_path.reset();
    }

    // ---------------------------------------------------------------- listening

    void load_tls() {
        auto const& files = *options.tls;
        for (auto const* p : {&files.cert_file, &files.key_file}) {
            std::error_code fec;
            if (!std::filesystem::is_regular_file(*p, fec))
                fail(make_error_code(boost::system::errc::no_such_file_or_directory),
                     "TLS " + std::string(p == &files.cert_file ? "certificate" : "key") + " file '" + p->string() + "'");
        }
        auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
        ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                         ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
        boost::system::error_code ec;
        ctx->use_certificate_chain_file(files.cert_file.string(), ec);
        if (ec) fail(ec, "TLS certificate file '" + files.cert_file.string() + "' is not a PEM certificate chain");
        auto mismatch = [&] {
            fail(make_error_code(boost::system::errc::invalid_argument),
                 "TLS key file '" + files.key_file.string() + "' does not match certificate '" +
                     files.cert_file.string() + "'");
        };
        ctx->use_private_key_file(files.key_file.string(), ssl::context::pem, ec);
        if (ec && ec.category() == asio::error::get_ssl_category() &&
            ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH)
            mismatch();
        if (ec) fail(ec, "TLS key file '" + files.key_file.string() + "' is not a PEM private key");
        if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) mismatch();
        tls = std::move(ctx);
    }

    // A socket file left by a process that died is removed; one that still answers is in use, and
    // anything that is not a socket is never deleted.
    void clear_stale_socket(std::filesystem::path const& path) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) return;
        if (!S_ISSOCK(st.st_mode))
            fail(make_error_code(boost::system::errc::file_exists), "unix socket path '" + path.string() + "' exists and is not a socket");
        asio::io_context probe_ctx;
        asio::local::stream_protocol::socket probe(probe_ctx);
        boost::system::error_code ec;
        probe.connect(asio::local::stream_protocol::endpoint(path.string()), ec);
        if (!ec) fail(make_error_code(boost::system::errc::address_in_use), "unix socket '" + path.string() + "'");
        ::unlink(path.c_str());
    }

    void listen() {
        if (options.tls) load_tls();
        boost::system::error_code ec;
        if (options.unix_socket) {
            auto const& path = *options.unix_socket;
            std::string where = "unix socket '" + path.string() + "'";
            if (path.string().size() >= sizeof(sockaddr_un{}.sun_path))
                fail(make_error_code(boost::system::errc::filename_too_long), where);
            clear_stale_socket(path);
            generic_protocol::endpoint ep{asio::local::stream_protocol::endpoint(path.string())};
            acceptor.open(ep.protocol(), ec);
            if (!ec) acceptor.bind(ep, ec);
            if (ec) {
                acceptor.close();
                fail(ec, where);
            }
            bound_path = path;
            // Before listen(): nobody can connect yet, so nobody slips in under the umask's mode.
            if (::chmod(path.c_str(), static_cast<mode_t>(options.unix_socket_mode)) != 0) {
                ec.assign(errno, boost::system::system_category());
                acceptor.close();
                remove_socket_file();
                fail(ec, where + ": cannot set its mode");
            }
            acceptor.listen(asio::socket_base::max_listen_connections, ec);
            if (ec) {
                acceptor.close();
                remove_socket_file();
                fail(ec, where);
            }
            return;
        }
        std::string where = options.host + ":" + std::to_string(options.port);
        auto address = asio::ip::make_address(options.host, ec);
        if (ec) fail(ec, "listen address '" + options.host + "'");
        generic_protocol::endpoint ep{tcp::endpoint(address, options.port)};
        acceptor.open(ep.protocol(), ec);
        if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
        if (!ec) acceptor.bind(ep, ec);
        if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
        if (ec) {
            boost::system::error_code ignored;
            acceptor.close(ignored);
            fail(ec, where);
        }
    }

    tcp::endpoint local_tcp_endpoint() const {
        tcp::endpoint out;
        if (options.unix_socket || !acceptor.is_open()) return out;
        boost::system::error_code ec;
        auto g = acceptor.local_endpoint(ec);
        if (ec || g.size() > out.capacity()) return out;
        std::memcpy(out.data(), g.data(), g.size());
        out.resize(g.size());
        return out;
    }

    // ---------------------------------------------------------------- accepting

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

    // The connection idle longest among those `c` may displace (of its client only, when
    // `same_client`), marked chosen; null when none is idle. Called with connections_mutex held.
    std::shared_ptr<connection> choose_idle(connection const& c, bool same_client) {
        std::shared_ptr<connection> oldest;
        auto oldest_since = std::numeric_limits<std::chrono::steady_clock::rep>::max();
        for (auto const& other : live) {
            if (other.get() == &c || !other->idle || other->chosen || other->over_capacity) continue;
            if (same_client && other->client_key != c.client_key) continue;
            auto since = other->idle_since.load();
            if (since < oldest_since) {
                oldest = other;
                oldest_since = since;
            }
        }
        if (oldest) oldest->chosen = true;
        return oldest;
    }

    // Closes a connection chosen by choose_idle, on its strand, if it is still idle there (a
    // request may have begun meanwhile: then it stays, and the newcomer is let in all the same).
    static void close_idle(std::shared_ptr<connection> victim) {
        auto strand = victim->strand;
        asio::post(strand, [victim = std::move(victim)] {
            if (victim->idle && victim->cancel_io) {
                spdlog::debug("closing an idle connection from {} to make room", victim->peer);
                victim->cancel_io();
            } else {
                victim->chosen = false;
            }
        });
    }

    // Counts the new connection in; returns the refusal to send when it is over a cap with no
    // idle connection to displace and no reserved slot free, and sets c.over_capacity when it takes a slot.
    std::optional<std::string> admit(std::shared_ptr<connection> const& cp, std::list<std::shared_ptr<connection>>::iterator& it) {
        auto& c = *cp;
        std::shared_ptr<connection> victim;
        std::optional<std::string> over;
        {
            std::lock_guard lock(connections_mutex);
            it = live.insert(live.end(), cp);
            std::size_t const now = ++connections;
            auto* mine = c.client_key.empty() ? nullptr : &per_client[c.client_key];
            if (mine) ++mine->connections;
            // The client's own idle connections make room for it first; only when the server as a
            // whole is full does anyone else's go.
            if (mine && options.max_connections_per_client > 0 && mine->connections > options.max_connections_per_client) {
                victim = choose_idle(c, true);
                if (!victim) over = "too many connections from this client address; close some or retry later";
            }
            if (!over && !victim && now > options.max_connections + reserved_in_use) {
                victim = choose_idle(c, false);
                if (!victim) over = "too many connections; retry later";
            }
            // A client may not take every reserved slot (with slow requests) to keep probes out.
            if (over && options.served_over_capacity && reserved_in_use < options.reserved_connections &&
                (!mine || mine->reserved < reserved_per_client)) {
                ++reserved_in_use;
                if (mine) ++mine->reserved;
                c.over_capacity = true;
                c.refusal = *over;
            }
        }
        if (victim) close_idle(std::move(victim));
        return c.over_capacity ? std::nullopt : over;
    }

    asio::awaitable<void> session(generic_protocol::socket socket) {
        auto c = std::make_shared<connection>(socket.get_executor());
        c->peer = peer_of(socket);
        if (options.max_connections_per_client > 0) c->client_key = client_key_of(c->peer, options.trusted);
        std::list<std::shared_ptr<connection>>::iterator it;
        auto refusal = admit(c, it);
        struct guard {
            state& s;
            std::list<std::shared_ptr<connection>>::iterator it;
            ~guard() {
                auto& c = **it;
                c.cancel_io = nullptr;
                --s.connections;
                std::lock_guard lock(s.connections_mutex);
                if (auto n = s.per_client.find(c.client_key); n != s.per_client.end()) {
                    if (c.over_capacity) --n->second.reserved;
                    if (--n->second.connections == 0) s.per_client.erase(n);
                }
                if (c.over_capacity) --s.reserved_in_use;
                s.live.erase(it);
            }
        } g{*this, it};

        if (!options.unix_socket) {
            // Without it, a response written in pieces (an SSE head, then each event) waits for
            // the client's delayed ACK before the next piece leaves: tens of milliseconds.
            boost::system::error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);
        }
        auto stream = open_stream(std::move(socket));
        auto& low = stream->next_layer();
        c->cancel_io = [&low] {
            boost::system::error_code ignored;
            low.socket().cancel(ignored);
        };
        if (tls) {
            low.expires_after(read_timeout_of(*c));
            auto& secured = static_cast<mcp::any_stream_of<tls_stream>&>(*stream).get();
            auto [hec] = co_await secured.async_handshake(ssl::stream_base::server, as_tuple(use_awaitable));
            if (hec) {
                spdlog::debug("TLS handshake failed: {}", hec.message());
                c->cancel_io = nullptr;
                co_return;
            }
        }
        bool clean = co_await serve(*stream, *c, refusal);
        // TLS: close_notify, when the exchange ended cleanly, tells the client the body was not
        // truncated by an attacker. Plain: the sending side is shut down, cleanly or not.
        if (tls && clean) low.expires_after(options.write_timeout);
        if (clean || !tls) co_await stream->async_shutdown(as_tuple(use_awaitable));
        c->cancel_io = nullptr;
    }

    // The connection's stream: TLS over the socket when the server has a TLS context, else the socket's own.
    std::unique_ptr<stream_type> open_stream(generic_protocol::socket socket) {
        plain_stream plain(std::move(socket));
        if (tls) return std::make_unique<mcp::any_stream_of<tls_stream>>(std::move(plain), *tls);
        return std::make_unique<mcp::any_stream_of<plain_stream>>(std::move(plain));
    }

    // ---------------------------------------------------------------- one connection

    // The server's own refusal of a request to `target`, in the route's error shape (refusal_body).
    http_response refusal_for(std::string_view target, http::status status, std::string_view code, std::string message) const {
        if (options.refusal_body)
            if (auto body = options.refusal_body(target, message)) return json_response(status, std::move(*body), 11, false);
        return json_error(status, code, message, 11, false);
    }

    // A probe sends its request at once; a reserved slot is not held longer by one that does not.
    std::chrono::milliseconds read_timeout_of(connection const& c) const {
        return c.over_capacity ? std::min(options.read_timeout, std::chrono::milliseconds(2000)) : options.read_timeout;
    }

    asio::awaitable<void> write_and_close(stream_type& stream, http_response res) {
        res.keep_alive(false);
        beast::get_lowest_layer(stream).expires_after(options.write_timeout);
        co_await http::async_write(stream, res, as_tuple(use_awaitable));
    }

    // Reads whatever the client sends while a handler runs or a stream is written: a pipelined
    // request is kept in `buffer` for the loop, and the end of the input (or an error) means the
    // client is gone. Returns only then, or when the client sends more than a request may hold.
    // A client that has pipelined requests and then ends its input (shuts down its sending side)
    // is not gone: it waits for the answers, so they are all served and the connection closes
    // after the last; watching goes on without reading (until the race ends it). With one request
    // at a time, the end of input looks the same as a client that closed its connection, and is
    // taken for that (which cancels a modern MCP request): nothing says the client still listens.
    asio::awaitable<void> watch_peer(stream_type& stream, beast::flat_buffer& buffer, connection& c) {
        std::size_t const limit = options.header_limit + options.body_limit;
        while (!c.input_ended) {
            if (buffer.size() >= limit) co_return;
            auto room = std::min<std::size_t>(4096, limit - buffer.size());
            auto [ec, n] = co_await stream.async_read_some(buffer.prepare(room), as_tuple(use_awaitable));
            if (ec == asio::error::eof && (c.pipelined || buffer.size() > 0)) {
                c.input_ended = true;
                break;
            }
            if (ec) co_return;
            buffer.commit(n);
            c.pipelined = true;
        }
        asio::steady_timer forever(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
        co_await forever.async_wait(as_tuple(use_awaitable));
    }

    // Runs the handler, keeping its reply even when the race against watch_peer is lost (so a stream
    // it created can be ended), and turning an exception into a logged 500.
    asio::awaitable<void> run_handler(http_request& req, std::optional<http_reply>& out) {
        try {
            out.emplace(co_await handler(req));
        } catch (boost::system::system_error const& e) {
            // A handler that goes on awaiting after the client left is told so by an exception.
            if (e.code() == asio::error::operation_aborted)
                spdlog::debug("request handler stopped: the client went away");
            else
                spdlog::error("request handler failed: {}", e.what());
            out.emplace(json_error(http::status::internal_server_error, "internal_error", "the request could not be served",
                                   req.version(), false));
        } catch (std::exception const& e) {
            spdlog::error("request handler failed: {}", e.what());
            auto res = json_error(http::status::internal_server_error, "internal_error", "the request could not be served",
                                  req.version(), false);
            out.emplace(std::move(res));
        }
    }

    asio::awaitable<void> wait_for_stop(connection& c) {
        if (stopping && c.long_lived) co_return;
        c.stop_timer.expires_at(asio::steady_timer::time_point::max());
        co_await c.stop_timer.async_wait(as_tuple(use_awaitable));
    }

    asio::awaitable<bool> pump_body(stream_type& stream, http_stream& st, bool chunked) {
        auto& low = beast::get_lowest_layer(stream);
        for (;;) {
            auto [ec, chunk] = co_await st.body->async_receive(as_tuple(use_awaitable));
            if (ec == asio::error::eof) {
                if (!chunked) co_return true;
                low.expires_after(options.write_timeout);
                auto last = http::make_chunk_last();
                auto [wec, n] = co_await asio::async_write(stream, last, as_tuple(use_awaitable));
                co_return !wec;
            }
            if (ec) co_return false;
            if (chunk.empty()) continue;  // an empty chunk would end a chunked body
            low.expires_after(options.write_timeout);
            if (chunked) {
                auto framed = http::make_chunk(asio::buffer(chunk));
                auto [wec, n] = co_await asio::async_write(stream, framed, as_tuple(use_awaitable));
                if (wec) co_return false;
            } else {
                auto [wec, n] = co_await asio::async_write(stream, asio::buffer(chunk), as_tuple(use_awaitable));
                if (wec) co_return false;
            }
        }
    }

    // Writes a streamed response; true when the connection may serve another request.
    asio::awaitable<bool> serve_stream(stream_type& stream, beast::flat_buffer& buffer, http_stream& st, unsigned version,
                                       bool keep_alive, connection& c) {
        auto& low = beast::get_lowest_layer(stream);
        if (!st.body) {
            end_stream(st, false);
            co_return false;
        }
        bool chunked = version >= 11;
        st.head.version(version);
        // A reverse proxy that buffers would hold every event back until the stream ends.
        if (st.head.find("X-Accel-Buffering") == st.head.end()) st.head.set("X-Accel-Buffering", "no");
        st.head.keep_alive(keep_alive && chunked && st.head.keep_alive());
        if (chunked) st.head.chunked(true);
        http::response_serializer<http::empty_body> sr{st.head};
        low.expires_after(options.write_timeout);
        auto [hec, hn] = co_await http::async_write_header(stream, sr, as_tuple(use_awaitable));
        if (hec) {
            end_stream(st, false);
            co_return false;
        }
        // The stream's lifetime is its own: no read deadline while it lasts; each write has one.
        low.expires_never();
        c.now = connection::phase::streaming;
        c.long_lived = st.long_lived;
        auto outcome = co_await (pump_body(stream, st, chunked) || watch_peer(stream, buffer, c) || wait_for_stop(c));
        c.now = connection::phase::handling;
        c.long_lived = false;
        bool completed = outcome.index() == 0 && std::get<0>(outcome);
        end_stream(st, completed);
        co_return completed && st.head.keep_alive() && !stopping;
    }

    // A request read whole; or none, when the connection ends instead: `clean` after a refusal the
    // server wrote or an input that ended between requests, not after an I/O failure.
    struct next_request {
        std::optional<http_request> req;
        bool clean = true;
    };

    // Reads the connection's next request, refusing (and writing the refusal of) one whose framing,
    // size or syntax the server does not take.
    asio::awaitable<next_request> read_request(stream_type& stream, beast::flat_buffer& buffer, connection& c, bool first) {
        auto& low = beast::get_lowest_layer(stream);
        auto const read_timeout = read_timeout_of(c);
        http::request_parser<http::string_body> parser;
        parser.header_limit(static_cast<std::uint32_t>(options.header_limit));
        parser.body_limit(options.body_limit);
        // Until the first byte of a request arrives the connection is idle: the idle deadline
        // applies (the read deadline, to a new connection that has sent nothing yet), and it may
        // be closed to make room for another (admit). A pipelined request is not waited for.
        if (buffer.size() == 0) {
            if (c.input_ended) co_return next_request{};
            low.expires_after(first ? read_timeout : options.idle_timeout);
            if (!c.over_capacity) {
                c.idle_since = std::chrono::steady_clock::now().time_since_epoch().count();
                c.idle = true;
            }
            auto [iec, in] = co_await stream.async_read_some(buffer.prepare(16 * 1024), as_tuple(use_awaitable));
            c.idle = false;
            if (iec) co_return next_request{std::nullopt, false};
            buffer.commit(in);
        }
        low.expires_after(read_timeout);
        auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, as_tuple(use_awaitable));
        std::optional<framing_refusal> framing;
        if (!hec) framing = refuse_framing(parser.get());
        if (framing) {
            auto const t = parser.get().target();
            auto refusal = refusal_for({t.data(), t.size()}, framing->status, framing->code, std::string(framing->message));
            if (options.on_refused) options.on_refused(refusal.result_int());
            co_await write_and_close(stream, std::move(refusal));
            co_return next_request{};
        }
        if (!hec) {
            low.expires_after(read_timeout);
            auto [bec, bn] = co_await http::async_read(stream, buffer, parser, as_tuple(use_awaitable));
            hec = bec;
        }
        if (!hec) co_return next_request{parser.release(), true};
        if (hec == http::error::end_of_stream || hec == beast::error::timeout || hec == asio::error::connection_reset ||
            hec == asio::error::operation_aborted || stopping)
            co_return next_request{std::nullopt, false};
        auto refusal = refusal_of_unread(hec, parser, buffer);
        if (options.on_refused) options.on_refused(refusal.result_int());
        co_await write_and_close(stream, std::move(refusal));
        co_return next_request{};
    }

    // The refusal of a request the parser failed on: 431 and 413 over a limit, else 400.
    http_response refusal_of_unread(boost::system::error_code ec, http::request_parser<http::string_body> const& parser,
                                    beast::flat_buffer const& buffer) const {
        // Over a limit, the route asked for may want its own error shape. The parser has the
        // target once it has read the request line; headers too long to hold may have stopped it
        // before that, and then the bytes read tell it.
        auto const parsed = parser.get().target();
        std::string_view target(parsed.data(), parsed.size());
        if (target.empty()) {
            auto const read = buffer.cdata();
            target = request_line_target({static_cast<char const*>(read.data()), read.size()});
        }
        if (ec == http::error::header_limit)
            return refusal_for(target, http::status::request_header_fields_too_large, "header_too_large",
                               "request headers exceed " + std::to_string(options.header_limit) + " bytes");
        if (ec == http::error::body_limit)
            return refusal_for(target, http::status::payload_too_large, "body_too_large",
                               "request body exceeds " + std::to_string(options.body_limit) + " bytes");
        return json_error(http::status::bad_request, "bad_request", "malformed HTTP request: " + ec.message());
    }

    http_response refuse_over_capacity(std::string const& why) const {
        auto refusal = json_error(http::status::service_unavailable, "over_capacity", why, 11, false);
        refusal.set(http::field::retry_after, "1");
        if (options.on_refused) options.on_refused(refusal.result_int());
        return refusal;
    }

    // The request loop of one connection; true when it ended cleanly (the TLS close_notify is worth sending).
    asio::awaitable<bool> serve(stream_type& stream, connection& c, std::optional<std::string> const& over_capacity) {
        auto& low = beast::get_lowest_layer(stream);
        if (over_capacity) {
            co_await write_and_close(stream, refuse_over_capacity(*over_capacity));
            co_return true;
        }
        // Beast reads as much as the buffer's free capacity, and no less than 512 bytes: left to
        // itself, the buffer stays at 512 and a 4 MiB body takes 8,192 reads, each a syscall, a
        // timer update and a trip through the event loop.
        beast::flat_buffer buffer;
        buffer.reserve(16 * 1024);
        bool first = true;
        for (;;) {
            c.now = connection::phase::reading;
            if (stopping) co_return true;
            auto next = co_await read_request(stream, buffer, c, first);
            if (!next.req) co_return next.clean;
            first = false;
            auto& req = *next.req;
            if (buffer.size() > 0) c.pipelined = true;
            if (auto twice = repeated_singleton_field(req)) {
                auto refusal = json_error(http::status::bad_request, "repeated_header",
                                          "the request carries more than one " + std::string(*twice) + " header");
                if (options.on_refused) options.on_refused(refusal.result_int());
                co_await write_and_close(stream, std::move(refusal));
                co_return true;
            }
            if (c.over_capacity) {
                // In a reserved slot: the operations endpoints are answered, once; anything else waits its turn.
                if (!options.served_over_capacity(std::string_view(req.target().data(), req.target().size()))) {
                    co_await write_and_close(stream, refuse_over_capacity(c.refusal));
                    co_return true;
                }
                req.keep_alive(false);
            }
            set_client_address(req, c.peer, options.trusted);
            c.now = connection::phase::handling;
            low.expires_never();
            std::optional<http_reply> reply;
            auto outcome = co_await (run_handler(req, reply) || watch_peer(stream, buffer, c));
            if (outcome.index() == 1) {
                // The client left while its request was being served.
                if (reply)
                    if (auto* st = std::get_if<http_stream>(&*reply)) end_stream(*st, false);
                co_return false;
            }
            bool keep_alive = req.keep_alive() && !stopping;
            if (auto* res = std::get_if<http_response>(&*reply)) {
                res->version(req.version());
                res->keep_alive(keep_alive && res->keep_alive());
                low.expires_after(options.write_timeout);
                auto [wec, wn] = co_await http::async_write(stream, *res, as_tuple(use_awaitable));
                if (wec) co_return false;
                if (!res->keep_alive()) co_return true;
                continue;
            }
            auto& st = std::get<http_stream>(*reply);
            if (!co_await serve_stream(stream, buffer, st, req.version(), keep_alive, c)) co_return false;
        }
    }
};

http_server::http_server(asio::io_context& ioc, http_server_options options, http_handler handler)
    : state_(std::make_shared<state>(ioc, std::move(options), std::move(handler))) {}

http_server::http_server(asio::io_context& ioc, http_server_options options, http_response_handler handler)
    : http_server(ioc, std::move(options),
                  http_handler([h = std::move(handler)](http_request& req) -> asio::awaitable<http_reply> {
                      co_return http_reply(co_await h(req));
                  })) {}

http_server::~http_server() = default;

void http_server::listen() { state_->listen(); }

tcp::endpoint http_server::local_endpoint() const { return state_->local_tcp_endpoint(); }

void http_server::start() {
    auto s = state_;
    mcp::spawn_logged(s->acceptor.get_executor(), s->accept_loop(), "http accept loop");
}

void http_server::stop() {
    auto s = state_;
    s->stopping = true;
    asio::post(s->acceptor.get_executor(), [s] {
        boost::system::error_code ignored;
        s->acceptor.close(ignored);
        s->remove_socket_file();
    });
    std::lock_guard lock(s->connections_mutex);
    for (auto const& c : s->live) {
        // Each connection belongs to its own strand: act on it there, where its phase is known.
        asio::post(c->strand, [c] {
            if (c->now == connection::phase::reading) {
                if (c->cancel_io) c->cancel_io();
            } else if (c->now == connection::phase::streaming && c->long_lived) {
                c->stop_timer.cancel();
            }
        });
    }
}

std::size_t http_server::active_connections() const noexcept { return state_->connections; }

}  // namespace airlock::service
