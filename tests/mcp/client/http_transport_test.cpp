// The Streamable HTTP transport against a scripted in-test server (faults, both eras, TLS) and
// against the real @modelcontextprotocol/server-everything in streamableHttp mode.

#include "mcp/client/http_transport.hpp"

#include "mcp/protocol/era.hpp"
#include "mcp/protocol/messages.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/node_peers.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

using namespace airlock::mcp;
namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using kind = transport_error::kind;
namespace peers = airlock::testing::peers;
using airlock::testing::everything_server;
using airlock::testing::modern_proxy;

namespace {

// ---------------------------------------------------------------- driving coroutines

template <class T>
T run(asio::io_context& ioc, asio::awaitable<T> task) {
    auto f = asio::co_spawn(ioc, std::move(task), asio::use_future);
    ioc.restart();
    ioc.run();
    return f.get();
}

request make_request(std::int64_t id, std::string method, json::object params = {}) {
    return request{request_id(id), std::move(method), std::move(params)};
}

json::object modern_params(json::object params = {}) {
    request_meta m;
    m.protocol_version = std::string(version::modern);
    m.client_info = implementation{"airlock-test", "0", std::nullopt, std::nullopt};
    set_request_meta(params, m);
    return params;
}

json::object init_params() {
    return json::object{{"protocolVersion", version::legacy_latest},
                        {"capabilities", json::object{}},
                        {"clientInfo", {{"name", "airlock-test"}, {"version", "0"}}}};
}

// ---------------------------------------------------------------- a scripted HTTP server

struct seen_request {
    std::string method;
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;

    std::optional<std::string> header(std::string_view name) const {
        for (auto const& [n, v] : headers)
            if (n.size() == name.size() &&
                std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
                return v;
        return std::nullopt;
    }
    // The JSON-RPC method of the body, or "" when the body is not a request or notification.
    std::string rpc_method() const {
        boost::system::error_code ec;
        auto v = json::parse(body, ec);
        if (ec || !v.is_object() || !v.get_object().contains("method")) return "";
        return std::string(v.at("method").as_string());
    }
    json::value rpc_id() const { return json::parse(body).at("id"); }
};

// One accepted connection, plain or TLS.
struct peer {
    int fd = -1;
    SSL* ssl = nullptr;
    std::atomic<bool> const* stopping = nullptr;
    std::string pending;

    bool send(std::string_view bytes) {
        while (!bytes.empty()) {
            long n = ssl ? SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size()))
                         : ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n <= 0) return false;
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }
    // Sends in pieces of 1 to 3 bytes, so every boundary the client parses is split somewhere.
    bool send_dribbled(std::string_view bytes) {
        std::size_t step = 1;
        while (!bytes.empty()) {
            auto n = std::min(step, bytes.size());
            if (!send(bytes.substr(0, n))) return false;
            bytes.remove_prefix(n);
            step = step % 3 + 1;
            std::this_thread::sleep_for(200us);
        }
        return true;
    }
    // > 0 bytes read; 0 the connection ended; -1 nothing within `wait`.
    long recv_some(char* buf, std::size_t size, int wait_ms) {
        if (!(ssl && SSL_pending(ssl) > 0)) {
            pollfd p{fd, POLLIN, 0};
            int r = ::poll(&p, 1, wait_ms);
            if (r == 0) return -1;
            if (r < 0) return 0;
        }
        long n = ssl ? SSL_read(ssl, buf, static_cast<int>(size)) : ::recv(fd, buf, size, 0);
        return n > 0 ? n : 0;
    }
    std::optional<seen_request> read_request(std::chrono::milliseconds wait) {
        auto until = std::chrono::steady_clock::now() + wait;
        char buf[8192];
        for (;;) {
            auto end = pending.find("\r\n\r\n");
            if (end != std::string::npos) {
                seen_request r;
                std::istringstream head(pending.substr(0, end));
                std::string line;
                std::getline(head, line);
                std::istringstream first(line);
                first >> r.method >> r.target;
                std::size_t length = 0;
                while (std::getline(head, line)) {
                    if (!line.empty() && line.back() == '\r') line.pop_back();
                    auto colon = line.find(':');
                    if (colon == std::string::npos) continue;
                    auto value = line.substr(colon + 1);
                    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
                    r.headers.emplace_back(line.substr(0, colon), value);
                }
                if (auto cl = r.header("Content-Length")) length = std::stoul(*cl);
                if (pending.size() >= end + 4 + length) {
                    r.body = pending.substr(end + 4, length);
                    pending.erase(0, end + 4 + length);
                    return r;
                }
            }
            if (*stopping || std::chrono::steady_clock::now() > until) return std::nullopt;
            long n = recv_some(buf, sizeof buf, 50);
            if (n == 0) return std::nullopt;
            if (n > 0) pending.append(buf, static_cast<std::size_t>(n));
        }
    }
    // Waits until the client closes the connection; true when it did within `wait`.
    bool wait_closed(std::chrono::milliseconds wait) {
        auto until = std::chrono::steady_clock::now() + wait;
        char buf[4096];
        while (!*stopping && std::chrono::steady_clock::now() < until) {
            long n = recv_some(buf, sizeof buf, 50);
            if (n == 0) return true;
        }
        return false;
    }
};

// Serves 127.0.0.1 on a free port; each connection on its own thread, each request handed to the
// handler, which writes whatever it likes and returns false to close the connection.
class fake_server {
public:
    using handler = std::function<bool(peer&, seen_request const&)>;

    explicit fake_server(handler h, SSL_CTX* tls = nullptr) : handler_(std::move(h)), tls_(tls) {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 16) != 0)
            throw std::runtime_error("fake_server: cannot listen");
        socklen_t len = sizeof a;
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }

    ~fake_server() {
        stopping_ = true;
        acceptor_.join();
        std::vector<std::thread> workers;
        {
            std::lock_guard lock(mutex_);
            for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
            workers.swap(workers_);
        }
        for (auto& t : workers) t.join();
        ::close(listen_fd_);
    }

    std::uint16_t port() const { return port_; }
    std::string url(std::string const& scheme = "http", std::string const& host = "127.0.0.1") const {
        return scheme + "://" + host + ":" + std::to_string(port_) + "/mcp";
    }
    int connections() const { return connections_; }
    int closed_connections() const { return closed_; }
    std::vector<seen_request> requests() const {
        std::lock_guard lock(mutex_);
        return requests_;
    }
    std::vector<seen_request> requests_with(std::string const& rpc_method) const {
        std::vector<seen_request> out;
        for (auto& r : requests())
            if (r.rpc_method() == rpc_method) out.push_back(r);
        return out;
    }
    std::vector<std::string> server_names() const {
        std::lock_guard lock(mutex_);
        return sni_;
    }
    // Waits (bounded) until `pred` holds.
    template <class F>
    bool eventually(F pred, std::chrono::milliseconds wait = 5s) const {
        auto until = std::chrono::steady_clock::now() + wait;
        while (!pred()) {
            if (std::chrono::steady_clock::now() > until) return false;
            std::this_thread::sleep_for(5ms);
        }
        return true;
    }

private:
    void accept_loop() {
        while (!stopping_) {
            pollfd p{listen_fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            ++connections_;
            std::lock_guard lock(mutex_);
            open_fds_.push_back(fd);
            workers_.emplace_back([this, fd] { serve(fd); });
        }
    }

    void serve(int fd) {
        peer p;
        p.fd = fd;
        p.stopping = &stopping_;
        bool ok = true;
        if (tls_) {
            p.ssl = SSL_new(tls_);
            SSL_set_fd(p.ssl, fd);
            ok = SSL_accept(p.ssl) == 1;
            if (ok) {
                char const* sni = SSL_get_servername(p.ssl, TLSEXT_NAMETYPE_host_name);
                std::lock_guard lock(mutex_);
                sni_.push_back(sni ? sni : "");
            }
        }
        while (ok) {
            auto r = p.read_request(20s);
            if (!r) break;
            {
                std::lock_guard lock(mutex_);
                requests_.push_back(*r);
            }
            if (!handler_(p, *r)) break;
        }
        if (p.ssl) SSL_free(p.ssl);
        {
            std::lock_guard lock(mutex_);
            std::erase(open_fds_, fd);
            ::close(fd);
        }
        ++closed_;
    }

    handler handler_;
    SSL_CTX* tls_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<int> connections_{0};
    std::atomic<int> closed_{0};
    mutable std::mutex mutex_;
    std::vector<int> open_fds_;
    std::vector<std::thread> workers_;
    std::vector<seen_request> requests_;
    std::vector<std::string> sni_;
    std::thread acceptor_;
};

// ---- response text

std::string http_response(int status, std::string_view reason, std::vector<std::string> const& headers,
                          std::string_view body) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
    for (auto const& h : headers) out += h + "\r\n";
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    out += body;
    return out;
}

std::string result_body(json::value id, json::object result) {
    return json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"result", std::move(result)}});
}

std::string json_reply(seen_request const& r, json::object result, std::vector<std::string> headers = {}) {
    headers.push_back("Content-Type: application/json");
    return http_response(200, "OK", headers, result_body(r.rpc_id(), std::move(result)));
}

std::string const accepted = http_response(202, "Accepted", {}, "");

std::string sse_head() {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
           "Transfer-Encoding: chunked\r\n\r\n";
}

std::string chunk(std::string_view data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + std::string(data) + "\r\n";
}

std::string const last_chunk = "0\r\n\r\n";

std::string event(std::string const& data, std::string const& id = "") {
    return (id.empty() ? "" : "id: " + id + "\n") + "data: " + data + "\n\n";
}

std::string progress_note(std::string const& token, int progress) {
    return json::serialize(json::object{{"jsonrpc", "2.0"},
                                        {"method", "notifications/progress"},
                                        {"params", {{"progressToken", token}, {"progress", progress}, {"total", 2}}}});
}

// The legacy handshake every scripted legacy server starts with: a JSON answer naming session "sess-1".
bool answer_initialize(peer& p, seen_request const& r) {
    return p.send(json_reply(r,
                             {{"protocolVersion", version::legacy_latest},
                              {"capabilities", json::object{}},
                              {"serverInfo", {{"name", "fake"}, {"version", "1"}}}},
                             {"Mcp-Session-Id: sess-1"}));
}

http_transport_options options_for(std::string url) {
    http_transport_options o;
    o.server_name = "fake";
    o.url = std::move(url);
    return o;
}

// Sends initialize and adopts the version, as the MCP client does.
void initialize(asio::io_context& ioc, http_transport& t) {
    auto r = run(ioc, t.async_request(make_request(0, "initialize", init_params()), {}));
    REQUIRE(r.has_value());
    REQUIRE(std::holds_alternative<response>(*r));
    t.set_protocol_version(std::string(version::legacy_latest));
}

json::object const& result_of(transport_result<message> const& r) {
    REQUIRE(r.has_value());
    auto const* resp = std::get_if<response>(&*r);
    REQUIRE(resp != nullptr);
    return resp->result;
}

// ---------------------------------------------------------------- TLS material made in the test

struct pki {
    EVP_PKEY* ca_key = nullptr;
    X509* ca = nullptr;
    EVP_PKEY* key = nullptr;
    X509* cert = nullptr;
    SSL_CTX* server_ctx = nullptr;
    airlock::testing::temp_dir dir{"airlock-http-tls"};
    std::string ca_file;

    pki() {
        ca_key = EVP_EC_gen("P-256");
        key = EVP_EC_gen("P-256");
        ca = make_cert(ca_key, "airlock test CA", nullptr, ca_key, nullptr);
        cert = make_cert(key, "localhost", ca, ca_key, "DNS:localhost,IP:127.0.0.1");
        ca_file = (dir.path() / "ca.pem").string();
        FILE* f = std::fopen(ca_file.c_str(), "w");
        PEM_write_X509(f, ca);
        std::fclose(f);
        server_ctx = SSL_CTX_new(TLS_server_method());
        SSL_CTX_use_certificate(server_ctx, cert);
        SSL_CTX_use_PrivateKey(server_ctx, key);
    }
    ~pki() {
        SSL_CTX_free(server_ctx);
        X509_free(cert);
        X509_free(ca);
        EVP_PKEY_free(key);
        EVP_PKEY_free(ca_key);
    }

    // A CA certificate when `san` is null, otherwise a server certificate for those names.
    static X509* make_cert(EVP_PKEY* subject_key, char const* cn, X509* issuer, EVP_PKEY* issuer_key, char const* san) {
        X509* x = X509_new();
        X509_set_version(x, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(x), san ? 2 : 1);
        X509_gmtime_adj(X509_getm_notBefore(x), -3600);
        X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
        X509_set_pubkey(x, subject_key);
        X509_NAME* name = X509_get_subject_name(x);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<unsigned char const*>(cn), -1, -1, 0);
        X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
        X509V3_CTX ctx;
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, issuer ? issuer : x, x, nullptr, nullptr, 0);
        auto add = [&](int nid, char const* value) {
            X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
            X509_add_ext(x, e, -1);
            X509_EXTENSION_free(e);
        };
        if (!san) {
            add(NID_basic_constraints, "critical,CA:TRUE");
            add(NID_key_usage, "critical,keyCertSign,cRLSign");
        } else {
            add(NID_basic_constraints, "CA:FALSE");
            add(NID_subject_alt_name, san);
            add(NID_ext_key_usage, "serverAuth");
        }
        X509_sign(x, issuer_key, EVP_sha256());
        return x;
    }
};

// A port nobody listens on: bound, then closed.
std::uint16_t closed_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

}  // namespace


// ================================================================ URLs and destinations

TEST_CASE("an upstream URL without a port means 80 for http and 443 for https") {
    asio::io_context ioc;
    http_transport plain(ioc.get_executor(), options_for("http://tools.example.com/mcp"));
    http_transport secure(ioc.get_executor(), options_for("https://Tools.Example.com"));
    CHECK(plain.destination() == airlock::core::destination{airlock::core::remote_destination{"http", "tools.example.com", 80}});
    CHECK(secure.destination() == airlock::core::destination{airlock::core::remote_destination{"https", "Tools.Example.com", 443}});
}

TEST_CASE("an explicit port, an IPv6 literal and a query are kept as the URL writes them") {
    auto e = parse_http_url("http://[::1]:8931/mcp?tenant=a");
    REQUIRE(e.has_value());
    CHECK(e->host == "::1");
    CHECK(e->port == 8931);
    CHECK(e->target == "/mcp?tenant=a");
    CHECK(e->host_header == "[::1]:8931");
}

TEST_CASE("a URL's host and port are read exactly as written, or the URL is refused naming it") {
    struct expected {
        char const* url;
        char const* host;
        std::uint16_t port;
        char const* host_header;
    };
    // Explicit and implicit ports, IPv4, names, IPv6 in brackets.
    for (auto const& x : {expected{"http://127.0.0.1:8080/mcp", "127.0.0.1", 8080, "127.0.0.1:8080"},
                          expected{"http://127.0.0.1/mcp", "127.0.0.1", 80, "127.0.0.1"},
                          expected{"https://127.0.0.1/mcp", "127.0.0.1", 443, "127.0.0.1"},
                          expected{"http://tools.example.com:9/mcp", "tools.example.com", 9, "tools.example.com:9"},
                          expected{"http://[::1]:9/mcp", "::1", 9, "[::1]:9"},
                          expected{"https://[::1]/mcp", "::1", 443, "[::1]"},
                          expected{"http://[2001:db8::7]:65535", "2001:db8::7", 65535, "[2001:db8::7]:65535"}}) {
        INFO(x.url);
        auto e = parse_http_url(x.url);
        REQUIRE(e.has_value());
        CHECK(e->host == x.host);
        CHECK(e->port == x.port);
        CHECK(e->host_header == x.host_header);
    }
    // A trailing '.' (which Boost.URL 1.81 reads as 127.0.0.1 without the port), an empty, zero or
    // too large port, an IPv6 host without brackets: refused, never read as another host or port.
    for (auto const* url : {"http://127.0.0.1.:8080/mcp", "http://127.0.0.1./mcp", "http://127.0.0.1.:/mcp",
                            "http://tools.example.com.:8080/mcp", "https://tools.example.com./mcp", "http://h:/x",
                            "http://h:0/x", "http://h:65536/x", "http://::1:9/mcp", "http://[::1/mcp"}) {
        INFO(url);
        auto e = parse_http_url(url);
        REQUIRE_FALSE(e.has_value());
        CHECK(e.error().code == "invalid_url");
        CHECK_THAT(e.error().message, Catch::Contains(url));
    }
    auto dotted = parse_http_url("http://127.0.0.1.:8080/mcp");
    CHECK_THAT(dotted.error().message, Catch::Contains("'127.0.0.1.:8080'") && Catch::Contains("trailing '.'"));
}

TEST_CASE("a URL with another scheme or with credentials in it is refused") {
    CHECK_FALSE(parse_http_url("ftp://example.com/mcp").has_value());
    auto r = parse_http_url("https://user:hunter2@example.com/mcp");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("hunter2") == std::string::npos);
}

TEST_CASE("a transport whose URL is unusable fails not_sent at open") {
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for("mailto:someone@example.com"));
    auto r = run(ioc, t.async_open());
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::not_sent);
}

TEST_CASE("a configured header the protocol owns is refused, naming the header but not its value") {
    asio::io_context ioc;
    auto o = options_for("http://127.0.0.1:9/mcp");
    o.headers = {{"Mcp-Session-Id", "s3cr3t-value"}};
    http_transport t(ioc.get_executor(), o);
    auto r = run(ioc, t.async_open());
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::not_sent);
    CHECK(r.error().detail.find("Mcp-Session-Id") != std::string::npos);
    CHECK(r.error().detail.find("s3cr3t-value") == std::string::npos);
}

// ================================================================ legacy sessions

TEST_CASE("initialize captures the session id, and later requests carry it with the protocol version") {
    fake_server server([](peer& p, seen_request const& r) {
        if (r.rpc_method() == "initialize") return answer_initialize(p, r);
        return p.send(json_reply(r, {{"tools", json::array{}}}));
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    initialize(ioc, t);
    CHECK(t.session_id() == std::optional<std::string>("sess-1"));

    auto r = run(ioc, t.async_request(make_request(1, "tools/list"), {}));
    CHECK(result_of(r).contains("tools"));

    auto seen = server.requests();
    REQUIRE(seen.size() == 2);
    CHECK_FALSE(seen[0].header("Mcp-Session-Id").has_value());
    CHECK(seen[0].header("Accept") == std::optional<std::string>("application/json, text/event-stream"));
    CHECK(seen[1].header("Mcp-Session-Id") == std::optional<std::string>("sess-1"));
    CHECK(seen[1].header("MCP-Protocol-Version") == std::optional<std::string>("2025-11-25"));
}

TEST_CASE("configured headers go out on every request") {
    fake_server server([](peer& p, seen_request const& r) {
        if (r.rpc_method() == "initialize") return answer_initialize(p, r);
        return p.send(json_reply(r, {}));
    });
    asio::io_context ioc;
    auto o = options_for(server.url());
    o.headers = {{"Authorization", "Bearer t0ken"}};
    http_transport t(ioc.get_executor(), o);
    initialize(ioc, t);
    REQUIRE(run(ioc, t.async_request(make_request(1, "ping"), {})).has_value());
    auto seen = server.requests();
    REQUIRE(seen.size() == 2);
    for (auto const& r : seen) CHECK(r.header("Authorization") == std::optional<std::string>("Bearer t0ken"));
}

TEST_CASE("a 404 for the session in use is session_expired, and the next initialize goes out without it") {
    std::atomic<int> inits{0};
    fake_server server([&](peer& p, seen_request const& r) {
        if (r.rpc_method() == "initialize") {
            ++inits;
            return answer_initialize(p, r);
        }
        return p.send(http_response(404, "Not Found", {"Content-Type: text/plain"}, "no such session"));
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    initialize(ioc, t);

    auto r = run(ioc, t.async_request(make_request(1, "tools/list"), {}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::session_expired);
    CHECK(r.error().http_status == 404);
    CHECK_FALSE(t.session_id().has_value());

    initialize(ioc, t);
    auto seen = server.requests();
    REQUIRE(seen.size() == 3);
    CHECK(seen[2].rpc_method() == "initialize");
    CHECK_FALSE(seen[2].header("Mcp-Session-Id").has_value());
}

TEST_CASE("a notification is posted with the session and accepted with 202") {
    fake_server server([](peer& p, seen_request const& r) {
        if (r.rpc_method() == "initialize") return answer_initialize(p, r);
        return p.send(accepted);
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    initialize(ioc, t);
    auto r = run(ioc, t.async_notify(notification{"notifications/initialized", std::nullopt}));
    CHECK(r.has_value());
    auto notes = server.requests_with("notifications/initialized");
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].header("Mcp-Session-Id") == std::optional<std::string>("sess-1"));
}

TEST_CASE("closing a legacy session sends DELETE with its id, accepts 405, and refuses later requests") {
    fake_server server([](peer& p, seen_request const& r) {
        if (r.method == "DELETE") return p.send(http_response(405, "Method Not Allowed", {}, ""));
        return answer_initialize(p, r);
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    initialize(ioc, t);
    run(ioc, t.async_close());

    auto seen = server.requests();
    REQUIRE(seen.size() == 2);
    CHECK(seen[1].method == "DELETE");
    CHECK(seen[1].target == "/mcp");
    CHECK(seen[1].header("Mcp-Session-Id") == std::optional<std::string>("sess-1"));
    CHECK(seen[1].header("MCP-Protocol-Version") == std::optional<std::string>("2025-11-25"));
    CHECK_FALSE(t.session_id().has_value());

    auto after = run(ioc, t.async_request(make_request(2, "tools/list"), {}));
    REQUIRE_FALSE(after.has_value());
    CHECK(after.error().what == kind::not_sent);
}

// ================================================================ responses

TEST_CASE("an SSE response dribbled a few bytes at a time yields its notification and then the response") {
    fake_server server([](peer& p, seen_request const& r) {
        auto id = r.rpc_id();
        // A comment, a priming event with CRLF line ends, a progress notification, the response.
        std::string body = chunk(": keep-alive\n\nid: 0\r\ndata: \r\n\r\n") + chunk(event(progress_note("tok", 1), "1")) +
                           chunk(event(result_body(id, {{"answer", 42}}), "2")) + last_chunk;
        return p.send_dribbled(sse_head() + body);
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    std::vector<notification> seen;
    request_options o;
    o.on_notification = [&seen](notification const& n) { seen.push_back(n); };
    auto r = run(ioc, t.async_request(make_request(7, "tools/call", {{"name", "x"}}), o));
    CHECK(result_of(r).at("answer") == 42);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].method == "notifications/progress");
    CHECK(seen[0].params->at("progressToken") == "tok");
}

TEST_CASE("a 500 without a body is an http_status error carrying the status") {
    fake_server server([](peer& p, seen_request const&) {
        return p.send(http_response(500, "Internal Server Error", {}, ""));
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    auto r = run(ioc, t.async_request(make_request(1, "tools/list"), {}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::http_status);
    CHECK(r.error().http_status == 500);
}

TEST_CASE("an HTTP error whose body is a JSON-RPC error is returned as that error") {
    fake_server server([](peer& p, seen_request const& r) {
        auto body = json::serialize(json::object{
            {"jsonrpc", "2.0"}, {"id", r.rpc_id()}, {"error", {{"code", -32602}, {"message", "bad params"}}}});
        return p.send(http_response(400, "Bad Request", {"Content-Type: application/json"}, body));
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    auto r = run(ioc, t.async_request(make_request(3, "tools/call", {{"name", "x"}}), {}));
    REQUIRE(r.has_value());
    auto const* e = std::get_if<error_response>(&*r);
    REQUIRE(e != nullptr);
    CHECK(e->error.code == -32602);
    CHECK(e->error.message == "bad params");
}

TEST_CASE("an SSE event larger than the limit fails as a protocol error") {
    fake_server server([](peer& p, seen_request const& r) {
        p.send(sse_head() + chunk(event(std::string(4096, 'x'))) + chunk(event(result_body(r.rpc_id(), {}))) + last_chunk);
        return false;
    });
    asio::io_context ioc;
    auto o = options_for(server.url());
    o.max_event_bytes = 1024;
    http_transport t(ioc.get_executor(), o);
    auto r = run(ioc, t.async_request(make_request(1, "tools/list"), {}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::protocol);
}

TEST_CASE("a request the server sends on a legacy stream is answered by a POST carrying the session") {
    std::atomic<bool> replied{false};
    fake_server server([&](peer& p, seen_request const& r) {
        auto m = r.rpc_method();
        if (m == "initialize") return answer_initialize(p, r);
        if (m == "tools/call") {
            p.send(sse_head() + chunk(event(R"({"jsonrpc":"2.0","id":"s1","method":"roots/list"})")));
            for (int i = 0; i < 2000 && !replied; ++i) std::this_thread::sleep_for(5ms);
            return p.send(chunk(event(result_body(r.rpc_id(), {{"done", true}}))) + last_chunk);
        }
        replied = true;  // the client's reply: a response, which has no method
        return p.send(accepted);
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    t.set_server_request_handler([](request req) -> asio::awaitable<boost::system::result<json::object, error_object>> {
        co_return json::object{{"roots", json::array{}}, {"asked", req.method}};
    });
    initialize(ioc, t);

    auto r = run(ioc, t.async_request(make_request(4, "tools/call", {{"name", "x"}}), {}));
    CHECK(result_of(r).at("done") == true);

    auto seen = server.requests();
    auto reply = std::find_if(seen.begin(), seen.end(), [](auto const& s) { return s.body.find("\"s1\"") != std::string::npos; });
    REQUIRE(reply != seen.end());
    auto body = json::parse(reply->body);
    CHECK(body.at("result").at("asked") == "roots/list");
    CHECK(reply->header("Mcp-Session-Id") == std::optional<std::string>("sess-1"));
}

TEST_CASE("a legacy stream that drops before the response is resumed with Last-Event-ID") {
    fake_server server([](peer& p, seen_request const& r) {
        if (r.method == "GET") return p.send(sse_head() + chunk(event(result_body(7, {{"resumed", true}}), "e2")) + last_chunk);
        if (r.rpc_method() == "initialize") return answer_initialize(p, r);
        p.send(sse_head() + chunk("retry: 10\n" + event(progress_note("tok", 1), "e1")));
        return false;  // the connection drops mid-stream
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    initialize(ioc, t);
    int notes = 0;
    request_options o;
    o.on_notification = [&notes](notification const&) { ++notes; };
    auto r = run(ioc, t.async_request(make_request(7, "tools/call", {{"name", "x"}}), o));
    CHECK(result_of(r).at("resumed") == true);
    CHECK(notes == 1);

    auto seen = server.requests();
    auto get = std::find_if(seen.begin(), seen.end(), [](auto const& s) { return s.method == "GET"; });
    REQUIRE(get != seen.end());
    CHECK(get->header("Last-Event-ID") == std::optional<std::string>("e1"));
    CHECK(get->header("Mcp-Session-Id") == std::optional<std::string>("sess-1"));
}

TEST_CASE("a legacy stream reset when the server's retry delay outlasts the deadline fails at once, saying it broke") {
    fake_server server([](peer& p, seen_request const& r) {
        if (r.rpc_method() == "initialize") return answer_initialize(p, r);
        if (r.rpc_method() != "tools/call") return p.send(accepted);
        p.send(sse_head() + chunk("retry: 60000\n" + event(progress_note("tok", 1), "e1")));
        std::this_thread::sleep_for(50ms);
        linger l{1, 0};  // a reset, not an orderly close
        ::setsockopt(p.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        return false;
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    initialize(ioc, t);
    request_options o;
    o.deadline = 20s;
    auto started = std::chrono::steady_clock::now();
    auto r = run(ioc, t.async_request(make_request(7, "tools/call", {{"name", "x"}}), o));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::no_reply);
    CHECK_THAT(r.error().detail, Catch::Contains("ended before the response") && Catch::Contains("reset") &&
                                     Catch::Contains("no time to resume"));
    CHECK(std::chrono::steady_clock::now() - started < 5s);
}

// ================================================================ the modern era

TEST_CASE("a modern request carries MCP-Protocol-Version, Mcp-Method and Mcp-Name, and no session id") {
    fake_server server([](peer& p, seen_request const& r) { return p.send(json_reply(r, {{"content", json::array{}}})); });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    t.set_protocol_version(std::string(version::modern));
    auto params = modern_params({{"name", "get-sum"}, {"arguments", {{"a", 2}, {"b", 3}}}});
    REQUIRE(run(ioc, t.async_request(make_request(1, "tools/call", params), {})).has_value());
    auto seen = server.requests();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].header("MCP-Protocol-Version") == std::optional<std::string>("2026-07-28"));
    CHECK(seen[0].header("Mcp-Method") == std::optional<std::string>("tools/call"));
    CHECK(seen[0].header("Mcp-Name") == std::optional<std::string>("get-sum"));
    CHECK_FALSE(seen[0].header("Mcp-Session-Id").has_value());
}

TEST_CASE("a modern tools/call mirrors the called tool's x-mcp-header arguments into Mcp-Param headers") {
    fake_server server([](peer& p, seen_request const& r) { return p.send(json_reply(r, {{"content", json::array{}}})); });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    t.set_protocol_version(std::string(version::modern));
    tool sql;
    sql.name = "execute_sql";
    sql.input_schema = json::parse(R"({"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}})")
                           .as_object();
    request_options o;
    o.called = &sql;
    auto params = modern_params({{"name", "execute_sql"}, {"arguments", {{"region", "us-west1"}}}});
    REQUIRE(run(ioc, t.async_request(make_request(1, "tools/call", params), o)).has_value());
    auto seen = server.requests();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].header("Mcp-Param-Region") == std::optional<std::string>("us-west1"));
}

TEST_CASE("before the era is known, a probe carrying modern _meta goes out with the modern headers") {
    fake_server server([](peer& p, seen_request const& r) { return p.send(json_reply(r, {})); });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    REQUIRE(run(ioc, t.async_request(make_request(1, "server/discover", modern_params()), {})).has_value());
    auto seen = server.requests();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].header("Mcp-Method") == std::optional<std::string>("server/discover"));
    CHECK(seen[0].header("MCP-Protocol-Version") == std::optional<std::string>("2026-07-28"));
}

// ================================================================ deadlines and faults

TEST_CASE("a legacy request past its deadline is cancelled with notifications/cancelled and reported as deadline") {
    fake_server server([](peer& p, seen_request const& r) {
        auto m = r.rpc_method();
        if (m == "initialize") return answer_initialize(p, r);
        if (m == "notifications/cancelled") return p.send(accepted);
        p.wait_closed(10s);  // never answers
        return false;
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    initialize(ioc, t);
    request_options o;
    o.deadline = 300ms;
    auto r = run(ioc, t.async_request(make_request(5, "tools/call", {{"name", "slow"}}), o));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::deadline);

    auto cancels = server.requests_with("notifications/cancelled");
    REQUIRE(cancels.size() == 1);
    CHECK(json::parse(cancels[0].body).at("params").at("requestId") == 5);
    CHECK(cancels[0].header("Mcp-Session-Id") == std::optional<std::string>("sess-1"));
}

TEST_CASE("a modern request past its deadline closes its stream, sends no cancellation and is reported as deadline") {
    std::atomic<bool> stream_closed{false};
    fake_server server([&](peer& p, seen_request const& r) {
        if (r.rpc_method() == "notifications/cancelled") return p.send(accepted);
        p.send(sse_head());  // opens the stream, then says nothing
        if (p.wait_closed(10s)) stream_closed = true;
        return false;
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    t.set_protocol_version(std::string(version::modern));
    request_options o;
    o.deadline = 300ms;
    auto r = run(ioc, t.async_request(make_request(5, "tools/call", modern_params({{"name", "slow"}})), o));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::deadline);
    CHECK(server.eventually([&] { return stream_closed.load(); }));
    CHECK(server.requests_with("notifications/cancelled").empty());
}

TEST_CASE("a refused connection is not_sent") {
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for("http://127.0.0.1:" + std::to_string(closed_port()) + "/mcp"));
    auto r = run(ioc, t.async_request(make_request(1, "tools/list"), {}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::not_sent);
}

TEST_CASE("a server that closes the connection after reading the request is no_reply") {
    fake_server server([](peer&, seen_request const&) { return false; });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    auto r = run(ioc, t.async_request(make_request(1, "tools/call", {{"name", "x"}}), {}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::no_reply);
    CHECK(server.requests().size() == 1);
}

TEST_CASE("a server that resets the connection, before or after answering part of it, fails the request at once") {
    // SO_LINGER 0: the close is a reset (RST), as from a server that crashed mid-request.
    auto reset = [](peer& p) {
        linger l{1, 0};
        ::setsockopt(p.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        return false;
    };
    for (int variant = 0; variant < 3; ++variant) {
        INFO("variant " << variant);
        fake_server server([&](peer& p, seen_request const&) {
            if (variant == 1) p.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"");
            if (variant == 2) p.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: message\r\n");
            std::this_thread::sleep_for(50ms);
            return reset(p);
        });
        asio::io_context ioc;
        http_transport t(ioc.get_executor(), options_for(server.url()));
        request_options ro;
        ro.deadline = 20s;
        auto started = std::chrono::steady_clock::now();
        auto r = run(ioc, t.async_request(make_request(1, "tools/call", {{"name", "x"}}), ro));
        auto took = std::chrono::steady_clock::now() - started;
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().what == kind::no_reply);
        CHECK_THAT(r.error().detail, Catch::Contains("reset") || Catch::Contains("broke off") || Catch::Contains("ended"));
        CHECK(took < 5s);  // not at the 20 s deadline
    }
}

TEST_CASE("an address the egress check refuses is never connected to") {
    fake_server server([](peer& p, seen_request const& r) { return p.send(json_reply(r, {})); });
    asio::io_context ioc;
    auto o = options_for(server.url());
    o.allow_address = [](asio::ip::address const& a) { return !a.is_loopback(); };
    http_transport t(ioc.get_executor(), o);
    auto r = run(ioc, t.async_request(make_request(1, "tools/list"), {}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::not_sent);
    CHECK(r.error().detail.find("127.0.0.1") != std::string::npos);
    CHECK(server.connections() == 0);
}

TEST_CASE("the egress check sees each resolved address, and only those it passes are connected to") {
    fake_server server([](peer& p, seen_request const& r) { return p.send(json_reply(r, {})); });
    asio::io_context ioc;
    auto o = options_for(server.url("http", "localhost"));
    std::vector<std::string> offered;
    o.allow_address = [&offered](asio::ip::address const& a) {
        offered.push_back(a.to_string());
        return a.is_v4();
    };
    http_transport t(ioc.get_executor(), o);
    REQUIRE(run(ioc, t.async_request(make_request(1, "tools/list"), {})).has_value());
    CHECK(std::find(offered.begin(), offered.end(), "127.0.0.1") != offered.end());
    CHECK(server.connections() == 1);
}

// ================================================================ the connection pool

TEST_CASE("sequential requests reuse one keep-alive connection") {
    fake_server server([](peer& p, seen_request const& r) { return p.send(json_reply(r, {})); });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    REQUIRE(run(ioc, t.async_request(make_request(1, "tools/list"), {})).has_value());
    REQUIRE(run(ioc, t.async_request(make_request(2, "tools/list"), {})).has_value());
    CHECK(server.connections() == 1);
    CHECK(t.idle_connections() == 1);
}

TEST_CASE("an SSE stream that ends after its response leaves its connection in the pool") {
    fake_server server([](peer& p, seen_request const& r) {
        return p.send(sse_head() + chunk(event(result_body(r.rpc_id(), {}))) + last_chunk);
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    REQUIRE(run(ioc, t.async_request(make_request(1, "tools/list"), {})).has_value());
    REQUIRE(run(ioc, t.async_request(make_request(2, "tools/list"), {})).has_value());
    CHECK(server.connections() == 1);
}

TEST_CASE("a pooled connection the server closed is replaced before anything is written to it") {
    fake_server server([](peer& p, seen_request const& r) {
        p.send(json_reply(r, {}));
        return false;  // answers as keep-alive, then closes anyway
    });
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url()));
    REQUIRE(run(ioc, t.async_request(make_request(1, "tools/list"), {})).has_value());
    REQUIRE(server.eventually([&] { return server.closed_connections() == 1; }));
    auto r = run(ioc, t.async_request(make_request(2, "tools/list"), {}));
    CHECK(r.has_value());
    CHECK(server.connections() == 2);
    CHECK(server.requests().size() == 2);
}

// ================================================================ TLS

TEST_CASE("https to a plain HTTP port fails not_sent instead of crashing") {
    fake_server server([](peer& p, seen_request const& r) { return p.send(json_reply(r, {})); });
    asio::io_context ioc;
    auto o = options_for(server.url("https"));
    o.connect_timeout = 1s;
    http_transport t(ioc.get_executor(), o);
    auto r = run(ioc, t.async_request(make_request(1, "tools/list"), {}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::not_sent);
}

TEST_CASE("https to a server whose certificate no trusted CA signed fails verification before sending") {
    pki k;
    fake_server server([](peer& p, seen_request const& r) { return p.send(json_reply(r, {})); }, k.server_ctx);
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(server.url("https", "localhost")));
    auto r = run(ioc, t.async_request(make_request(1, "tools/list"), {}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::not_sent);
    CHECK(r.error().detail.find("TLS") != std::string::npos);
    CHECK(server.requests().empty());
}

TEST_CASE("https with the CA file configured verifies the server and names it by SNI") {
    pki k;
    fake_server server([](peer& p, seen_request const& r) { return p.send(json_reply(r, {{"ok", true}})); }, k.server_ctx);
    asio::io_context ioc;
    auto o = options_for(server.url("https", "localhost"));
    o.ca_file = k.ca_file;
    http_transport t(ioc.get_executor(), o);
    auto r = run(ioc, t.async_request(make_request(1, "tools/list"), {}));
    CHECK(result_of(r).at("ok") == true);
    CHECK(server.server_names() == std::vector<std::string>{"localhost"});
}

TEST_CASE("https to an IP literal checks the certificate's IP address and sends no SNI") {
    pki k;
    fake_server server([](peer& p, seen_request const& r) { return p.send(json_reply(r, {{"ok", true}})); }, k.server_ctx);
    asio::io_context ioc;
    auto o = options_for(server.url("https", "127.0.0.1"));
    o.ca_file = k.ca_file;
    http_transport t(ioc.get_executor(), o);
    auto r = run(ioc, t.async_request(make_request(1, "tools/list"), {}));
    CHECK(result_of(r).at("ok") == true);
    CHECK(server.server_names() == std::vector<std::string>{""});
}

// ================================================================ the real server-everything

namespace {

// initialize, adopt the version, notifications/initialized: what the MCP client does.
void open_session(asio::io_context& ioc, http_transport& t) {
    auto r = run(ioc, t.async_request(make_request(1, "initialize", init_params()), {}));
    auto const& init = result_of(r);
    t.set_protocol_version(std::string(init.at("protocolVersion").as_string()));
    REQUIRE(run(ioc, t.async_notify(notification{"notifications/initialized", std::nullopt})).has_value());
}

}  // namespace

TEST_CASE("server-everything over Streamable HTTP assigns a session at initialize") {
    everything_server srv;
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(srv.url()));
    auto r = run(ioc, t.async_request(make_request(1, "initialize", init_params()), {}));
    CHECK(result_of(r).at("protocolVersion") == "2025-11-25");
    REQUIRE(t.session_id().has_value());
    CHECK_FALSE(t.session_id()->empty());
}

TEST_CASE("server-everything over Streamable HTTP lists get-sum among its tools") {
    everything_server srv;
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(srv.url()));
    open_session(ioc, t);
    auto r = run(ioc, t.async_request(make_request(2, "tools/list"), {}));
    auto listed = parse_list_tools_result(json::value(result_of(r)));
    REQUIRE(listed.has_value());
    CHECK(listed->tools.size() > 5);
    CHECK(std::any_of(listed->tools.begin(), listed->tools.end(), [](tool const& x) { return x.name == "get-sum"; }));
}

TEST_CASE("server-everything over Streamable HTTP adds 2 and 3 with get-sum") {
    everything_server srv;
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(srv.url()));
    open_session(ioc, t);
    auto r = run(ioc, t.async_request(make_request(3, "tools/call", {{"name", "get-sum"}, {"arguments", {{"a", 2}, {"b", 3}}}}), {}));
    auto called = parse_call_tool_result(json::value(result_of(r)));
    REQUIRE(called.has_value());
    REQUIRE(called->content.size() == 1);
    CHECK(called->content[0].at("text") == "The sum of 2 and 3 is 5.");
}

TEST_CASE("server-everything over Streamable HTTP reports a long operation's progress through on_notification") {
    everything_server srv;
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(srv.url()));
    open_session(ioc, t);
    std::vector<progress_params> progress;
    request_options o;
    o.on_notification = [&progress](notification const& n) {
        if (n.method != "notifications/progress" || !n.params) return;
        if (auto p = parse_progress_params(json::value(*n.params))) progress.push_back(*p);
    };
    json::object params{{"name", "trigger-long-running-operation"},
                        {"arguments", {{"duration", 0.3}, {"steps", 3}}},
                        {"_meta", {{"progressToken", "airlock-progress"}}}};
    auto r = run(ioc, t.async_request(make_request(4, "tools/call", params), o));
    CHECK(result_of(r).contains("content"));
    REQUIRE(progress.size() == 3);
    CHECK(progress[0].token == progress_token(std::string("airlock-progress")));
    CHECK(progress[2].progress == 3);
    CHECK(progress[2].total == std::optional<double>(3));
}

TEST_CASE("server-everything over Streamable HTTP ends the session with DELETE at close") {
    everything_server srv;
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(srv.url()));
    open_session(ioc, t);
    auto id = t.session_id();
    REQUIRE(id.has_value());
    run(ioc, t.async_close());
    // The server logs each termination it performs on stdout.
    auto const needle = "Received session termination request for session " + *id;
    auto logged = [&] { return srv.child->stdout_text().find(needle) != std::string::npos; };
    bool seen = false;
    for (int i = 0; i < 500 && !(seen = logged()); ++i) std::this_thread::sleep_for(10ms);
    CHECK(seen);
}

TEST_CASE("mcp-proxy speaking 2026-07-28 answers server/discover and get-sum in the modern era, with no session") {
    modern_proxy px;
    asio::io_context ioc;
    http_transport t(ioc.get_executor(), options_for(px.url()));
    auto d = run(ioc, t.async_request(make_request(1, "server/discover", modern_params()), {}));
    auto discovered = parse_discover_result(json::value(result_of(d)));
    REQUIRE(discovered.has_value());
    CHECK(std::find(discovered->supported_versions.begin(), discovered->supported_versions.end(), "2026-07-28") !=
          discovered->supported_versions.end());

    t.set_protocol_version(std::string(version::modern));
    auto params = modern_params({{"name", "get-sum"}, {"arguments", {{"a", 2}, {"b", 3}}}});
    auto r = run(ioc, t.async_request(make_request(2, "tools/call", params), {}));
    auto called = parse_call_tool_result(json::value(result_of(r)));
    REQUIRE(called.has_value());
    REQUIRE(called->content.size() == 1);
    CHECK(called->content[0].at("text") == "The sum of 2 and 3 is 5.");
    CHECK_FALSE(t.session_id().has_value());
}
