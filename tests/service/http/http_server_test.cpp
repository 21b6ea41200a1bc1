#include "service/http/http_server.hpp"

#include "tests/service/mcp/endpoint_test_client.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <catch2/catch.hpp>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

using namespace airlock::service;
using namespace airlock::testing;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

// An http_server on its own io_context with two threads, stopped and joined when the test ends.
struct running_server {
    asio::io_context ioc{2};
    std::unique_ptr<http_server> server;
    std::vector<std::thread> threads;

    running_server(http_server_options o, http_handler h) {
        if (!o.unix_socket) o.port = 0;
        server = std::make_unique<http_server>(ioc, std::move(o), std::move(h));
        server->listen();
        server->start();
        for (int i = 0; i < 2; ++i) threads.emplace_back([this] { ioc.run(); });
    }
    ~running_server() {
        server->stop();
        ioc.stop();
        for (auto& t : threads) t.join();
    }
    std::uint16_t port() const { return server->local_endpoint().port(); }
};

std::string get(std::string const& path, bool close = true) {
    return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n";
}

// What the tests observe of a stream's producer and its end.
struct stream_probe {
    std::atomic<int> ended{0};
    std::atomic<bool> completed{false};
    std::atomic<bool> send_failed{false};
};

// A producer that sends `chunks` (with `pause` before each), then ends the body when `finish`,
// otherwise keeps sending "tick" every 20 ms until a send fails.
asio::awaitable<void> produce(std::shared_ptr<http_body_channel> body, std::vector<std::string> chunks,
                              std::chrono::milliseconds pause, bool finish, std::shared_ptr<stream_probe> probe) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (auto& c : chunks) {
        t.expires_after(pause);
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        auto [ec] = co_await body->async_send(boost::system::error_code{}, c, asio::as_tuple(asio::use_awaitable));
        if (ec) {
            probe->send_failed = true;
            co_return;
        }
    }
    if (finish) {
        std::string none;
        co_await body->async_send(asio::error::eof, std::move(none), asio::as_tuple(asio::use_awaitable));
        co_return;
    }
    for (int i = 0; i < 1000; ++i) {
        t.expires_after(20ms);
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        std::string tick = "tick";
        auto [ec] = co_await body->async_send(boost::system::error_code{}, std::move(tick), asio::as_tuple(asio::use_awaitable));
        if (ec) {
            probe->send_failed = true;
            co_return;
        }
    }
}

http_handler streaming_handler(std::shared_ptr<stream_probe> probe, std::vector<std::string> chunks,
                               std::chrono::milliseconds pause, bool finish, bool long_lived = false) {
    return [=](http_request& req) -> asio::awaitable<http_reply> {
        if (req.target() != "/stream") co_return json_response(http::status::ok, R"({"plain":true})", req.version());
        auto ex = co_await asio::this_coro::executor;
        http_stream st;
        st.head = http::response<http::empty_body>{http::status::ok, req.version()};
        st.head.set(http::field::content_type, "text/plain");
        st.body = make_body_channel(ex);
        st.long_lived = long_lived;
        st.on_end = [probe](bool completed) {
            probe->completed = completed;
            ++probe->ended;
        };
        asio::co_spawn(ex, produce(st.body, chunks, pause, finish, probe), asio::detached);
        co_return st;
    };
}

}  // namespace

TEST_CASE("a streamed response arrives chunked and ends when the producer ends its body") {
    auto probe = std::make_shared<stream_probe>();
    running_server s({}, streaming_handler(probe, {"one ", "two"}, 10ms, true));
    auto c = raw_connection::tcp(s.port());
    c.send(get("/stream"));
    REQUIRE(c.read_until(reply_complete));
    auto r = parse_reply(c.data);
    CHECK(r.status == 200);
    CHECK(header_value(r.head, "Transfer-Encoding") == "chunked");
    CHECK(r.body == "one two");
    REQUIRE(eventually([&] { return probe->ended == 1; }));
    CHECK(probe->completed);
}

TEST_CASE("a client that disconnects ends the stream at once and the producer's sends fail") {
    auto probe = std::make_shared<stream_probe>();
    running_server s({}, streaming_handler(probe, {"hello"}, 1ms, false));
    {
        auto c = raw_connection::tcp(s.port());
        c.send(get("/stream"));
        REQUIRE(c.read_until([](std::string const& d) { return d.find("hello") != std::string::npos; }));
    }
    REQUIRE(eventually([&] { return probe->ended == 1; }));
    CHECK_FALSE(probe->completed);
    CHECK(eventually([&] { return probe->send_failed.load(); }));
}

TEST_CASE("a connection serves another request after a streamed response") {
    auto probe = std::make_shared<stream_probe>();
    running_server s({}, streaming_handler(probe, {"streamed"}, 1ms, true));
    auto c = raw_connection::tcp(s.port());
    c.send(get("/stream", false));
    REQUIRE(c.read_until(reply_complete));
    CHECK(parse_reply(c.data).body == "streamed");
    c.data.clear();
    c.send(get("/plain"));
    REQUIRE(c.read_until(reply_complete));
    CHECK(parse_reply(c.data).body == R"({"plain":true})");
}

TEST_CASE("a stream outlives the read and idle deadlines of its connection") {
    http_server_options o;
    o.read_timeout = 100ms;
    o.idle_timeout = 100ms;
    auto probe = std::make_shared<stream_probe>();
    // Each chunk comes long after both deadlines would have closed an idle connection.
    running_server s(o, streaming_handler(probe, {"early ", "late"}, 400ms, true));
    auto c = raw_connection::tcp(s.port());
    c.send(get("/stream"));
    REQUIRE(c.read_until(reply_complete));
    CHECK(parse_reply(c.data).body == "early late");
    REQUIRE(eventually([&] { return probe->ended == 1; }));
    CHECK(probe->completed);
}

TEST_CASE("stop() closes a long-lived stream and tells its producer") {
    auto probe = std::make_shared<stream_probe>();
    running_server s({}, streaming_handler(probe, {"first"}, 1ms, false, true));
    auto c = raw_connection::tcp(s.port());
    c.send(get("/stream"));
    REQUIRE(c.read_until([](std::string const& d) { return d.find("first") != std::string::npos; }));
    s.server->stop();
    CHECK(c.read_to_close());
    REQUIRE(eventually([&] { return probe->ended == 1; }));
    CHECK_FALSE(probe->completed);
    CHECK(eventually([&] { return s.server->active_connections() == 0; }));
}

TEST_CASE("a handler that only answers whole responses still serves") {
    http_response_handler h = [](http_request& req) -> asio::awaitable<http_response> {
        co_return json_response(http::status::ok, R"({"whole":true})", req.version());
    };
    asio::io_context ioc;
    http_server_options o;
    o.port = 0;
    http_server server(ioc, o, h);
    server.listen();
    server.start();
    std::thread t([&] { ioc.run(); });
    auto c = raw_connection::tcp(server.local_endpoint().port());
    c.send(get("/"));
    bool got = c.read_until(reply_complete);
    server.stop();
    ioc.stop();
    t.join();
    REQUIRE(got);
    CHECK(parse_reply(c.data).body == R"({"whole":true})");
}

TEST_CASE("a request that repeats a one-value header such as Authorization is refused with 400, naming it") {
    std::atomic<int> handled{0};
    http_response_handler h = [&](http_request& req) -> asio::awaitable<http_response> {
        ++handled;
        co_return json_response(http::status::ok, R"({"whole":true})", req.version());
    };
    running_server s(http_server_options{}, http_handler([h](http_request& req) -> asio::awaitable<http_reply> {
                         co_return http_reply(co_await h(req));
                     }));
    auto c = raw_connection::tcp(s.port());
    c.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer right\r\nAuthorization: Bearer wrong\r\n"
           "Connection: close\r\n\r\n");
    REQUIRE(c.read_until(reply_complete));
    auto r = parse_reply(c.data);
    CHECK(r.status == 400);
    CHECK_THAT(r.body, Catch::Contains("repeated_header") && Catch::Contains("more than one Authorization header"));
    // The same request with one Authorization header is served.
    auto ok = raw_connection::tcp(s.port());
    ok.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer right\r\nConnection: close\r\n\r\n");
    REQUIRE(ok.read_until(reply_complete));
    CHECK(parse_reply(ok.data).status == 200);
    CHECK(handled == 1);
}

TEST_CASE("the server answers on a unix socket whose file has the configured mode") {
    temp_dir dir("airlock-http-unix");
    auto path = dir.path() / "airlock.sock";
    http_server_options o;
    o.unix_socket = path;
    o.unix_socket_mode = 0600;
    auto probe = std::make_shared<stream_probe>();
    {
        running_server s(o, streaming_handler(probe, {}, 1ms, true));
        struct stat st {};
        REQUIRE(::stat(path.c_str(), &st) == 0);
        CHECK(S_ISSOCK(st.st_mode));
        CHECK((st.st_mode & 0777) == 0600);
        auto c = raw_connection::unix_socket(path.string());
        c.send(get("/plain"));
        REQUIRE(c.read_until(reply_complete));
        CHECK(parse_reply(c.data).body == R"({"plain":true})");
    }
    CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("a unix socket path held by a regular file is refused, and the file is kept") {
    temp_dir dir("airlock-http-unix");
    auto path = dir.path() / "not-a-socket";
    std::ofstream(path) << "precious";
    asio::io_context ioc;
    http_server_options o;
    o.unix_socket = path;
    http_server server(ioc, o, streaming_handler(std::make_shared<stream_probe>(), {}, 1ms, true));
    CHECK_THROWS_WITH(server.listen(), Catch::Contains(path.string()));
    CHECK(std::filesystem::is_regular_file(path));
}

namespace {

// A self-signed certificate for 127.0.0.1 and its key, written as PEM files.
void write_self_signed(std::filesystem::path const& cert, std::filesystem::path const& key) {
    EVP_PKEY* pkey = EVP_EC_gen("P-256");
    REQUIRE(pkey != nullptr);
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pkey);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<unsigned char const*>("127.0.0.1"), -1, -1, 0);
    X509_set_issuer_name(x, name);
    REQUIRE(X509_sign(x, pkey, EVP_sha256()) > 0);
    FILE* f = std::fopen(cert.c_str(), "w");
    PEM_write_X509(f, x);
    std::fclose(f);
    f = std::fopen(key.c_str(), "w");
    PEM_write_PrivateKey(f, pkey, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    X509_free(x);
    EVP_PKEY_free(pkey);
}

// Sends `request` over TLS (no certificate check: the test made the certificate) and returns
// everything read until the server closes.
std::string tls_exchange(std::uint16_t port, std::string const& request) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    std::string out;
    if (SSL_connect(ssl) == 1) {
        SSL_write(ssl, request.data(), static_cast<int>(request.size()));
        char buf[4096];
        for (int i = 0; i < 10000; ++i) {
            int n = SSL_read(ssl, buf, sizeof buf);
            if (n <= 0) break;
            out.append(buf, static_cast<std::size_t>(n));
        }
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ::close(fd);
    return out;
}

}  // namespace

TEST_CASE("the server answers over TLS with a certificate and key read from files") {
    temp_dir dir("airlock-http-tls");
    http_server_options o;
    o.tls = http_tls_files{dir.path() / "cert.pem", dir.path() / "key.pem"};
    write_self_signed(o.tls->cert_file, o.tls->key_file);
    auto probe = std::make_shared<stream_probe>();
    running_server s(o, streaming_handler(probe, {"over ", "tls"}, 1ms, true));
    auto plain = parse_reply(tls_exchange(s.port(), get("/plain")));
    CHECK(plain.status == 200);
    CHECK(plain.body == R"({"plain":true})");
    auto streamed = parse_reply(tls_exchange(s.port(), get("/stream")));
    CHECK(streamed.body == "over tls");
    CHECK(streamed.complete);
}

TEST_CASE("a server whose TLS key file is missing refuses to start, naming the file") {
    temp_dir dir("airlock-http-tls");
    http_server_options o;
    o.port = 0;
    o.tls = http_tls_files{dir.path() / "cert.pem", dir.path() / "missing-key.pem"};
    write_self_signed(o.tls->cert_file, dir.path() / "key.pem");
    asio::io_context ioc;
    http_server server(ioc, o, streaming_handler(std::make_shared<stream_probe>(), {}, 1ms, true));
    CHECK_THROWS_WITH(server.listen(), Catch::Contains("missing-key.pem"));
}

TEST_CASE("a TLS key that does not belong to the certificate is refused at start") {
    temp_dir dir("airlock-http-tls");
    http_server_options o;
    o.port = 0;
    o.tls = http_tls_files{dir.path() / "cert.pem", dir.path() / "other-key.pem"};
    write_self_signed(o.tls->cert_file, dir.path() / "key.pem");
    write_self_signed(dir.path() / "other-cert.pem", dir.path() / "other-key.pem");
    asio::io_context ioc;
    http_server server(ioc, o, streaming_handler(std::make_shared<stream_probe>(), {}, 1ms, true));
    CHECK_THROWS_WITH(server.listen(), Catch::Contains("does not match"));
}

// ---------------------------------------------------------------- connection caps

namespace {

bool operations_path(std::string_view target) { return target == "/healthz" || target == "/readyz"; }

// The limits of the cap tests: small, so a flood well beyond them stays quick.
http_server_options capped(std::size_t max_connections, std::size_t per_client) {
    http_server_options o;
    o.max_connections = max_connections;
    o.max_connections_per_client = per_client;
    o.served_over_capacity = operations_path;
    return o;
}

// Answers {"path":...} at once, but holds /hold until `release` is set (polling, bounded).
http_handler path_handler(std::shared_ptr<std::atomic<bool>> release = std::make_shared<std::atomic<bool>>(false),
                          std::shared_ptr<std::atomic<int>> holding = std::make_shared<std::atomic<int>>(0)) {
    return [release, holding](http_request& req) -> asio::awaitable<http_reply> {
        std::string path(req.target());
        if (path == "/hold") {
            ++*holding;
            asio::steady_timer t(co_await asio::this_coro::executor);
            for (int i = 0; i < 2000 && !*release; ++i) {
                t.expires_after(5ms);
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            }
        }
        co_return json_response(http::status::ok, R"({"path":")" + path + R"("})", req.version());
    };
}

// `n` connections from `from` that send nothing, as a client holding connections open does.
std::vector<raw_connection> idle_connections(std::uint16_t port, std::string const& from, int n) {
    std::vector<raw_connection> out;
    out.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) out.push_back(raw_connection::tcp(port, from));
    return out;
}

// One GET with Connection: close from `from`, read whole within 3 s: "not blocked", generously.
http_reply_text get_from(std::uint16_t port, std::string const& from, std::string const& path) {
    auto c = raw_connection::tcp(port, from);
    c.send(get(path));
    c.read_until(reply_complete, 3s);
    return parse_reply(c.data);
}

std::size_t closed_by_server(std::vector<raw_connection>& conns) {
    std::size_t n = 0;
    for (auto& c : conns) {
        c.read_until([](std::string const&) { return false; }, 20ms);
        if (c.server_closed()) ++n;
    }
    return n;
}

}  // namespace

TEST_CASE("one client holding idle connections beyond every cap leaves others and the probes served") {
    running_server s(capped(64, 16), path_handler());
    // Three times max_connections, all from one address, none sending anything.
    auto flood = idle_connections(s.port(), "127.0.0.2", 192);
    // The flood never holds more than its share (plus the reserved slots it may take briefly).
    REQUIRE(eventually([&] { return s.server->active_connections() <= 16 + 2; }));

    for (int i = 0; i < 5; ++i) {
        auto other = get_from(s.port(), "127.0.0.3", "/work");
        CHECK(other.status == 200);
        CHECK(other.body == R"({"path":"/work"})");
        // Probes are answered, from another address and from the flooding one.
        CHECK(get_from(s.port(), "127.0.0.4", "/healthz").status == 200);
        CHECK(get_from(s.port(), "127.0.0.2", "/readyz").status == 200);
    }
    // Its own idle connections made room for its newer ones (or, caught before they were idle, were refused).
    CHECK(closed_by_server(flood) >= 192 - 18);
}

TEST_CASE("at max_connections the connection idle longest is closed to let a new client in") {
    running_server s(capped(64, 16), path_handler());
    // Eight clients, each within its share, together half again more than the server holds.
    std::vector<raw_connection> flood;
    for (int a = 10; a < 18; ++a)
        for (auto& c : idle_connections(s.port(), "127.0.0." + std::to_string(a), 12)) flood.push_back(std::move(c));
    REQUIRE(eventually([&] { return s.server->active_connections() <= 64 + 16; }));
    auto other = get_from(s.port(), "127.0.0.3", "/work");
    CHECK(other.status == 200);
    CHECK(get_from(s.port(), "127.0.0.3", "/healthz").status == 200);
    // The first ones came first and idled longest: they went.
    CHECK(closed_by_server(flood) >= 96 - 64);
    CHECK(flood.front().server_closed());
}

TEST_CASE("with every connection busy a new request gets 503 with a JSON body, and the probes are still answered") {
    auto release = std::make_shared<std::atomic<bool>>(false);
    auto holding = std::make_shared<std::atomic<int>>(0);
    running_server s(capped(32, 8), path_handler(release, holding));
    std::vector<raw_connection> busy;
    for (int a = 20; a < 24; ++a)
        for (int i = 0; i < 8; ++i) {
            busy.push_back(raw_connection::tcp(s.port(), "127.0.0." + std::to_string(a)));
            busy.back().send(get("/hold"));
        }
    REQUIRE(eventually([&] { return *holding == 32; }));

    auto refused = get_from(s.port(), "127.0.0.3", "/work");
    CHECK(refused.status == 503);
    CHECK(header_value(refused.head, "Content-Type") == "application/json");
    CHECK(header_value(refused.head, "Retry-After") == "1");
    CHECK_THAT(refused.body, Catch::Contains("over_capacity") && Catch::Contains("too many connections"));
    for (int i = 0; i < 20; ++i) {
        CHECK(get_from(s.port(), "127.0.0.3", "/healthz").status == 200);
        CHECK(get_from(s.port(), "127.0.0.4", "/readyz").status == 200);
    }
    *release = true;
    for (auto& c : busy) {
        REQUIRE(c.read_until(reply_complete, 5s));
        CHECK(parse_reply(c.data).status == 200);
    }
    CHECK(get_from(s.port(), "127.0.0.3", "/work").status == 200);
}

TEST_CASE("a trusted proxy's connections are held only to max_connections, not to the per-client cap") {
    auto o = capped(64, 16);
    o.trusted.networks.push_back(*parse_ip_network("127.0.0.2"));
    running_server s(o, path_handler());
    // nginx in front: every client behind it arrives from its address.
    auto behind_proxy = idle_connections(s.port(), "127.0.0.2", 40);
    REQUIRE(eventually([&] { return s.server->active_connections() == 40; }));
    std::this_thread::sleep_for(100ms);
    CHECK(closed_by_server(behind_proxy) == 0);
    CHECK(s.server->active_connections() == 40);
    // Another address is still held to its share.
    auto direct = idle_connections(s.port(), "127.0.0.3", 40);
    REQUIRE(eventually([&] { return s.server->active_connections() <= 40 + 16 + 2; }));
    CHECK(closed_by_server(behind_proxy) == 0);
}

TEST_CASE("unix-socket peers are held only to max_connections, not to the per-client cap") {
    temp_dir dir("airlock-http-unix");
    auto o = capped(64, 16);
    o.unix_socket = dir.path() / "airlock.sock";
    running_server s(o, path_handler());
    std::vector<raw_connection> conns;
    for (int i = 0; i < 40; ++i) conns.push_back(raw_connection::unix_socket(o.unix_socket->string()));
    REQUIRE(eventually([&] { return s.server->active_connections() == 40; }));
    std::this_thread::sleep_for(100ms);
    CHECK(closed_by_server(conns) == 0);
    conns.back().send(get("/work"));
    REQUIRE(conns.back().read_until(reply_complete, 3s));
    CHECK(parse_reply(conns.back().data).status == 200);
}

// ---------------------------------------------------------------- framing

TEST_CASE("pipelined requests followed by a half-close are all answered, in order, then the connection closes") {
    // Each answer takes a moment, so the end of input arrives while the first is being served.
    http_handler slow = [](http_request& req) -> asio::awaitable<http_reply> {
        asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        co_return json_response(http::status::ok, req.body(), req.version());
    };
    running_server s({}, slow);
    for (int requests : {2, 3, 5}) {
        INFO(requests << " requests");
        auto c = raw_connection::tcp(s.port());
        std::string all;
        for (int i = 0; i < requests; ++i) {
            std::string body = R"({"n":)" + std::to_string(i) + "}";
            all += "POST /call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body;
        }
        c.send(all);
        c.shutdown_send();
        CHECK(c.read_to_close(5s));
        std::size_t at = 0;
        for (int i = 0; i < requests; ++i) {
            auto next = c.data.find("HTTP/1.1 ", at);
            REQUIRE(next != std::string::npos);
            auto r = parse_reply(c.data.substr(next));
            CHECK(r.status == 200);
            CHECK(r.body == R"({"n":)" + std::to_string(i) + "}");
            at = next + 1;
        }
    }
}

TEST_CASE("a request with a transfer coding other than chunked alone is refused with a JSON error, never parsed") {
    auto handled = std::make_shared<std::atomic<int>>(0);
    http_handler echo = [handled](http_request& req) -> asio::awaitable<http_reply> {
        ++*handled;
        co_return json_response(http::status::ok, req.body(), req.version());
    };
    running_server s({}, echo);
    std::string const chunked_body = "e\r\n{\"plain\":true}\r\n0\r\n\r\n";
    auto send = [&](std::string const& version, std::string const& headers) {
        auto c = raw_connection::tcp(s.port());
        c.send("POST /call " + version + "\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + headers + "\r\n" +
               chunked_body);
        c.read_until(reply_complete, 3s);
        return parse_reply(c.data);
    };
    SECTION("a coding before chunked: 501") {
        for (std::string te : {"gzip, chunked", "deflate, chunked", "compress, chunked", "br,chunked", "x-custom , chunked",
                               "identity, chunked", "GZIP,\tchunked"}) {
            INFO(te);
            auto r = send("HTTP/1.1", "Transfer-Encoding: " + te + "\r\n");
            CHECK(r.status == 501);
            CHECK(header_value(r.head, "Content-Type") == "application/json");
            CHECK_THAT(r.body, Catch::Contains("unsupported_transfer_coding") && Catch::Contains("chunked"));
        }
        // The same, split over two fields.
        CHECK(send("HTTP/1.1", "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n").status == 501);
    }
    SECTION("a framing that is not one final chunked: 400") {
        for (std::string headers : {"Transfer-Encoding: gzip\r\n", "Transfer-Encoding: chunked, gzip\r\n",
                                    "Transfer-Encoding: chunked, chunked\r\n",
                                    "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                                    "Transfer-Encoding: ,\r\n", "Content-Length: 22\r\nTransfer-Encoding: chunked\r\n",
                                    "Transfer-Encoding: chunked\r\nContent-Length: 22\r\n"}) {
            auto shown = headers;
            for (auto at = shown.find("\r\n"); at != std::string::npos; at = shown.find("\r\n", at)) shown.replace(at, 2, " | ");
            INFO(shown);
            auto r = send("HTTP/1.1", headers);
            CHECK(r.status == 400);
            CHECK(header_value(r.head, "Content-Type") == "application/json");
        }
        auto r = send("HTTP/1.0", "Transfer-Encoding: chunked\r\n");
        CHECK(r.status == 400);
        CHECK_THAT(r.body, Catch::Contains("HTTP/1.0"));
    }
    CHECK(*handled == 0);
    SECTION("chunked alone is read") {
        for (std::string te : {"chunked", "Chunked", " chunked "}) {
            auto r = send("HTTP/1.1", "Transfer-Encoding: " + te + "\r\n");
            CHECK(r.status == 200);
            CHECK(r.body == R"({"plain":true})");
        }
    }
}
