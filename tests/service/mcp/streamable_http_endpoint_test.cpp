#include "service/mcp/streamable_http_endpoint.hpp"

#include "service/http/http_server.hpp"
#include "tests/service/mcp/endpoint_test_backend.hpp"
#include "tests/service/mcp/endpoint_test_client.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <atomic>
#include <regex>
#include <thread>

using namespace airlock;
using namespace airlock::service;
using namespace airlock::testing;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr char const* token = "secret-token";        // alice
constexpr char const* other_token = "other-token";   // bob

mcp_endpoint_options test_options() {
    mcp_endpoint_options o;
    o.authenticate = [](std::string_view t) -> std::optional<std::string> {
        if (t == token) return std::string("alice");
        if (t == other_token) return std::string("bob");
        return std::nullopt;
    };
    return o;
}

std::string const init_body =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
    R"("capabilities":{"sampling":{}},"clientInfo":{"name":"raw-test","version":"1"}}})";

std::string const modern_meta =
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},)"
    R"("io.modelcontextprotocol/clientInfo":{"name":"raw-test","version":"1"}})";

std::vector<std::string> modern_headers(std::string const& method, std::string const& name = "") {
    std::vector<std::string> h{"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: " + method};
    if (!name.empty()) h.push_back("Mcp-Name: " + name);
    return h;
}

// The endpoint behind a real http_server on loopback, with the test backend.
struct endpoint_fixture {
    asio::io_context ioc{2};
    std::shared_ptr<test_backend> backend = std::make_shared<test_backend>();
    std::shared_ptr<mcp_endpoint> endpoint;
    std::unique_ptr<http_server> server;
    std::vector<std::thread> threads;
    std::uint16_t port = 0;

    explicit endpoint_fixture(mcp_endpoint_options eo = test_options(), http_server_options ho = {}) {
        ho.port = 0;
        endpoint = std::make_shared<mcp_endpoint>(backend, std::move(eo));
        http_response_handler fallback = [](http_request& req) -> asio::awaitable<http_response> {
            co_return json_error(http::status::not_found, "not_found", "no route", req.version());
        };
        server = std::make_unique<http_server>(ioc, ho, make_mcp_handler(endpoint, fallback));
        server->listen();
        port = server->local_endpoint().port();
        endpoint->listening_on("127.0.0.1", port);
        server->start();
        for (int i = 0; i < 2; ++i) threads.emplace_back([this] { ioc.run(); });
    }
    ~endpoint_fixture() {
        endpoint->shutdown();
        server->stop();
        ioc.stop();
        for (auto& t : threads) t.join();
    }

    std::string host() const { return "127.0.0.1:" + std::to_string(port); }

    std::string request_text(std::string const& method, std::string const& body, std::vector<std::string> const& extra,
                             std::optional<std::string> bearer, std::optional<std::string> host_header, bool close = true) const {
        std::string r = method + " /mcp HTTP/1.1\r\n";
        r += "Host: " + host_header.value_or(host()) + "\r\n";
        if (bearer) r += "Authorization: Bearer " + *bearer + "\r\n";
        if (method == "POST") r += "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
        if (method == "GET") r += "Accept: text/event-stream\r\n";
        for (auto const& h : extra) r += h + "\r\n";
        if (close) r += "Connection: close\r\n";
        r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        return r;
    }

    http_reply_text send(std::string const& method, std::string const& body, std::vector<std::string> const& extra = {},
                         std::optional<std::string> bearer = std::string(token),
                         std::optional<std::string> host_header = std::nullopt) const {
        auto c = raw_connection::tcp(port);
        c.send(request_text(method, body, extra, bearer, host_header));
        c.read_until(reply_complete);
        return parse_reply(c.data);
    }

    http_reply_text post(std::string const& body, std::vector<std::string> const& extra = {},
                         std::optional<std::string> bearer = std::string(token)) const {
        return send("POST", body, extra, bearer);
    }

    // initialize + notifications/initialized; returns the session id.
    std::string initialize(std::string const& bearer = token) const {
        auto r = post(init_body, {}, bearer);
        REQUIRE(r.status == 200);
        auto sid = header_value(r.head, "Mcp-Session-Id");
        REQUIRE(sid.has_value());
        auto n = post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                      {"Mcp-Session-Id: " + *sid, "MCP-Protocol-Version: 2025-11-25"}, bearer);
        REQUIRE(n.status == 202);
        return *sid;
    }

    static std::vector<std::string> in_session(std::string const& sid) {
        return {"Mcp-Session-Id: " + sid, "MCP-Protocol-Version: 2025-11-25"};
    }
};

json::object body_json(http_reply_text const& r) { return json::parse(r.body).as_object(); }

// The JSON-RPC messages carried by an SSE body, in order (the priming event carries none).
std::vector<json::object> sse_messages(std::string const& body) {
    std::vector<json::object> out;
    for (auto const& e : sse_events_of(body))
        if (!e.data.empty()) out.push_back(json::parse(e.data).as_object());
    return out;
}

std::int64_t error_code_of(http_reply_text const& r) { return body_json(r).at("error").at("code").as_int64(); }

}  // namespace

// ---------------------------------------------------------------- the door

TEST_CASE("the DNS rebinding probe, a foreign Host with a foreign Origin, is refused with 403") {
    endpoint_fixture f;
    auto r = f.send("POST", init_body, {"Origin: http://evil.example.com"}, std::string(token), std::string("evil.example.com"));
    CHECK(r.status == 403);
    CHECK(body_json(r).at("error").at("message").as_string().find("Forbidden") == 0);
    CHECK(f.endpoint->session_count() == 0);
}

TEST_CASE("a foreign Origin is refused with 403 even when the Host is right") {
    endpoint_fixture f;
    auto r = f.send("POST", init_body, {"Origin: http://evil.example.com"});
    CHECK(r.status == 403);
}

TEST_CASE("a Host and Origin naming the listening address are accepted") {
    endpoint_fixture f;
    auto r = f.send("POST", init_body, {"Origin: http://" + f.host()});
    CHECK(r.status == 200);
    auto localhost = f.send("POST", init_body, {}, std::string(token), "localhost:" + std::to_string(f.port));
    CHECK(localhost.status == 200);
}

TEST_CASE("a browser client at an allowed origin gets its CORS preflight answered and may read the replies") {
    auto o = test_options();
    o.allowed_origins = {"https://app.example.com"};
    endpoint_fixture f(o);
    // The preflight carries no credentials; it is answered, and says what the browser may send.
    auto pre = f.send("OPTIONS", "",
                      {"Origin: https://app.example.com", "Access-Control-Request-Method: POST",
                       "Access-Control-Request-Headers: authorization, content-type, mcp-protocol-version, mcp-param-region"},
                      std::nullopt);
    CHECK(pre.status == 204);
    CHECK(header_value(pre.head, "Access-Control-Allow-Origin") == "https://app.example.com");
    CHECK(header_value(pre.head, "Access-Control-Allow-Headers") ==
          "authorization, content-type, mcp-protocol-version, mcp-param-region");
    CHECK_THAT(*header_value(pre.head, "Access-Control-Allow-Methods"), Catch::Contains("POST"));
    // The request itself: its reply names the origin and lets the browser read the session id.
    auto r = f.send("POST", init_body, {"Origin: https://app.example.com"});
    CHECK(r.status == 200);
    CHECK(header_value(r.head, "Access-Control-Allow-Origin") == "https://app.example.com");
    CHECK_THAT(*header_value(r.head, "Access-Control-Expose-Headers"), Catch::Contains("Mcp-Session-Id"));
    // Another origin gets neither a preflight nor a reply.
    auto foreign = f.send("OPTIONS", "", {"Origin: https://evil.example.com", "Access-Control-Request-Method: POST"},
                          std::nullopt);
    CHECK(foreign.status == 403);
    CHECK_FALSE(header_value(foreign.head, "Access-Control-Allow-Origin"));
    // And a request with no Origin (not from a browser) carries no CORS headers.
    auto plain = f.send("POST", init_body);
    CHECK_FALSE(header_value(plain.head, "Access-Control-Allow-Origin"));
}

TEST_CASE("every reply on /mcp says it varies with Origin, whether or not the request carried one") {
    auto o = test_options();
    o.allowed_origins = {"https://app.example.com"};
    endpoint_fixture f(o);
    // Without an Origin the reply has no CORS headers; a cache that kept it for a browser at the
    // allowed origin would hand that browser a reply it may not read.
    auto plain = f.send("POST", init_body);
    CHECK(plain.status == 200);
    CHECK_FALSE(header_value(plain.head, "Access-Control-Allow-Origin"));
    CHECK(header_value(plain.head, "Vary") == "Origin");
    auto allowed = f.send("POST", init_body, {"Origin: https://app.example.com"});
    CHECK(header_value(allowed.head, "Vary") == "Origin");
    auto foreign = f.send("POST", init_body, {"Origin: https://evil.example.com"});
    CHECK(foreign.status == 403);
    CHECK(header_value(foreign.head, "Vary") == "Origin");
    auto unauthenticated = f.send("POST", init_body, {}, std::nullopt);
    CHECK(unauthenticated.status == 401);
    CHECK(header_value(unauthenticated.head, "Vary") == "Origin");
    // A notification stream too: its head goes through a cache like any reply.
    auto sid = f.initialize();
    auto c = raw_connection::tcp(f.port);
    c.send(f.request_text("GET", "", endpoint_fixture::in_session(sid), std::string(token), std::nullopt, false));
    REQUIRE(c.read_until([](std::string const& d) { return d.find("\r\n\r\n") != std::string::npos; }));
    CHECK(header_value(c.data.substr(0, c.data.find("\r\n\r\n")), "Vary") == "Origin");
    // A preflight's allowed headers echo the ones asked for: it varies with those as well.
    auto pre = f.send("OPTIONS", "", {"Origin: https://app.example.com", "Access-Control-Request-Method: POST",
                                      "Access-Control-Request-Headers: authorization"},
                      std::nullopt);
    CHECK(header_value(pre.head, "Vary") == "Origin, Access-Control-Request-Headers");
}

TEST_CASE("a request without a bearer token gets 401 with a Bearer challenge") {
    endpoint_fixture f;
    auto r = f.post(init_body, {}, std::nullopt);
    CHECK(r.status == 401);
    CHECK(header_value(r.head, "WWW-Authenticate") == R"(Bearer realm="airlock")");
}

TEST_CASE("a request with a wrong bearer token gets 401 naming the token invalid") {
    endpoint_fixture f;
    auto r = f.post(init_body, {}, std::string("not-the-token"));
    CHECK(r.status == 401);
    CHECK_THAT(header_value(r.head, "WWW-Authenticate").value_or(""), Catch::Contains("invalid_token"));
    CHECK(f.endpoint->session_count() == 0);
}

TEST_CASE("without tokens the endpoint refuses everyone unless anonymous access is allowed") {
    mcp_endpoint_options closed;
    endpoint_fixture refusing(closed);
    CHECK(refusing.post(init_body, {}, std::nullopt).status == 401);

    mcp_endpoint_options open;
    open.allow_anonymous = true;
    endpoint_fixture admitting(open);
    CHECK(admitting.post(init_body, {}, std::nullopt).status == 200);
}

TEST_CASE("the backend sees the token's principal and never the token") {
    endpoint_fixture f;
    auto sid = f.initialize();
    auto r = f.post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", f.in_session(sid));
    REQUIRE(r.status == 200);
    auto seen = f.backend->principals();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0] == "alice");
}

// ---------------------------------------------------------------- legacy sessions

TEST_CASE("initialize opens a session with a fresh 128-bit id and the backend's identity") {
    endpoint_fixture f;
    auto a = f.post(init_body);
    auto b = f.post(init_body);
    REQUIRE(a.status == 200);
    auto sid = header_value(a.head, "Mcp-Session-Id").value_or("");
    CHECK(std::regex_match(sid, std::regex("[0-9a-f]{32}")));
    CHECK(sid != header_value(b.head, "Mcp-Session-Id").value_or(""));
    auto result = body_json(a).at("result").as_object();
    CHECK(result.at("protocolVersion") == "2025-11-25");
    CHECK(result.at("serverInfo").at("name") == "endpoint-test-backend");
    CHECK(result.at("capabilities").at("tools").at("listChanged") == true);
    CHECK(result.at("instructions") == "Test tools only.");
}

TEST_CASE("initialize with a version airlock does not speak is answered with the latest legacy one") {
    endpoint_fixture f;
    auto r = f.post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-01-01",)"
                    R"("capabilities":{},"clientInfo":{"name":"old","version":"1"}}})");
    REQUIRE(r.status == 200);
    CHECK(body_json(r).at("result").at("protocolVersion") == "2025-11-25");
}

TEST_CASE("a legacy request without a session id gets 400") {
    endpoint_fixture f;
    auto r = f.post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", {"MCP-Protocol-Version: 2025-11-25"});
    CHECK(r.status == 400);
}

TEST_CASE("a request naming an unknown session gets 404") {
    endpoint_fixture f;
    auto r = f.post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", f.in_session("0123456789abcdef0123456789abcdef"));
    CHECK(r.status == 404);
}

TEST_CASE("another principal's session id is as unknown as a made-up one") {
    endpoint_fixture f;
    auto sid = f.initialize(token);
    auto r = f.post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", f.in_session(sid), std::string(other_token));
    CHECK(r.status == 404);
}

TEST_CASE("DELETE ends a session: the backend hears of it and the id answers 404 afterwards") {
    endpoint_fixture f;
    auto sid = f.initialize();
    auto d = f.send("DELETE", "", f.in_session(sid));
    CHECK(d.status == 204);
    CHECK(f.backend->closed_sessions() == std::vector<std::string>{sid});
    auto r = f.post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", f.in_session(sid));
    CHECK(r.status == 404);
    CHECK(f.endpoint->session_count() == 0);
}

TEST_CASE("a session idle for longer than the timeout has ended") {
    auto offset = std::make_shared<std::atomic<long>>(0);
    auto o = test_options();
    o.session_idle_timeout = 60s;
    o.clock = [offset] { return std::chrono::steady_clock::time_point{} + std::chrono::hours(1) + std::chrono::seconds(offset->load()); };
    endpoint_fixture f(o);
    auto sid = f.initialize();
    *offset = 61;
    auto r = f.post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", f.in_session(sid));
    CHECK(r.status == 404);
    CHECK(f.backend->closed_sessions() == std::vector<std::string>{sid});
}

// ---------------------------------------------------------------- session limits

namespace {

// A clock the test moves by hand, in milliseconds past an arbitrary start.
struct manual_clock {
    std::shared_ptr<std::atomic<long>> elapsed_ms = std::make_shared<std::atomic<long>>(0);
    std::function<std::chrono::steady_clock::time_point()> function() const {
        return [e = elapsed_ms] { return std::chrono::steady_clock::time_point{} + std::chrono::hours(1) + std::chrono::milliseconds(e->load()); };
    }
    void advance(std::chrono::milliseconds d) const { *elapsed_ms += static_cast<long>(d.count()); }
};

mcp_endpoint_options with_session_limits(std::size_t total, std::size_t each) {
    auto o = test_options();
    o.max_sessions = total;
    o.max_sessions_per_principal = each;
    return o;
}

// One session per principal, idling out after `idle` on `clock`.
mcp_endpoint_options one_session_each(manual_clock const& clock, std::chrono::milliseconds idle) {
    auto o = with_session_limits(1024, 1);
    o.session_idle_timeout = idle;
    o.clock = clock.function();
    return o;
}

std::string const tools_list = R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})";

}  // namespace

TEST_CASE("a principal at its session limit gets 429 saying how to free one, while another principal still opens sessions") {
    endpoint_fixture f(with_session_limits(1024, 2));
    f.initialize(token);
    f.initialize(token);
    auto refused = f.post(init_body);
    CHECK(refused.status == 429);
    CHECK_FALSE(header_value(refused.head, "Mcp-Session-Id").has_value());
    // Both sessions were opened just now: the earlier can idle out in the full 30 minutes at best.
    auto retry = header_value(refused.head, "Retry-After");
    REQUIRE(retry.has_value());
    CHECK(std::stoi(*retry) >= 1);
    CHECK(std::stoi(*retry) <= 1801);
    auto body = body_json(refused);
    CHECK(body.at("id") == 1);
    std::string message(body.at("error").at("message").as_string());
    CHECK_THAT(message, Catch::Contains("'alice'") && Catch::Contains("DELETE") && Catch::Contains("Mcp-Session-Id") &&
                            Catch::Contains("expires after 30m"));
    f.initialize(other_token);
    CHECK(f.endpoint->session_count() == 3);
}

TEST_CASE("the total session limit still answers 503 when the caller is under its own share") {
    endpoint_fixture f(with_session_limits(2, 2));
    f.initialize(token);
    f.initialize(other_token);
    auto refused = f.post(init_body);
    CHECK(refused.status == 503);
    CHECK(header_value(refused.head, "Retry-After") == "1");
    CHECK(body_json(refused).at("error").at("message") == "Too many sessions; retry later");
    CHECK(f.endpoint->session_count() == 2);
}

TEST_CASE("deleting a session frees its principal's slot for a new one") {
    endpoint_fixture f(with_session_limits(1024, 1));
    auto sid = f.initialize();
    CHECK(f.post(init_body).status == 429);
    CHECK(f.send("DELETE", "", f.in_session(sid)).status == 204);
    auto again = f.post(init_body);
    CHECK(again.status == 200);
    CHECK(f.endpoint->session_count() == 1);
}

TEST_CASE("a session that idles out frees its principal's slot for a new one, after the wait the 429 named") {
    manual_clock clock;
    endpoint_fixture f(one_session_each(clock, 60s));
    auto sid = f.initialize();
    clock.advance(30s);
    auto refused = f.post(init_body);
    CHECK(refused.status == 429);
    // 30 s of its 60 s are left, and expiry is idle for longer than that: 31 s.
    auto retry = header_value(refused.head, "Retry-After");
    REQUIRE(retry == "31");
    clock.advance(std::chrono::seconds(std::stoi(*retry)));
    CHECK(f.post(init_body).status == 200);
    CHECK(f.backend->closed_sessions() == std::vector<std::string>{sid});
    CHECK(f.endpoint->session_count() == 1);
}

TEST_CASE("a slot held by an expired session is freed at once, even between the once-a-second sweeps") {
    manual_clock clock;
    endpoint_fixture f(one_session_each(clock, 100ms));
    auto sid = f.initialize();
    clock.advance(500ms);  // expired, but the last sweep was under a second ago
    CHECK(f.post(init_body).status == 200);
    CHECK(f.backend->closed_sessions() == std::vector<std::string>{sid});
}

TEST_CASE("a session with its notification stream open does not idle out, and does once the client closes the stream") {
    manual_clock clock;
    auto o = test_options();
    o.session_idle_timeout = 60s;
    o.clock = clock.function();
    endpoint_fixture f(o);
    auto sid = f.initialize();
    {
        auto stream = raw_connection::tcp(f.port);
        stream.send(f.request_text("GET", "", f.in_session(sid), std::string(token), std::nullopt));
        REQUIRE(stream.read_until([](std::string const& d) { return d.find("retry:") != std::string::npos; }));
        clock.advance(10min);
        CHECK(f.post(tools_list, f.in_session(sid)).status == 200);
        clock.advance(10min);
        CHECK(f.post(tools_list, f.in_session(sid)).status == 200);
    }
    // The stream's end is noticed on the server's side a moment later; until then the session is
    // still live, and each request moves its idle clock on.
    CHECK(eventually([&] {
        clock.advance(61s);
        return f.post(tools_list, f.in_session(sid)).status == 404;
    }));
    CHECK(f.backend->closed_sessions() == std::vector<std::string>{sid});
}

TEST_CASE("an unsupported MCP-Protocol-Version on a legacy session gets 400") {
    endpoint_fixture f;
    auto sid = f.initialize();
    auto r = f.post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", {"Mcp-Session-Id: " + sid, "MCP-Protocol-Version: 2025-11-25"});
    REQUIRE(r.status == 200);
    // Versions airlock does not speak, old or garbled, are refused naming the version and the supported ones.
    for (std::string version : {"2024-11-05", "banana"}) {
        auto bad = f.post(R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})", {"Mcp-Session-Id: " + sid, "MCP-Protocol-Version: " + version});
        CHECK(bad.status == 400);
        CHECK_THAT(bad.body, Catch::Contains("unsupported MCP-Protocol-Version '" + version + "'") &&
                                 Catch::Contains("2025-11-25"));
    }
}

TEST_CASE("a notification is accepted with 202 and no body") {
    endpoint_fixture f;
    auto sid = f.initialize();
    auto r = f.post(R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})", f.in_session(sid));
    CHECK(r.status == 202);
    CHECK(r.body.empty());
    CHECK(f.backend->notifications() == std::vector<std::string>{"notifications/roots/list_changed"});
}

TEST_CASE("a request the backend answers without emitting anything is answered as JSON") {
    endpoint_fixture f;
    auto sid = f.initialize();
    auto r = f.post(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})",
                    f.in_session(sid));
    REQUIRE(r.status == 200);
    CHECK_THAT(header_value(r.head, "Content-Type").value_or(""), Catch::StartsWith("application/json"));
    CHECK(body_json(r).at("result").at("content").at(0).at("text") == "hi");
    CHECK_FALSE(body_json(r).at("result").as_object().contains("resultType"));  // legacy results stay as they were
}

TEST_CASE("a request whose backend sends progress is answered as SSE that starts with a priming event") {
    endpoint_fixture f;
    auto sid = f.initialize();
    auto r = f.post(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count","arguments":{"to":2},)"
                    R"("_meta":{"progressToken":"p1"}}})",
                    f.in_session(sid));
    REQUIRE(r.status == 200);
    CHECK_THAT(header_value(r.head, "Content-Type").value_or(""), Catch::StartsWith("text/event-stream"));
    CHECK(header_value(r.head, "X-Accel-Buffering") == "no");
    CHECK(r.complete);
    auto events = sse_events_of(r.body);
    REQUIRE(events.size() == 4);
    CHECK_FALSE(events[0].id.empty());
    CHECK(events[0].data.empty());
    CHECK(events[0].retry.has_value());
    auto msgs = sse_messages(r.body);
    REQUIRE(msgs.size() == 3);
    CHECK(msgs[0].at("method") == "notifications/progress");
    CHECK(msgs[0].at("params").at("progressToken") == "p1");
    CHECK(msgs[1].at("params").at("progress") == 2);
    CHECK(msgs[2].at("id") == 7);
    CHECK(msgs[2].at("result").at("content").at(0).at("text") == "2");
    CHECK(events[1].id != events[0].id);
}

TEST_CASE("a question to the client goes out on the request's stream and its POSTed answer comes back") {
    endpoint_fixture f;
    auto sid = f.initialize();
    auto asking = raw_connection::tcp(f.port);
    asking.send(f.request_text("POST", R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ask","arguments":{"prompt":"6*7?"}}})",
                               f.in_session(sid), std::string(token), std::nullopt));
    REQUIRE(asking.read_until([](std::string const& d) {
        auto r = parse_reply(d);
        return r.body.find("sampling/createMessage") != std::string::npos && r.body.find("\n\n", r.body.find("sampling")) != std::string::npos;
    }));
    auto msgs = sse_messages(parse_reply(asking.data).body);
    REQUIRE(msgs.size() == 1);
    CHECK(msgs[0].at("method") == "sampling/createMessage");
    CHECK(msgs[0].at("params").at("messages").at(0).at("content").at("text") == "6*7?");
    auto question = json::serialize(msgs[0].at("id"));

    auto answer = f.post(R"({"jsonrpc":"2.0","id":)" + question +
                             R"(,"result":{"role":"assistant","content":{"type":"text","text":"42"},"model":"m"}})",
                         f.in_session(sid));
    CHECK(answer.status == 202);
    REQUIRE(asking.read_until(reply_complete));
    auto all = sse_messages(parse_reply(asking.data).body);
    REQUIRE(all.size() == 2);
    CHECK(all[1].at("id") == 9);
    CHECK(all[1].at("result").at("content").at(0).at("text") == "the model said: 42");
}

TEST_CASE("notifications/cancelled stops the request it names") {
    endpoint_fixture f;
    auto sid = f.initialize();
    auto waiting = raw_connection::tcp(f.port);
    waiting.send(f.request_text("POST", R"({"jsonrpc":"2.0","id":"w1","method":"tools/call","params":{"name":"wait"}})",
                                f.in_session(sid), std::string(token), std::nullopt));
    REQUIRE(eventually([&] { return f.backend->waits_started() == 1; }));
    auto c = f.post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w1","reason":"test"}})",
                    f.in_session(sid));
    CHECK(c.status == 202);
    REQUIRE(eventually([&] { return f.backend->waits_cancelled() == 1; }));
    // No response for a cancelled request: the stream ends with nothing but its priming event.
    REQUIRE(waiting.read_until(reply_complete));
    CHECK(sse_messages(parse_reply(waiting.data).body).empty());
}

TEST_CASE("GET opens the session's notification stream: a priming event, then list changes") {
    endpoint_fixture f;
    auto sid = f.initialize();
    auto stream = raw_connection::tcp(f.port);
    stream.send(f.request_text("GET", "", f.in_session(sid), std::string(token), std::nullopt));
    REQUIRE(stream.read_until([](std::string const& d) { return d.find("retry:") != std::string::npos; }));
    REQUIRE(eventually([&] { return f.backend->listener_count() == 1; }));
    auto second = f.send("GET", "", f.in_session(sid));
    CHECK(second.status == 409);
    f.backend->emit_tools_changed();
    REQUIRE(stream.read_until([](std::string const& d) { return d.find("list_changed") != std::string::npos; }));
    auto r = parse_reply(stream.data);
    CHECK_THAT(header_value(r.head, "Content-Type").value_or(""), Catch::StartsWith("text/event-stream"));
    auto events = sse_events_of(r.body);
    REQUIRE(events.size() == 2);
    CHECK(events[0].data.empty());
    CHECK(json::parse(events[1].data).at("method") == "notifications/tools/list_changed");
    stream.close();
    CHECK(eventually([&] { return f.backend->listener_count() == 0; }));
}

TEST_CASE("a notification stream stays open past the connection's idle deadline") {
    http_server_options ho;
    ho.read_timeout = 100ms;
    ho.idle_timeout = 100ms;
    auto o = test_options();
    o.keep_alive_interval = 60s;  // no keep-alive traffic: only the stream's own lifetime counts
    endpoint_fixture f(o, ho);
    auto sid = f.initialize();
    auto stream = raw_connection::tcp(f.port);
    stream.send(f.request_text("GET", "", f.in_session(sid), std::string(token), std::nullopt));
    REQUIRE(stream.read_until([](std::string const& d) { return d.find("retry:") != std::string::npos; }));
    std::this_thread::sleep_for(400ms);
    f.backend->emit_tools_changed();
    CHECK(stream.read_until([](std::string const& d) { return d.find("list_changed") != std::string::npos; }));
}

TEST_CASE("a malformed JSON body gets 400 with a parse error") {
    endpoint_fixture f;
    auto r = f.post(R"({"jsonrpc":"2.0","id":1,"method":)");
    CHECK(r.status == 400);
    CHECK(error_code_of(r) == -32700);
}

TEST_CASE("an error answering a POSTed message whose id cannot be read has no id member, as MCP's schema writes it") {
    endpoint_fixture f;
    for (std::string body : {R"({"jsonrpc":"2.0","id":1,"method":)", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])"}) {
        auto r = f.post(body);
        INFO(body);
        CHECK(r.status == 400);
        // MCP types an error's id as `id?: RequestId`; a null id fails the TypeScript SDK's schema.
        CHECK_FALSE(body_json(r).contains("id"));
    }
}

TEST_CASE("a body over the server's limit gets 413") {
    http_server_options ho;
    ho.body_limit = 256;
    endpoint_fixture f(test_options(), ho);
    auto r = f.post(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":")" + std::string(1000, 'x') + R"("}})");
    CHECK(r.status == 413);
}

TEST_CASE("a body or headers over the server's limits sent to /mcp get 413 or 431 with a JSON-RPC error and no id") {
    http_server_options ho;
    ho.body_limit = 256;
    ho.header_limit = 1024;
    ho.refusal_body = mcp_refusal_body();
    endpoint_fixture f(test_options(), ho);
    // The status says what happened; the body is one an MCP client parses. The request was not
    // read, so the error has no id (MCP's schema allows that; an id of null it does not).
    auto body = f.post(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":")" + std::string(1000, 'x') + R"("}})");
    CHECK(body.status == 413);
    CHECK(header_value(body.head, "Content-Type") == "application/json");
    auto refused = body_json(body);
    CHECK(refused.at("jsonrpc") == "2.0");
    CHECK_FALSE(refused.contains("id"));
    CHECK(refused.at("error").at("code") == -32600);
    CHECK_THAT(std::string(refused.at("error").at("message").as_string()), Catch::Contains("exceeds 256 bytes"));
    auto headers = f.post(init_body, {"X-Padding: " + std::string(2000, 'x')});
    CHECK(headers.status == 431);
    auto too_many = body_json(headers);
    CHECK_FALSE(too_many.contains("id"));
    CHECK(too_many.at("error").at("code") == -32600);
    CHECK_THAT(std::string(too_many.at("error").at("message").as_string()), Catch::Contains("exceed 1024 bytes"));
    // Another route keeps the server's own error body.
    auto c = raw_connection::tcp(f.port);
    c.send("POST /healthz HTTP/1.1\r\nHost: " + f.host() + "\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n");
    REQUIRE(c.read_until(reply_complete));
    auto other = parse_reply(c.data);
    CHECK(other.status == 413);
    CHECK(json::parse(other.body).at("error").at("code") == "body_too_large");
}

TEST_CASE("paths other than /mcp go to the fallback handler") {
    endpoint_fixture f;
    auto c = raw_connection::tcp(f.port);
    c.send("GET /healthz HTTP/1.1\r\nHost: " + f.host() + "\r\nConnection: close\r\n\r\n");
    REQUIRE(c.read_until(reply_complete));
    CHECK(parse_reply(c.data).status == 404);
    CHECK_THAT(parse_reply(c.data).body, Catch::Contains("no route"));
}

// ---------------------------------------------------------------- modern requests

TEST_CASE("server/discover lists every version airlock speaks, the capabilities and serverInfo") {
    endpoint_fixture f;
    auto r = f.post(R"({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{)" + modern_meta + "}}",
                    modern_headers("server/discover"));
    REQUIRE(r.status == 200);
    auto result = body_json(r).at("result").as_object();
    CHECK(result.at("resultType") == "complete");
    CHECK(result.at("supportedVersions") == json::parse(R"(["2026-07-28","2025-11-25","2025-06-18","2025-03-26"])"));
    CHECK(result.at("capabilities").at("tools").at("listChanged") == true);
    CHECK(result.at("_meta").at("io.modelcontextprotocol/serverInfo").at("name") == "endpoint-test-backend");
    CHECK(result.at("ttlMs") == 0);
    CHECK(result.at("cacheScope") == "private");
    CHECK(f.endpoint->session_count() == 0);
}

TEST_CASE("a modern tools/list result carries resultType, ttlMs 0 and cacheScope private") {
    endpoint_fixture f;
    auto r = f.post(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{)" + modern_meta + "}}", modern_headers("tools/list"));
    REQUIRE(r.status == 200);
    auto result = body_json(r).at("result").as_object();
    CHECK(result.at("resultType") == "complete");
    CHECK(result.at("ttlMs") == 0);
    CHECK(result.at("cacheScope") == "private");
    CHECK(result.at("tools").as_array().size() == 4);
}

TEST_CASE("a modern tools/call result carries resultType complete and no caching hints") {
    endpoint_fixture f;
    auto r = f.post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"m"},)" +
                        modern_meta + "}}",
                    modern_headers("tools/call", "echo"));
    REQUIRE(r.status == 200);
    auto result = body_json(r).at("result").as_object();
    CHECK(result.at("resultType") == "complete");
    CHECK_FALSE(result.contains("ttlMs"));
    CHECK(result.at("content").at(0).at("text") == "m");
}

TEST_CASE("a modern request whose Mcp-Name disagrees with its body gets 400 with HeaderMismatch") {
    endpoint_fixture f;
    auto r = f.post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"m"},)" +
                        modern_meta + "}}",
                    modern_headers("tools/call", "count"));
    CHECK(r.status == 400);
    CHECK(error_code_of(r) == -32020);
    CHECK(f.backend->principals().empty());
}

TEST_CASE("a modern request without _meta gets 400 with InvalidParams") {
    endpoint_fixture f;
    auto r = f.post(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})", modern_headers("tools/list"));
    CHECK(r.status == 400);
    CHECK(error_code_of(r) == -32602);
}

TEST_CASE("a modern request for an unknown method gets 404 with MethodNotFound") {
    endpoint_fixture f;
    auto r = f.post(R"({"jsonrpc":"2.0","id":1,"method":"nope/nothing","params":{)" + modern_meta + "}}", modern_headers("nope/nothing"));
    CHECK(r.status == 404);
    CHECK(error_code_of(r) == -32601);
}

TEST_CASE("a modern request for a method 2026-07-28 removed gets 404 with MethodNotFound") {
    endpoint_fixture f;
    for (std::string method : {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}) {
        INFO(method);
        auto r = f.post(R"({"jsonrpc":"2.0","id":3,"method":")" + method + R"(","params":{)" + modern_meta + "}}",
                        modern_headers(method));
        CHECK(r.status == 404);
        CHECK(error_code_of(r) == -32601);
        CHECK(body_json(r).at("id") == 3);
        CHECK_FALSE(header_value(r.head, "Mcp-Session-Id").has_value());
    }
    CHECK(f.backend->principals().empty());
}

TEST_CASE("a legacy initialize sent with a 2026-07-28 version header still opens a session") {
    endpoint_fixture f;
    auto r = f.post(init_body, {"MCP-Protocol-Version: 2026-07-28"});
    CHECK(r.status == 200);
    CHECK(header_value(r.head, "Mcp-Session-Id").has_value());
    CHECK(body_json(r).at("result").at("protocolVersion") == "2025-11-25");
}

TEST_CASE("a modern request that needs a capability the client did not declare ends with 400 and -32021") {
    endpoint_fixture f;
    // "ask" puts sampling/createMessage to the client, whose _meta declares no capabilities.
    auto r = f.post(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask","arguments":{"prompt":"?"},)" +
                        modern_meta + "}}",
                    modern_headers("tools/call", "ask"));
    CHECK(r.status == 400);
    CHECK(error_code_of(r) == -32021);
    CHECK(body_json(r).at("id") == 4);
    CHECK(body_json(r).at("error").at("data").at("requiredCapabilities") == json::parse(R"({"sampling":{}})"));
}

namespace {

std::string const sampling_meta =
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},)"
    R"("io.modelcontextprotocol/clientInfo":{"name":"raw-test","version":"1"}})";

// A modern tools/call of "ask" (a sampling question), with extra params (inputResponses, requestState).
std::string modern_ask(int id, std::string const& prompt, std::string const& extra = "") {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":"ask","arguments":{"prompt":")" +
           prompt + R"("},)" + extra + sampling_meta + "}}";
}

std::string const sampled_answer =
    R"({"role":"assistant","content":{"type":"text","text":"42"},"model":"test-model","stopReason":"endTurn"})";

// The retry's extra params: the answer under `key` and the requestState of `first`.
std::string retry_params(json::object const& first, std::string const& key, std::string const& answer = sampled_answer) {
    return R"("inputResponses":{")" + key + R"(":)" + answer + R"(},"requestState":)" +
           json::serialize(first.at("requestState")) + ",";
}

http_reply_text post_ask(endpoint_fixture const& f, int id, std::string const& prompt, std::string const& extra = "",
                         std::string const& bearer = token) {
    return f.post(modern_ask(id, prompt, extra), modern_headers("tools/call", "ask"), bearer);
}

// The InputRequiredResult of a first attempt at asking `prompt`.
json::object first_round(endpoint_fixture const& f, std::string const& prompt = "x") {
    auto r = body_json(post_ask(f, 1, prompt)).at("result").as_object();
    REQUIRE(r.at("resultType") == "input_required");
    return r;
}

// The call completed with the answer sampled_answer gives.
bool answered(http_reply_text const& r) {
    auto reply = body_json(r);
    auto const* result = reply.if_contains("result");
    return result && result->at("content").at(0).at("text") == "the model said: 42";
}

}  // namespace

TEST_CASE("a 2026-07-28 caller asked a question gets an InputRequiredResult, and its retry with the answer completes the call") {
    endpoint_fixture f;
    auto first = post_ask(f, 1, "6*7?");
    REQUIRE(first.status == 200);
    auto result = body_json(first).at("result").as_object();
    CHECK(body_json(first).at("id") == 1);
    CHECK(result.at("resultType") == "input_required");
    REQUIRE(result.at("inputRequests").as_object().size() == 1);
    auto const& [key, question] = *result.at("inputRequests").as_object().begin();
    CHECK(key == "sampling-1");
    CHECK(question.at("method") == "sampling/createMessage");
    CHECK(question.at("params").at("messages").at(0).at("content").at("text") == "6*7?");
    REQUIRE(result.at("requestState").is_string());

    auto retry = post_ask(f, 2, "6*7?", retry_params(result, std::string(key)));
    REQUIRE(retry.status == 200);
    CHECK(body_json(retry).at("id") == 2);
    CHECK(body_json(retry).at("result").at("resultType") == "complete");
    CHECK(answered(retry));
}

TEST_CASE("a tampered requestState is refused with -32602, and the untampered one still completes the call") {
    endpoint_fixture f;
    auto first = first_round(f);
    auto tampered = first;
    tampered["requestState"] = std::string(first.at("requestState").as_string()) + "-TAMPERED";
    auto refused = post_ask(f, 2, "x", retry_params(tampered, "sampling-1"));
    CHECK(error_code_of(refused) == -32602);
    CHECK_THAT(std::string(body_json(refused).at("error").at("message").as_string()), Catch::Contains("requestState"));

    auto ok = post_ask(f, 3, "x", retry_params(first, "sampling-1"));
    CHECK(answered(ok));
}

TEST_CASE("a requestState is refused on another request and from another caller") {
    endpoint_fixture f;
    auto first = first_round(f);
    auto other_args = post_ask(f, 2, "y", retry_params(first, "sampling-1"));
    CHECK(error_code_of(other_args) == -32602);
    auto other_caller = post_ask(f, 3, "x", retry_params(first, "sampling-1"), other_token);
    CHECK(error_code_of(other_caller) == -32602);
}

TEST_CASE("a retry without the answer is asked the same question again under a new requestState") {
    endpoint_fixture f;
    auto first = first_round(f);
    std::string no_answer = R"("inputResponses":{"unrelated":{"action":"cancel"}},"requestState":)" +
                            json::serialize(first.at("requestState")) + ",";
    auto again = body_json(post_ask(f, 2, "x", no_answer)).at("result").as_object();
    CHECK(again.at("resultType") == "input_required");
    CHECK(again.at("inputRequests").as_object().contains("sampling-1"));
    CHECK(again.at("requestState") != first.at("requestState"));
    // The first round's state is spent.
    auto stale = post_ask(f, 3, "x", retry_params(first, "sampling-1"));
    CHECK(error_code_of(stale) == -32602);
    auto done = post_ask(f, 4, "x", retry_params(again, "sampling-1"));
    CHECK(answered(done));
}

TEST_CASE("an answer that does not fit its question is refused naming the field, and the round stays open") {
    endpoint_fixture f;
    auto first = first_round(f);
    auto bad = post_ask(f, 2, "x", retry_params(first, "sampling-1", R"({"role":"assistant","content":{}})"));
    CHECK(error_code_of(bad) == -32602);
    CHECK_THAT(std::string(body_json(bad).at("error").at("message").as_string()),
               Catch::Contains("params.inputResponses.sampling-1.model must be a string"));
    auto null_responses = post_ask(f, 3, "x", R"("inputResponses":null,)");
    CHECK(error_code_of(null_responses) == -32602);
    auto ok = post_ask(f, 4, "x", retry_params(first, "sampling-1"));
    CHECK(answered(ok));
}

TEST_CASE("an answer given ahead of the question completes a 2026-07-28 call in one round trip") {
    endpoint_fixture f;
    std::string ahead = R"("inputResponses":{"sampling-1":)" + sampled_answer + "},";
    auto r = post_ask(f, 1, "x", ahead);
    CHECK(body_json(r).at("result").at("resultType") == "complete");
    CHECK(answered(r));
}

TEST_CASE("a request left waiting for answers past its requestState's lifetime is cancelled") {
    auto o = test_options();
    o.input_request_ttl = 1s;
    endpoint_fixture f(o);
    auto first = first_round(f);
    std::this_thread::sleep_for(2500ms);
    auto late = post_ask(f, 2, "x", retry_params(first, "sampling-1"));
    CHECK(error_code_of(late) == -32602);
}

TEST_CASE("a legacy upstream's resource-not-found error reaches a 2026-07-28 client as InvalidParams") {
    mcp::error_object e{-32002, "Resource not found: test://x", json::value(json::object{{"uri", "test://x"}})};
    mcp_rules::modernize_error("resources/read", e);
    CHECK(e.code == -32602);
    CHECK(e.message == "Resource not found: test://x");
    CHECK(e.data == json::value(json::object{{"uri", "test://x"}}));
    mcp::error_object other{-32002, "something else", std::nullopt};
    mcp_rules::modernize_error("tools/call", other);
    CHECK(other.code == -32002);
}

TEST_CASE("a modern request for a version airlock does not speak gets 400 listing the supported ones") {
    endpoint_fixture f;
    auto meta = std::regex_replace(modern_meta, std::regex("2026-07-28"), "2099-01-01");
    auto r = f.post(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{)" + meta + "}}",
                    {"MCP-Protocol-Version: 2099-01-01", "Mcp-Method: tools/list"});
    CHECK(r.status == 400);
    CHECK(error_code_of(r) == -32022);
    CHECK(body_json(r).at("error").at("data").at("supported").as_array().size() == 4);
}

TEST_CASE("GET and DELETE from a modern client get 405") {
    endpoint_fixture f;
    auto g = f.send("GET", "", {"MCP-Protocol-Version: 2026-07-28"});
    CHECK(g.status == 405);
    CHECK(header_value(g.head, "Allow") == "POST");
    auto d = f.send("DELETE", "", {"MCP-Protocol-Version: 2026-07-28"});
    CHECK(d.status == 405);
}

TEST_CASE("subscriptions/listen acknowledges first, then streams only the list changes asked for") {
    endpoint_fixture f;
    auto stream = raw_connection::tcp(f.port);
    stream.send(f.request_text(
        "POST", R"({"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,)"
                R"("resourceSubscriptions":["file:///x"]},)" + modern_meta + "}}",
        modern_headers("subscriptions/listen"), std::string(token), std::nullopt));
    REQUIRE(stream.read_until([](std::string const& d) { return d.find("acknowledged") != std::string::npos; }));
    REQUIRE(eventually([&] { return f.backend->listener_count() == 1; }));
    f.backend->emit_tools_changed();
    REQUIRE(stream.read_until([](std::string const& d) { return d.find("list_changed") != std::string::npos; }));
    auto msgs = sse_messages(parse_reply(stream.data).body);
    REQUIRE(msgs.size() == 2);
    CHECK(msgs[0].at("method") == "notifications/subscriptions/acknowledged");
    CHECK(msgs[0].at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId") == "sub-1");
    // Resource subscriptions are not offered, so the acknowledgement leaves them out.
    CHECK(msgs[0].at("params").at("notifications") == json::parse(R"({"toolsListChanged":true})"));
    CHECK(msgs[1].at("method") == "notifications/tools/list_changed");
    CHECK(msgs[1].at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId") == "sub-1");
    stream.close();
    CHECK(eventually([&] { return f.backend->listener_count() == 0; }));
}

TEST_CASE("shutdown ends a subscription with its completion result") {
    endpoint_fixture f;
    auto stream = raw_connection::tcp(f.port);
    stream.send(f.request_text("POST",
                               R"({"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},)" +
                                   modern_meta + "}}",
                               modern_headers("subscriptions/listen"), std::string(token), std::nullopt));
    REQUIRE(stream.read_until([](std::string const& d) { return d.find("acknowledged") != std::string::npos; }));
    f.endpoint->shutdown();
    REQUIRE(stream.read_until(reply_complete));
    auto msgs = sse_messages(parse_reply(stream.data).body);
    REQUIRE(msgs.size() == 2);
    CHECK(msgs[1].at("id") == 5);
    CHECK(msgs[1].at("result") == json::parse(R"({"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":5}})"));
}

TEST_CASE("closing a modern request's connection cancels the request") {
    endpoint_fixture f;
    {
        auto c = raw_connection::tcp(f.port);
        c.send(f.request_text("POST", R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait",)" + modern_meta + "}}",
                              modern_headers("tools/call", "wait"), std::string(token), std::nullopt));
        REQUIRE(eventually([&] { return f.backend->waits_started() == 1; }));
    }
    CHECK(eventually([&] { return f.backend->waits_cancelled() == 1; }));
}

TEST_CASE("closing a legacy request's connection does not cancel it") {
    endpoint_fixture f;
    auto sid = f.initialize();
    {
        auto c = raw_connection::tcp(f.port);
        c.send(f.request_text("POST", R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}})", f.in_session(sid),
                              std::string(token), std::nullopt));
        REQUIRE(eventually([&] { return f.backend->waits_started() == 1; }));
    }
    std::this_thread::sleep_for(200ms);
    CHECK(f.backend->waits_cancelled() == 0);
    // Ending the session is what stops its work.
    CHECK(f.send("DELETE", "", f.in_session(sid)).status == 204);
    CHECK(eventually([&] { return f.backend->waits_cancelled() == 1; }));
}

// ---------------------------------------------------------------- other listeners

TEST_CASE("the endpoint answers over a unix socket, where any Host is accepted") {
    temp_dir dir("airlock-mcp-unix");
    auto path = dir.path() / "mcp.sock";
    asio::io_context ioc{1};
    auto backend = std::make_shared<test_backend>();
    auto o = test_options();
    o.unix_socket = true;
    auto endpoint = std::make_shared<mcp_endpoint>(backend, o);
    http_server_options ho;
    ho.unix_socket = path;
    ho.unix_socket_mode = 0600;
    http_response_handler fallback = [](http_request& req) -> asio::awaitable<http_response> {
        co_return json_error(http::status::not_found, "not_found", "no route", req.version());
    };
    http_server server(ioc, ho, make_mcp_handler(endpoint, fallback));
    server.listen();
    server.start();
    std::thread t([&] { ioc.run(); });
    struct stat st {};
    bool has_file = ::stat(path.c_str(), &st) == 0;
    auto c = raw_connection::unix_socket(path.string());
    c.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + std::string(token) +
           "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + std::to_string(init_body.size()) +
           "\r\n\r\n" + init_body);
    bool got = c.read_until(reply_complete);
    endpoint->shutdown();
    server.stop();
    ioc.stop();
    t.join();
    REQUIRE(has_file);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(got);
    CHECK(parse_reply(c.data).status == 200);
    CHECK(header_value(parse_reply(c.data).head, "Mcp-Session-Id").has_value());
}

// ---------------------------------------------------------------- the official SDK client

TEST_CASE("the TypeScript SDK client lists and calls tools over Streamable HTTP, with progress and sampling") {
    endpoint_fixture f;
    child_process node({peers::node(), std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/endpoint/sdk_client.mjs", "http",
                        "http://" + f.host() + "/mcp", token},
                       {"AIRLOCK_SDK_DIR=" + peers::module("@modelcontextprotocol/sdk")});
    int rc = node.wait(60s);
    INFO(node.stderr_text());
    REQUIRE(rc == 0);
    auto out = json::parse(node.stdout_text()).as_object();
    CHECK(out.at("server").at("name") == "endpoint-test-backend");
    CHECK(out.at("tools") == json::parse(R"(["ask","count","echo","wait"])"));
    CHECK(out.at("echo") == "hello");
    CHECK(out.at("count") == "3");
    CHECK(out.at("progress") == json::parse("[1,2,3]"));
    CHECK(out.at("ask") == "the model said: echo of ping?");
    CHECK(out.at("terminated") == true);
    CHECK(f.backend->closed_sessions().size() == 1);
}
