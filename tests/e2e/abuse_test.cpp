// Abuse from the client side, against `airlock serve` over raw sockets on 127.0.0.1: headers dripped
// slower than the read timeout, a flood of idle connections, oversized headers and bodies, JSON
// nested to the limit and past it, invalid UTF-8, a request that frames its body two ways, pipelined
// requests, a Host or Origin not its own, and guessed tokens and session ids. Each is refused in
// words that name what was wrong, and the other clients and the probes are served meanwhile.
//
// The same rules are tested against the HTTP server alone in tests/service/http (http_server_test:
// connection caps, pipelining, transfer codings; request_rules_test: framing); these run them
// through the whole of airlock, as a client meets it.
#include "tests/support/child_process.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr char const* token = "alice-abuse-0123456789abcdef";
// A second principal, bob, with alice's grants: a session of alice's is not his to use.
constexpr char const* bob_token = "bob-abuse-0123456789abcdefgh";
std::string const bob = "  - name: bob\n    token_env: AIRLOCK_TEST_BOB_TOKEN\n    manifest: alice.yaml\n";

// airlock serving the gateway deployment with the server section `server` (YAML, indented by two).
struct abused_airlock {
    gateway_deployment d;
    child_process airlock;
    std::uint16_t port;

    explicit abused_airlock(std::string const& server = "")
        : d(token, bob + (server.empty() ? "" : "server:\n" + server)),
          airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"},
                  {std::string("AIRLOCK_TEST_BOB_TOKEN=") + bob_token}),
          port(wait_listening(airlock)) {}
    ~abused_airlock() {
        airlock.signal(SIGTERM);
        airlock.wait(30s);
    }
    std::string host() const { return "127.0.0.1:" + std::to_string(port); }
};

// Reads what the server sends on `fd` until it closes the connection or `deadline` passes; whether
// it closed.
struct read_until_close {
    std::string bytes;
    bool closed = false;
};
read_until_close drain(int fd, std::chrono::milliseconds deadline) {
    read_until_close out;
    for (auto until = std::chrono::steady_clock::now() + deadline; std::chrono::steady_clock::now() < until;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        char buf[4096];
        auto n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            out.closed = true;
            break;
        }
        out.bytes.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

int status_of(std::string const& head) { return head.size() > 12 ? std::stoi(head.substr(9, 3)) : 0; }

std::string post_mcp(std::string const& host, std::string const& body, std::string const& extra_headers = "",
                     std::string const& bearer = token) {
    return "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + bearer +
           "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
           "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n" +
           extra_headers + "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A modern tools/list whose params carry `extra` members (each followed by a comma).
std::string tools_list_body(std::string const& extra = "") {
    return R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{)" + extra +
           R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
           R"("io.modelcontextprotocol/clientCapabilities":{},)"
           R"("io.modelcontextprotocol/clientInfo":{"name":"abuse","version":"1"}}}})";
}

// The served answers a probe or another client gets meanwhile.
void others_are_served(abused_airlock const& a) {
    CHECK(http_get(a.port, "/healthz").status == 200);
    auto ready = http_get(a.port, "/readyz");
    CHECK((ready.status == 200 || ready.status == 503));  // answered, whatever the upstream's state
    auto listed = raw_http(a.port, post_mcp(a.host(), tools_list_body()), 30s);
    INFO(listed.head << listed.body);
    CHECK(listed.status == 200);
}

}  // namespace

TEST_CASE("a client dripping its headers slower than the read timeout is cut off, and others are served meanwhile") {
    abused_airlock a("  read_timeout: 2s\n");
    std::vector<int> fds;
    for (int i = 0; i < 16; ++i) fds.push_back(connect_loopback(a.port));
    std::string const head = "POST /mcp HTTP/1.1\r\nHost: " + a.host() + "\r\nX-Slow: " + std::string(200, 'a');
    std::atomic<bool> stop{false};
    // One byte every 100 ms to each: never a whole request, always some traffic.
    std::thread dripper([&] {
        for (std::size_t at = 0; at < head.size() && !stop; ++at) {
            for (int fd : fds) ::send(fd, head.data() + at, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
            std::this_thread::sleep_for(100ms);
        }
    });
    auto const started = std::chrono::steady_clock::now();
    others_are_served(a);
    std::vector<read_until_close> seen;
    for (int fd : fds) seen.push_back(drain(fd, 15s));
    auto const took = std::chrono::steady_clock::now() - started;
    stop = true;
    dripper.join();
    for (int fd : fds) ::close(fd);
    for (auto const& s : seen) {
        INFO(s.bytes);
        CHECK(s.closed);
        if (!s.bytes.empty()) CHECK(status_of(s.bytes) == 408);
    }
    std::cout << "abuse: 16 connections dripping headers were all closed within "
              << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms; the first got "
              << (seen[0].bytes.empty() ? std::string("no answer") : seen[0].bytes.substr(0, seen[0].bytes.find('\r')))
              << "\n";
    // Cut off within the read timeout and a generous margin, though bytes kept coming.
    CHECK(took < 15s);
    others_are_served(a);
}

TEST_CASE("a flood of idle connections leaves other clients, /healthz and /readyz served") {
    abused_airlock a("  max_connections: 64\n  max_connections_per_client: 64\n");
    std::vector<int> idle;
    for (int i = 0; i < 200; ++i) idle.push_back(connect_loopback(a.port));
    std::this_thread::sleep_for(300ms);
    others_are_served(a);
    for (int i = 0; i < 3; ++i) CHECK(http_get(a.port, "/healthz").status == 200);
    for (int fd : idle)
        if (fd >= 0) ::close(fd);
}

TEST_CASE("oversized headers get 431 and an oversized body 413, each with a JSON-RPC error body at /mcp") {
    abused_airlock a("  header_limit: 4KiB\n  body_limit: 64KiB\n");
    auto big_header =
        raw_http(a.port, post_mcp(a.host(), tools_list_body(), "X-Big: " + std::string(8 * 1024, 'h') + "\r\n"));
    INFO(big_header.head << big_header.body);
    CHECK(big_header.status == 431);
    CHECK_THAT(big_header.head, Catch::Contains("application/json"));
    CHECK(json::parse(big_header.body).at("error").at("code") == -32600);

    auto big_body =
        raw_http(a.port, post_mcp(a.host(), tools_list_body(R"("pad":")" + std::string(100 * 1024, 'b') + R"(",)")));
    INFO(big_body.head << big_body.body);
    CHECK(big_body.status == 413);
    CHECK_THAT(big_body.head, Catch::Contains("application/json"));
    CHECK(json::parse(big_body.body).at("error").at("code") == -32600);

    // A length announced over the limit is refused before the body is sent.
    int fd = connect_loopback(a.port);
    REQUIRE(send_all(fd, "POST /mcp HTTP/1.1\r\nHost: " + a.host() + "\r\nAuthorization: Bearer " + token +
                             "\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n"));
    auto announced = drain(fd, 10s);
    ::close(fd);
    INFO(announced.bytes);
    CHECK(status_of(announced.bytes) == 413);
    others_are_served(a);
}

TEST_CASE("JSON nested to every depth up to 128 levels is read, and 129 levels is refused naming the limit") {
    abused_airlock a;
    // The message is level 1 and params level 2: "deep" adds levels 3 and beyond.
    auto nested = [](int levels) { return R"("deep":)" + std::string(levels, '[') + std::string(levels, ']') + ","; };
    for (int depth = 3; depth <= 128; ++depth) {
        INFO("depth " << depth);
        auto r = raw_http(a.port, post_mcp(a.host(), tools_list_body(nested(depth - 2))), 30s);
        INFO(r.head << r.body);
        REQUIRE(r.status == 200);
        REQUIRE(json::parse(r.body).as_object().contains("result"));
    }
    auto r = raw_http(a.port, post_mcp(a.host(), tools_list_body(nested(127))));
    INFO(r.head << r.body);
    auto refused = json::parse(r.body);
    CHECK(refused.at("error").at("code") == -32602);
    CHECK(refused.at("error").at("message") ==
          "Invalid params: the message nests deeper than 128 levels, the most airlock accepts");
}

TEST_CASE("a body that is not valid UTF-8 is refused as a parse error, and the connection serves on") {
    abused_airlock a;
    auto r = raw_http(a.port, post_mcp(a.host(), tools_list_body("\"bad\":\"\xff\xfe\xc0\x80\",")));
    INFO(r.head << r.body);
    CHECK(r.status == 400);
    auto e = json::parse(r.body);
    CHECK(e.at("error").at("code") == -32700);
    others_are_served(a);
}

TEST_CASE(
    "a request framed by both Content-Length and Transfer-Encoding is refused, and what it smuggled is never served") {
    abused_airlock a;
    std::string const smuggled = "GET /healthz HTTP/1.1\r\nHost: " + a.host() + "\r\n\r\n";
    std::string const body = "0\r\n\r\n" + smuggled;
    auto r =
        raw_http(a.port, "POST /mcp HTTP/1.1\r\nHost: " + a.host() + "\r\nAuthorization: Bearer " + token +
                             "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\nTransfer-Encoding: chunked\r\n\r\n" + body);
    INFO(r.head << r.body);
    CHECK(r.status == 400);
    CHECK_THAT(r.head, Catch::Contains("application/json"));
    CHECK_THAT(r.body, Catch::Contains("Transfer-Encoding"));
    CHECK(r.body.find("HTTP/1.1 200") == std::string::npos);  // one answer only: the smuggled GET was not read
    others_are_served(a);
}

TEST_CASE("pipelined requests on one connection are all answered, in order") {
    abused_airlock a;
    std::string const health = "GET /healthz HTTP/1.1\r\nHost: " + a.host() + "\r\n\r\n";
    auto body = tools_list_body();
    auto listed = "POST /mcp HTTP/1.1\r\nHost: " + a.host() + "\r\nAuthorization: Bearer " + token +
                  "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                  "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body;
    auto r = raw_http(a.port,
                      health + listed + health + listed + "GET /healthz HTTP/1.1\r\nHost: " + a.host() +
                          "\r\nConnection: close\r\n\r\n",
                      30s);
    auto all = r.head + r.body;
    std::vector<std::size_t> at;
    for (auto p = all.find("HTTP/1.1 "); p != std::string::npos; p = all.find("HTTP/1.1 ", p + 1)) at.push_back(p);
    INFO(all);
    REQUIRE(at.size() == 5);
    for (auto p : at) CHECK(all.substr(p, 12) == "HTTP/1.1 200");
    // The answers alternate as the requests did: a probe's, then a tools/list's.
    CHECK(all.find("\"tools\"", at[0]) > at[0]);
    CHECK(all.find("\"tools\"", at[0]) < at[2]);
    CHECK(all.find("\"tools\"", at[2]) < at[4]);
}

TEST_CASE("a Host or an Origin that is not airlock's own is refused with 403, whatever the token") {
    abused_airlock a;
    auto spoofed_host = raw_http(a.port, post_mcp("evil.example", tools_list_body()));
    INFO(spoofed_host.head << spoofed_host.body);
    CHECK(spoofed_host.status == 403);
    CHECK_THAT(spoofed_host.body, Catch::Contains("Host"));

    auto spoofed_origin = raw_http(a.port, post_mcp(a.host(), tools_list_body(), "Origin: http://evil.example\r\n"));
    INFO(spoofed_origin.head << spoofed_origin.body);
    CHECK(spoofed_origin.status == 403);
    CHECK_THAT(spoofed_origin.body, Catch::Contains("Origin"));
    others_are_served(a);
}

namespace {

// What a refusal shows a client: its status line, its challenge and its body, without the request id
// (which differs on every answer).
std::string shown(raw_response const& r) {
    std::string challenge;
    if (auto at = r.head.find("WWW-Authenticate: "); at != std::string::npos)
        challenge = r.head.substr(at, r.head.find("\r\n", at) - at);
    return r.head.substr(0, r.head.find("\r\n")) + "\n" + challenge + "\n" + r.body;
}

// The median of `n` timings of `request`, in microseconds: printed, never asserted on.
long median_us(std::function<raw_response()> const& request, int n) {
    std::vector<long> took;
    for (int i = 0; i < n; ++i) {
        auto start = std::chrono::steady_clock::now();
        request();
        took.push_back(
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(took.begin(), took.end());
    return took[took.size() / 2];
}

}  // namespace

TEST_CASE("a guessed token is refused with 401 alike whether it is near the real one or nowhere near") {
    abused_airlock a;
    std::string const real = token;
    std::vector<std::string> const guesses{
        real.substr(0, real.size() - 1) + "g",  // all but the last character right
        "g" + real.substr(1),                   // all but the first
        real.substr(0, real.size() - 1),        // a prefix
        real + "0",                             // one character more
        std::string(real.size(), 'z'),          // nothing right
        bob_token + std::string("x"),           // near another principal's
    };
    auto refused = [&](std::string const& t) { return raw_http(a.port, post_mcp(a.host(), tools_list_body(), "", t)); };
    auto const first = refused(guesses[0]);
    INFO(first.head << first.body);
    CHECK(first.status == 401);
    for (auto const& g : guesses) {
        auto r = refused(g);
        CHECK(shown(r) == shown(first));  // nothing tells which part was wrong
        CHECK(r.body.find(g) == std::string::npos);
        CHECK(r.head.find(g) == std::string::npos);
    }
    auto near = median_us([&] { return refused(guesses[0]); }, 30);
    auto far = median_us([&] { return refused(guesses[4]); }, 30);
    std::cout << "abuse: a refused token near the real one took " << near << " us (median of 30), one nowhere near "
              << far << " us\n";
    others_are_served(a);
}

TEST_CASE("a guessed session id, or another principal's, is refused with the same 404 as one that never existed") {
    abused_airlock a;
    auto const session = legacy_session(a.port, token);
    REQUIRE_FALSE(session.empty());
    std::string const list = R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}})";
    auto ok = legacy_post(a.port, token, session, list);
    INFO(ok.head << ok.body);
    REQUIRE(ok.status == 200);

    auto const unknown = legacy_post(a.port, token, std::string(session.size(), 'a'), list);
    INFO(unknown.head << unknown.body);
    CHECK(unknown.status == 404);
    auto near = session;
    near.back() = near.back() == 'a' ? 'b' : 'a';
    for (auto const& r : {legacy_post(a.port, token, near, list), legacy_post(a.port, bob_token, session, list)}) {
        INFO(r.head << r.body);
        CHECK(shown(r) == shown(unknown));
        CHECK(r.body.find(session) == std::string::npos);
    }
    // bob's try did not end or take over alice's session.
    CHECK(legacy_post(a.port, token, session, list).status == 200);
}
