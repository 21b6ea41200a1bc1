// `airlock serve` in front of an upstream that floods notifications (tests/fixtures/sidecar/
// hold_server.mjs: flood, chatter): a reply stream still ends right after its response, and a
// client that does not read its notification stream costs a few log lines, not one per drop.
#include "tests/e2e/sidecar_deployment.hpp"
#include "tests/support/http_get.hpp"

#include <boost/json/parse.hpp>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <sstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {

// The JSON of the last `data:` line of an SSE body, and what follows that event.
struct last_event {
    boost::json::object message;
    std::string after;
};
last_event last_data(std::string const& body) {
    auto at = body.rfind("data: ");
    REQUIRE(at != std::string::npos);
    auto line_end = body.find('\n', at);
    REQUIRE(line_end != std::string::npos);
    auto event_end = body.find("\n\n", at);
    REQUIRE(event_end != std::string::npos);
    return {boost::json::parse(body.substr(at + 6, line_end - at - 6)).as_object(), body.substr(event_end + 2)};
}

// Lines of `text` containing `needle`.
int lines_with(std::string const& text, std::string const& needle) {
    int n = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.find(needle) != std::string::npos) ++n;
    return n;
}

}  // namespace

TEST_CASE("a tools/call answered as SSE while its upstream floods notifications ends right after its response") {
    sidecar_deployment d({"flood"});
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = airlock_port(airlock);
    auto session = open_legacy_session(port);
    // Both eras, in turn: a 2025-11-25 call with progress and log messages, a 2026-07-28 one with
    // log messages. The client's small receive window keeps airlock's buffer for the stream full.
    for (int i = 0; i < 6; ++i) {
        bool const legacy = i % 2 == 0;
        auto const id = std::to_string(10 + i);
        auto request = legacy ? legacy_request(port, session,
                                               R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"tools/call","params":{)"
                                               R"("name":"hold__flood","arguments":{"count":3000},"_meta":{"progressToken":"p"}}})")
                              : modern_request(port, sidecar_deployment::token, "tools/call", "hold__flood",
                                               R"("name":"hold__flood","arguments":{"count":3000},)");
        auto started = std::chrono::steady_clock::now();
        auto r = raw_http(port, request, 30s, 4096);
        auto took = std::chrono::steady_clock::now() - started;
        INFO("request " << i << (legacy ? " (2025-11-25)" : " (2026-07-28)") << ": " << r.head << "\n...\n"
                        << r.body.substr(r.body.size() > 600 ? r.body.size() - 600 : 0));
        REQUIRE(r.status == 200);
        REQUIRE_THAT(r.head, Catch::Contains("text/event-stream"));
        // The body ended (the last chunk came, and the server closed the connection as asked)
        // well before the deadline, right after the event carrying the response.
        CHECK(took < 30s);
        auto last = last_data(r.body);
        CHECK(last.message.contains("result"));
        CHECK(last.message.at("id") == (legacy ? std::stoi(id) : 1));
        CHECK_THAT(std::string(last.message.at("result").at("content").at(0).at("text").as_string()),
                   Catch::Equals("flooded 3000"));
        CHECK(last.after == "\r\n0\r\n\r\n");
    }
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
}

TEST_CASE("a client that never reads its notification stream while an upstream floods it costs a few log lines, not one per drop") {
    sidecar_deployment d({"chatter"});
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0",
                           "--log-format", "text"});
    auto port = airlock_port(airlock);
    auto session = open_legacy_session(port);
    // The session's GET stream, with a small receive window, never read.
    int stream = connect_loopback(port, 4096);
    REQUIRE(stream >= 0);
    REQUIRE(send_all(stream, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                 "\r\nAuthorization: Bearer " + sidecar_deployment::token +
                                 "\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: " +
                                 session + "\r\n\r\n"));
    std::this_thread::sleep_for(300ms);
    // With no call in flight, the upstream's log messages go to the session's stream: 20,000 of
    // about 1 kB, far more than the socket buffers and airlock's stream buffer hold.
    auto called = raw_http(port, legacy_request(port, session,
                                                R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{)"
                                                R"("name":"hold__chatter","arguments":{"count":20000,"bytes":1000}}})"));
    INFO(called.body);
    REQUIRE(called.status == 200);
    REQUIRE(airlock.wait_for_stderr_line("chatter done", 120s));
    // airlock may still be reading the upstream's backlog: wait until its log stops growing.
    auto log = airlock.stderr_text();
    for (int i = 0; i < 100; ++i) {
        std::this_thread::sleep_for(1s);
        auto now = airlock.stderr_text();
        if (now == log) break;
        log = now;
    }
    ::close(stream);
    auto const dropped = lines_with(log, "a notification stream is not keeping up");
    INFO(log.substr(0, 4000));
    // Drops happened, and were told: the first at once, later ones with a count, at most once
    // every 10 s (the flood lasts seconds, not minutes).
    CHECK(dropped >= 1);
    CHECK(dropped <= 10);
    CHECK(std::count(log.begin(), log.end(), '\n') < 300);
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
}
