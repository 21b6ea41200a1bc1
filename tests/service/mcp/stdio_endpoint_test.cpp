#include "service/mcp/stdio_endpoint.hpp"

#include "tests/service/mcp/endpoint_test_backend.hpp"
#include "tests/service/mcp/endpoint_test_client.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/peers.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <cstdlib>
#include <thread>

using namespace airlock;
using namespace airlock::service;
using namespace airlock::testing;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// When this test executable is started with AIRLOCK_STDIO_ENDPOINT_CHILD set, it is not a test
// run: it serves the test backend on its own stdin/stdout and exits, so a real MCP client (the
// SDK's StdioClientTransport, which spawns its server) can be tested against the stdio endpoint.
// This runs during static initialisation, before Catch2's main sees the command line.
int serve_stdio_when_asked() {
    if (!std::getenv("AIRLOCK_STDIO_ENDPOINT_CHILD")) return 0;
    spdlog::set_default_logger(spdlog::stderr_color_mt("stdio-child"));
    asio::io_context ioc;
    stdio_endpoint_options o;
    o.principal = "sdk-user";
    asio::co_spawn(ioc, async_serve_stdio(std::make_shared<test_backend>(), o, 0, 1), asio::detached);
    ioc.run();
    std::_Exit(0);
}
[[maybe_unused]] int const stdio_child = serve_stdio_when_asked();

std::string const init_line =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
    R"("capabilities":{"sampling":{}},"clientInfo":{"name":"pipe-test","version":"1"}}})";

std::string const modern_meta =
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}})";

// The stdio endpoint on a pair of pipes, served on a thread of its own.
struct stdio_fixture {
    int to_server[2] = {-1, -1};
    int from_server[2] = {-1, -1};
    asio::io_context ioc;
    std::shared_ptr<test_backend> backend = std::make_shared<test_backend>();
    std::atomic<bool> done{false};
    std::thread thread;
    std::string pending;

    explicit stdio_fixture(std::size_t max_message_bytes = stdio_endpoint_options{}.max_message_bytes,
                           std::chrono::milliseconds drain_grace = stdio_endpoint_options{}.drain_grace) {
        REQUIRE(::pipe2(to_server, O_CLOEXEC) == 0);
        REQUIRE(::pipe2(from_server, O_CLOEXEC) == 0);
        stdio_endpoint_options o;
        o.principal = "carol";
        o.max_message_bytes = max_message_bytes;
        o.drain_grace = drain_grace;
        asio::co_spawn(ioc, async_serve_stdio(backend, o, to_server[0], from_server[1]),
                       [this](std::exception_ptr) { done = true; });
        thread = std::thread([this] { ioc.run(); });
    }
    ~stdio_fixture() {
        close_input();
        eventually([&] { return done.load(); });
        ioc.stop();
        thread.join();
        for (int fd : {to_server[0], from_server[0], from_server[1]}) ::close(fd);
    }

    void send(std::string const& line) {
        auto text = line + "\n";
        REQUIRE(::write(to_server[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    }

    void close_input() {
        if (to_server[1] >= 0) ::close(to_server[1]);
        to_server[1] = -1;
    }

    // The next message the endpoint writes, or nullopt after the deadline.
    std::optional<json::object> next(std::chrono::milliseconds deadline = 10s) {
        return next_json_line(from_server[0], pending, deadline);
    }

    // Sends a request and returns the message that answers it, skipping nothing else: callers
    // that expect notifications first read them with next().
    json::object call(std::string const& line) {
        send(line);
        auto m = next();
        REQUIRE(m.has_value());
        return *m;
    }

    void initialize() {
        auto r = call(init_line);
        REQUIRE(r.contains("result"));
        send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    }
};

}  // namespace

TEST_CASE("a stdio client that initializes gets a legacy session and can list and call tools") {
    stdio_fixture f;
    auto init = f.call(init_line);
    CHECK(init.at("id") == 1);
    CHECK(init.at("result").at("protocolVersion") == "2025-06-18");
    CHECK(init.at("result").at("serverInfo").at("name") == "endpoint-test-backend");
    f.send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    auto list = f.call(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
    CHECK(list.at("result").at("tools").as_array().size() == 4);
    CHECK_FALSE(list.at("result").as_object().contains("resultType"));
    auto echo = f.call(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"piped"}}})");
    CHECK(echo.at("result").at("content").at(0).at("text") == "piped");
    CHECK(f.backend->principals() == std::vector<std::string>{"carol", "carol"});
}

TEST_CASE("a modern request over stdio is served without initialize and carries resultType and caching hints") {
    stdio_fixture f;
    auto list = f.call(R"({"jsonrpc":"2.0","id":"m1","method":"tools/list","params":{)" + modern_meta + "}}");
    auto const& result = list.at("result").as_object();
    CHECK(result.at("resultType") == "complete");
    CHECK(result.at("ttlMs") == 0);
    CHECK(result.at("cacheScope") == "private");
}

TEST_CASE("server/discover over stdio lists every version airlock speaks") {
    stdio_fixture f;
    auto d = f.call(R"({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{)" + modern_meta + "}}");
    CHECK(d.at("result").at("supportedVersions") == json::parse(R"(["2026-07-28","2025-11-25","2025-06-18","2025-03-26"])"));
    CHECK(d.at("result").at("_meta").at("io.modelcontextprotocol/serverInfo").at("version") == "1.2.3");
}

TEST_CASE("a stdio request before initialize and without _meta is refused with InvalidParams") {
    stdio_fixture f;
    auto r = f.call(R"({"jsonrpc":"2.0","id":5,"method":"tools/list"})");
    CHECK(r.at("id") == 5);
    CHECK(r.at("error").at("code") == -32602);
}

TEST_CASE("a modern stdio request for a version airlock does not speak gets UnsupportedProtocolVersion") {
    stdio_fixture f;
    auto r = f.call(R"({"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01",)"
                    R"("io.modelcontextprotocol/clientCapabilities":{}}}})");
    CHECK(r.at("error").at("code") == -32022);
    CHECK(r.at("error").at("data").at("requested") == "2099-01-01");
}

TEST_CASE("a modern stdio request for a method 2026-07-28 removed gets MethodNotFound, and opens no session") {
    stdio_fixture f;
    for (std::string method : {"initialize", "ping", "logging/setLevel", "resources/subscribe"}) {
        INFO(method);
        auto r = f.call(R"({"jsonrpc":"2.0","id":"x","method":")" + method + R"(","params":{)" + modern_meta + "}}");
        CHECK(r.at("id") == "x");
        CHECK(r.at("error").at("code") == -32601);
    }
    // Still no legacy session: a request without _meta is refused as before initialize.
    auto r = f.call(R"({"jsonrpc":"2.0","id":5,"method":"tools/list"})");
    CHECK(r.at("error").at("code") == -32602);
}

TEST_CASE("a modern stdio request that needs a capability the client did not declare ends with -32021") {
    stdio_fixture f;
    auto r = f.call(R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ask","arguments":{"prompt":"?"},)" +
                    modern_meta + "}}");
    CHECK(r.at("id") == 9);
    CHECK(r.at("error").at("code") == -32021);
    CHECK(r.at("error").at("data").at("requiredCapabilities") == json::parse(R"({"sampling":{}})"));
}

TEST_CASE("progress notifications precede the result over stdio") {
    stdio_fixture f;
    f.initialize();
    f.send(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count","arguments":{"to":2},"_meta":{"progressToken":9}}})");
    auto p1 = f.next();
    auto p2 = f.next();
    auto result = f.next();
    REQUIRE(p1);
    REQUIRE(p2);
    REQUIRE(result);
    CHECK(p1->at("method") == "notifications/progress");
    CHECK(p1->at("params").at("progressToken") == 9);
    CHECK(p2->at("params").at("progress") == 2);
    CHECK(result->at("id") == 7);
}

TEST_CASE("a tool that asks the client gets the client's answer over stdio") {
    stdio_fixture f;
    f.initialize();
    f.send(R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ask","arguments":{"prompt":"why?"}}})");
    auto question = f.next();
    REQUIRE(question);
    CHECK(question->at("method") == "sampling/createMessage");
    f.send(R"({"jsonrpc":"2.0","id":)" + json::serialize(question->at("id")) +
           R"(,"result":{"role":"assistant","content":{"type":"text","text":"because"},"model":"m"}})");
    auto result = f.next();
    REQUIRE(result);
    CHECK(result->at("id") == 8);
    CHECK(result->at("result").at("content").at(0).at("text") == "the model said: because");
}

TEST_CASE("notifications/cancelled stops a running stdio request, which gets no response") {
    stdio_fixture f;
    f.initialize();
    f.send(R"({"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait"}})");
    REQUIRE(eventually([&] { return f.backend->waits_started() == 1; }));
    f.send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}})");
    REQUIRE(eventually([&] { return f.backend->waits_cancelled() == 1; }));
    // The next thing written answers the ping: nothing was sent for the cancelled request.
    auto pong = f.call(R"({"jsonrpc":"2.0","id":"after","method":"ping"})");
    CHECK(pong.at("id") == "after");
}

TEST_CASE("cancelling the retry of a 2026-07-28 call over stdio cancels the call, which gets no response") {
    stdio_fixture f;
    std::string meta = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                       R"("io.modelcontextprotocol/clientCapabilities":{"sampling":{}}})";
    auto first = f.call(R"({"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{"name":"ask","arguments":{"prompt":"then wait"},)" +
                        meta + "}}");
    CHECK(first.at("id") == "a1");
    auto const& ir = first.at("result").as_object();
    REQUIRE(ir.at("resultType") == "input_required");
    auto const& requests = ir.at("inputRequests").as_object();
    REQUIRE(requests.size() == 1);
    auto key = std::string(requests.begin()->key());
    CHECK(requests.begin()->value().at("method") == "sampling/createMessage");
    // No JSON-RPC request went to the client: the question came only in the result.
    CHECK(f.backend->waits_started() == 0);
    f.send(R"({"jsonrpc":"2.0","id":"a2","method":"tools/call","params":{"name":"ask","arguments":{"prompt":"then wait"},)"
           R"("inputResponses":{")" + key + R"(":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}},)"
           R"("requestState":)" + json::serialize(ir.at("requestState")) + "," + meta + "}}");
    REQUIRE(eventually([&] { return f.backend->waits_started() == 1; }));
    f.send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a2"}})");
    REQUIRE(eventually([&] { return f.backend->waits_cancelled() == 1; }));
    auto pong = f.call(R"({"jsonrpc":"2.0","id":"after","method":"ping"})");
    CHECK(pong.at("id") == "after");
}

TEST_CASE("a malformed stdio line is answered with a parse error and the session goes on") {
    stdio_fixture f;
    auto bad = f.call(R"({"jsonrpc":"2.0","id":1,"method")");
    CHECK(bad.at("error").at("code") == -32700);
    auto init = f.call(init_line);
    CHECK(init.contains("result"));
}

TEST_CASE("an error answering a stdio line whose id cannot be read has no id member, as MCP's schema writes it") {
    stdio_fixture f;
    for (std::string line : {"not json", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", R"({"jsonrpc":"2.0","id":null,"method":"ping"})"}) {
        auto reply = f.call(line);
        INFO(line);
        CHECK(reply.contains("error"));
        // MCP types an error's id as `id?: RequestId`; a null id fails the TypeScript SDK's schema.
        CHECK_FALSE(reply.contains("id"));
    }
}

TEST_CASE("a stdio message over the size limit is answered with -32600 naming the limit, and the session goes on") {
    stdio_fixture f(1024);
    f.initialize();
    // The TypeScript SDK writes the id last: it is read from the line's last bytes.
    auto big = R"({"method":"tools/call","params":{"name":"echo","arguments":{"text":")" + std::string(8000, 'x') +
               R"("}},"jsonrpc":"2.0","id":"big"})";
    auto refused = f.call(big);
    CHECK(refused.at("id") == "big");
    CHECK(refused.at("error").at("code") == -32600);
    CHECK_THAT(std::string(refused.at("error").at("message").as_string()), Catch::Contains("longer than 1024 bytes"));
    auto pong = f.call(R"({"jsonrpc":"2.0","id":"after","method":"ping"})");
    CHECK(pong.at("id") == "after");
    CHECK(pong.contains("result"));
}

TEST_CASE("a stdio message over the size limit whose id cannot be seen is answered without an id") {
    stdio_fixture f(1024);
    // The id between two members too long for the bytes kept of either end.
    auto refused = f.call(R"({"jsonrpc":"2.0","method":"ping","params":{"pad":")" + std::string(8000, 'x') +
                          R"("},"id":7,"x":")" + std::string(8000, 'y') + R"("})");
    CHECK_FALSE(refused.contains("id"));
    CHECK(refused.at("error").at("code") == -32600);
    auto pong = f.call(R"({"jsonrpc":"2.0","id":8,"method":"ping"})");
    CHECK(pong.at("id") == 8);
}

TEST_CASE("a list change reaches an initialized stdio client") {
    stdio_fixture f;
    f.initialize();
    REQUIRE(eventually([&] { return f.backend->listener_count() == 1; }));
    f.backend->emit_tools_changed();
    auto n = f.next();
    REQUIRE(n);
    CHECK(n->at("method") == "notifications/tools/list_changed");
}

TEST_CASE("a stdio subscription tags its notifications, and cancelling it stops them") {
    stdio_fixture f;
    auto ack = f.call(R"({"jsonrpc":"2.0","id":"s","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},)" +
                      modern_meta + "}}");
    CHECK(ack.at("method") == "notifications/subscriptions/acknowledged");
    CHECK(ack.at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId") == "s");
    REQUIRE(f.backend->listener_count() == 1);
    f.backend->emit_tools_changed();
    auto n = f.next();
    REQUIRE(n);
    CHECK(n->at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId") == "s");
    f.send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}})");
    CHECK(eventually([&] { return f.backend->listener_count() == 0; }));
}

TEST_CASE("end of input ends the stdio session: the backend hears of it and its listener goes") {
    stdio_fixture f;
    f.initialize();
    REQUIRE(eventually([&] { return f.backend->listener_count() == 1; }));
    f.close_input();
    REQUIRE(eventually([&] { return f.done.load(); }));
    auto closed = f.backend->closed_sessions();
    REQUIRE(closed.size() == 1);
    CHECK(closed[0].rfind("stdio-", 0) == 0);
    CHECK(f.backend->listener_count() == 0);
}

TEST_CASE("end of input cancels a request still running over stdio when the drain grace is over and answers it with -32603") {
    stdio_fixture f(stdio_endpoint_options{}.max_message_bytes, 300ms);
    f.initialize();
    f.send(R"({"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait"}})");
    REQUIRE(eventually([&] { return f.backend->waits_started() == 1; }));
    f.close_input();
    REQUIRE(eventually([&] { return f.done.load(); }));
    CHECK(f.backend->waits_cancelled() == 1);
    // The client closed only its end of the input: it may still be reading, and learns why.
    auto answer = f.next();
    REQUIRE(answer);
    CHECK(answer->at("id") == "w");
    CHECK(answer->at("error").at("code") == -32603);
    CHECK_THAT(std::string(answer->at("error").at("message").as_string()), Catch::Contains("airlock is stopping"));
}

TEST_CASE("requests in flight at end of input over stdio finish within the drain grace and get their results") {
    stdio_fixture f;
    f.initialize();
    // Sent and the input closed at once, as `printf ... | airlock stdio` does: the answers come after.
    f.send(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
    f.send(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"count","arguments":{"to":5},"_meta":{"progressToken":"c"}}})");
    f.send(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})");
    f.close_input();
    std::map<std::int64_t, json::object> answers;
    while (auto m = f.next(3s))
        if (m->contains("id")) answers[m->at("id").to_number<std::int64_t>()] = *m;
    REQUIRE(f.done.load());
    for (std::int64_t id : {2, 3, 4}) {
        INFO("id " << id << ": " << json::serialize(answers[id]));
        CHECK(answers[id].contains("result"));
    }
    CHECK(f.backend->waits_cancelled() == 0);
}

TEST_CASE("a stdio client that does not read while notifications flood costs one log line per interval, not one per drop") {
    log_capture logs(spdlog::level::warn);
    stdio_fixture f;
    f.initialize();
    REQUIRE(eventually([&] { return f.backend->listener_count() == 1; }));
    // Far more than the pipe and the endpoint's outbox hold while nobody reads.
    for (int i = 0; i < 20'000; ++i) f.backend->emit_tools_changed();
    auto text = logs.text();
    std::size_t lines = 0;
    for (auto at = text.find("a message was dropped"); at != std::string::npos; at = text.find("a message was dropped", at + 1))
        ++lines;
    INFO(text.substr(0, 2000));
    CHECK(lines >= 1);
    CHECK(lines <= 2);
    // Read what was queued, so the session can end.
    f.close_input();
    while (f.next(2s)) {
    }
}

TEST_CASE("the TypeScript SDK client lists and calls tools over stdio, with progress and sampling") {
    char self[4096];
    auto n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(n > 0);
    self[n] = '\0';
    child_process node({peers::node(), std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/endpoint/sdk_client.mjs", "stdio", self},
                       {"AIRLOCK_SDK_DIR=" + peers::module("@modelcontextprotocol/sdk"), "AIRLOCK_STDIO_ENDPOINT_CHILD=1"});
    int rc = node.wait(60s);
    INFO(node.stderr_text());
    REQUIRE(rc == 0);
    auto out = json::parse(node.stdout_text()).as_object();
    CHECK(out.at("server").at("name") == "endpoint-test-backend");
    CHECK(out.at("tools") == json::parse(R"(["ask","count","echo","wait"])"));
    CHECK(out.at("echo") == "hello");
    CHECK(out.at("progress") == json::parse("[1,2,3]"));
    CHECK(out.at("ask") == "the model said: echo of ping?");
}
