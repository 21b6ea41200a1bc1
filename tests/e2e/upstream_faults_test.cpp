// airlock serve in front of upstreams that fail in the ways real ones do — one that never answers
// initialize, one that never answers tools/list, an HTTP one that accepts and never answers, one
// that crashes as it starts, one egress does not allow — beside a healthy real server
// (server-everything): the faulty ones never hold up the healthy one, an upstream egress refuses is
// never contacted at all, clients that disconnect mid-call leave the upstream's session in place,
// and what an upstream puts in a tool result's _meta reaches the client.
#include "tests/support/child_process.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/mute_listener.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr char const* token = "alice-faults-0123456789abcdef";

std::string fixture(std::string const& name) { return std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/gateway/" + name; }

// A deployment whose principal alice is granted `grants` (tool URIs); `upstreams` and `egress` are
// the YAML list items of those sections.
struct faulty_deployment {
    temp_dir dir{"airlock-upstream-faults"};
    std::filesystem::path config = dir.path() / "airlock.yaml";

    faulty_deployment(std::vector<std::string> const& grants, std::string const& upstreams, std::string const& egress) {
        std::ofstream(dir.path() / "alice.token") << token << "\n";
        ::chmod((dir.path() / "alice.token").c_str(), 0600);
        std::ofstream manifest(dir.path() / "alice.yaml");
        manifest << "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: alice-desk, version: \"1\" }\nspec:\n  tools:\n";
        for (auto const& g : grants) manifest << "    - ref: " << g << "\n      mutates: false\n";
        manifest << "  budgets: {}\n";
        manifest.close();
        std::ofstream(config) << "journal: { dir: journal }\nupstreams:\n"
                              << upstreams << "egress:\n"
                              << egress
                              << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n";
    }
};

std::string node_upstream(std::string const& name, std::vector<std::string> const& args) {
    std::string out = "  - name: " + name + "\n    stdio: { argv: [\"" + peers::node() + "\"";
    for (auto const& a : args) out += ", \"" + a + "\"";
    return out + "] }\n";
}

std::string everything_upstream() { return node_upstream("everything", {peers::everything(), "stdio"}); }

// A modern tools/call or tools/list, and how long it took.
struct timed_reply {
    raw_response reply;
    std::chrono::milliseconds took{};
    json::object result() const {
        auto v = json::parse(reply.body);
        REQUIRE(v.as_object().contains("result"));
        return v.at("result").as_object();
    }
};

timed_reply timed_post(std::uint16_t port, std::string const& method, std::string const& name, std::string const& params) {
    auto start = std::chrono::steady_clock::now();
    auto r = modern_post(port, token, method, name, params);
    return {r, std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)};
}

timed_reply call_echo(std::uint16_t port) {
    return timed_post(port, "tools/call", "everything__echo", R"("name":"everything__echo","arguments":{"message":"hi"},)");
}

timed_reply list_tools(std::uint16_t port) { return timed_post(port, "tools/list", "", ""); }

std::vector<std::string> tool_names(json::object const& result) {
    std::vector<std::string> out;
    for (auto const& t : result.at("tools").as_array()) out.emplace_back(t.at("name").as_string());
    return out;
}

bool has(std::vector<std::string> const& v, std::string const& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

json::object readiness(std::uint16_t port) {
    auto r = http_get(port, "/readyz");
    INFO(r.body);
    REQUIRE((r.status == 200 || r.status == 503));
    return json::parse(r.body).as_object();
}

std::string state_of(json::object const& ready, std::string const& upstream) {
    return std::string(ready.at("checks").at("upstream:" + upstream).at("state").as_string());
}

std::size_t count_of(std::string const& text, std::string const& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
    return n;
}

}  // namespace

TEST_CASE("upstreams that hang at initialize, at tools/list or over HTTP, or crash at start, hold up neither the calls "
          "nor the tools/list of a healthy one") {
    mute_listener silent_http;  // accepts, reads, never answers
    auto const http_url = "http://127.0.0.1:" + std::to_string(silent_http.port());
    // The faulty ones come first: an upstream met after them must not wait for them.
    std::string upstreams = node_upstream("init_stall", {fixture("stalled_server.mjs"), "initialize"}) +
                            node_upstream("list_stall", {fixture("stalled_server.mjs"), "tools/list"}) +
                            "  - name: http_stall\n    url: " + http_url + "/mcp\n" +
                            node_upstream("crashing", {"-e", "process.exit(3)"}) + everything_upstream();
    faulty_deployment d({"tool://init_stall/x", "tool://list_stall/x", "tool://http_stall/x", "tool://crashing/x",
                         "tool://everything/echo"},
                        upstreams, "  - process: \"" + peers::node() + "\"\n  - " + http_url + "\n");
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);

    // Long enough for the hung handshakes to time out (15 s) and be tried again meanwhile.
    auto const until = std::chrono::steady_clock::now() + 24s;
    for (int round = 0; std::chrono::steady_clock::now() < until; ++round) {
        INFO("round " << round);
        auto called = call_echo(port);
        INFO(called.reply.body);
        REQUIRE(called.reply.status == 200);
        CHECK_THAT(std::string(called.result().at("content").at(0).at("text").as_string()), Catch::Contains("hi"));
        // The first call also waits for the healthy server itself to start (node, on a busy machine).
        CHECK(called.took < (round == 0 ? 15s : 3s));

        auto listed = list_tools(port);
        INFO(listed.reply.body);
        REQUIRE(listed.reply.status == 200);
        auto names = tool_names(listed.result());
        CHECK(has(names, "everything__echo"));
        // The first list may wait for the others as long as upstream_wait (5 s) since they began.
        CHECK(listed.took < (round == 0 ? 8s : 3s));

        auto ready = readiness(port);
        CHECK(state_of(ready, "everything") == "up");
        for (auto const* hung : {"init_stall", "list_stall", "http_stall", "crashing"}) {
            INFO(hung);
            CHECK(state_of(ready, hung) != "up");
        }
        CHECK(ready.at("status") == "not_ready");
        std::this_thread::sleep_for(2s);
    }
    // The upstreams that never answered are named in the log.
    auto log = airlock.stderr_text();
    CHECK_THAT(log, Catch::Contains("upstream init_stall: its tools have not been read within"));
    CHECK_THAT(log, Catch::Contains("upstream list_stall: its tools have not been read within"));
    CHECK(silent_http.connections() > 0);  // it was asked, and is still not answering
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
}

TEST_CASE("calls to an HTTP upstream that resets every connection fail at once with an error saying so") {
    mute_listener resetting(mute_listener::mode::reset);
    auto const url = "http://127.0.0.1:" + std::to_string(resetting.port());
    faulty_deployment d({"tool://resetting/x", "tool://everything/echo"},
                        "  - name: resetting\n    url: " + url + "/mcp\n" + everything_upstream(),
                        "  - process: \"" + peers::node() + "\"\n  - " + url + "\n");
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    for (int i = 0; i < 3; ++i) {
        INFO("call " << i);
        auto called = timed_post(port, "tools/call", "resetting__x", R"("name":"resetting__x","arguments":{},)");
        INFO(called.reply.body);
        REQUIRE(called.reply.status == 200);
        CHECK(called.result().at("isError") == true);
        CHECK_THAT(std::string(called.result().at("content").at(0).at("text").as_string()),
                   Catch::Contains("unreachable") && Catch::Contains("resetting"));
        CHECK(called.took < 5s);  // the upstream's deadline is 60 s, its handshake's 15 s
        std::this_thread::sleep_for(3s);  // past the 5 s retry backoff by the third call
    }
    CHECK(resetting.connections() > 0);
    CHECK_THAT(airlock.stderr_text(), Catch::Contains("upstream resetting: tools unavailable") &&
                                          Catch::Contains("reset"));
    CHECK(call_echo(port).reply.status == 200);
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(20s) == 0);
}

TEST_CASE("an upstream whose destination egress does not allow is never contacted, and reads as refused") {
    mute_listener outside;  // counts every connection made to it
    auto const port_text = std::to_string(outside.port());
    temp_dir scratch{"airlock-egress-marker"};
    auto const marker = scratch.path() / "started";
    // localhost resolves to 127.0.0.1, which egress names: only the destination as the URL names
    // it (localhost) decides, and egress does not name that. /bin/sh is not in egress either.
    std::string upstreams = "  - name: outside\n    url: http://localhost:" + port_text + "/mcp\n" +
                            "  - name: stray\n    stdio: { argv: [/bin/sh, -c, \"touch " + marker.string() +
                            "; sleep 30\"] }\n" + everything_upstream();
    faulty_deployment d({"tool://outside/x", "tool://stray/x", "tool://everything/echo"}, upstreams,
                        "  - process: \"" + peers::node() + "\"\n  - http://127.0.0.1:" + port_text + "\n");

    auto checked = run_command({AIRLOCK_BINARY, "check", d.config.string()});
    CHECK_THAT(checked.out + checked.err, Catch::Contains("upstream outside: its destination http://localhost:" + port_text));
    CHECK_THAT(checked.out + checked.err, Catch::Contains("airlock never contacts it"));

    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);

    auto listed = list_tools(port);
    INFO(listed.reply.body);
    REQUIRE(listed.reply.status == 200);
    CHECK(tool_names(listed.result()) == std::vector<std::string>{"everything__echo"});
    for (auto const* name : {"outside__x", "stray__x"}) {
        INFO(name);
        auto params = std::string(R"("name":")") + name + R"(","arguments":{},)";
        auto refused = timed_post(port, "tools/call", name, params);
        INFO(refused.reply.body);
        REQUIRE(refused.reply.status == 200);
        CHECK(refused.result().at("isError") == true);
        CHECK(refused.result().at("content").at(0).at("text") == "not permitted");
    }
    for (int i = 0; i < 3; ++i) {
        // Readiness probes ping the upstreams that are up: never these.
        auto ready = readiness(port);
        CHECK(state_of(ready, "outside") == "refused");
        CHECK(state_of(ready, "stray") == "refused");
        std::this_thread::sleep_for(500ms);
    }
    CHECK(call_echo(port).reply.status == 200);
    CHECK_THAT(airlock.stderr_text(), Catch::Contains("upstream outside: its destination http://localhost:" + port_text +
                                                      " is not in egress; it is never contacted"));
    CHECK(outside.connections() == 0);
    CHECK_FALSE(std::filesystem::exists(marker));
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(20s) == 0);
}

namespace {

// Opens a connection to 127.0.0.1:port and sends `bytes`; -1 when it cannot.
int send_and_keep(std::uint16_t port, std::string const& bytes) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    return fd;
}

}  // namespace

TEST_CASE("bursts of calls whose clients disconnect mid-flight leave a healthy upstream's session in place, and the "
          "calls after them succeed") {
    faulty_deployment d({"tool://everything/echo", "tool://everything/trigger.long.running.operation"},
                        everything_upstream(), "  - process: \"" + peers::node() + "\"\n");
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    REQUIRE(call_echo(port).reply.status == 200);
    auto handshakes = [&] { return count_of(airlock.stderr_text(), " era, protocol "); };
    REQUIRE(handshakes() == 1);

    auto const slow = modern_request(port, token, "tools/call", "everything__trigger-long-running-operation",
                                     R"("name":"everything__trigger-long-running-operation",)"
                                     R"("arguments":{"duration":2,"steps":4},)");
    auto const quick = modern_request(port, token, "tools/call", "everything__echo",
                                      R"("name":"everything__echo","arguments":{"message":"burst"},)");
    for (int burst = 0; burst < 6; ++burst) {
        std::vector<int> fds;
        for (int i = 0; i < 48; ++i) fds.push_back(send_and_keep(port, i % 2 ? slow : quick));
        // Cut off at different moments: some before the call reaches the upstream, some while it runs.
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (i % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5 * burst + 1));
            if (fds[i] >= 0) ::close(fds[i]);
        }
    }
    for (int i = 0; i < 5; ++i) {
        INFO("call " << i);
        auto called = call_echo(port);
        INFO(called.reply.body);
        REQUIRE(called.reply.status == 200);
        CHECK_THAT(std::string(called.result().at("content").at(0).at("text").as_string()), Catch::Contains("hi"));
        CHECK(called.took < 5s);
    }
    // Cancelled callers tore nothing down: the session of the first handshake is still the one in use.
    CHECK(handshakes() == 1);
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
}

namespace {

// What the fixture's `labelled` tool puts in _meta, as the client must get it: its own keys
// unchanged, without the one in airlock's namespace.
json::value const relayed_meta = json::parse(
    R"({"ui/resourceUri":"ui://meta/labelled.html","example.com/trace":{"id":"abc-123","spans":[1,2.5,null,"x"]}})");

faulty_deployment meta_deployment() {
    return faulty_deployment({"tool://meta/labelled"}, node_upstream("meta", {fixture("meta_server.mjs")}),
                             "  - process: \"" + peers::node() + "\"\n");
}

}  // namespace

TEST_CASE("a tool result's _meta reaches the client unchanged in both eras over HTTP, without airlock's own keys") {
    auto d = meta_deployment();
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);

    auto modern = timed_post(port, "tools/call", "meta__labelled", R"("name":"meta__labelled","arguments":{},)");
    INFO(modern.reply.body);
    REQUIRE(modern.reply.status == 200);
    CHECK(modern.result().at("_meta") == relayed_meta);

    auto session = legacy_session(port, token);
    REQUIRE_FALSE(session.empty());
    auto legacy = legacy_post(port, token, session,
                              R"({"jsonrpc":"2.0","id":2,"method":"tools/call",)"
                              R"("params":{"name":"meta__labelled","arguments":{}}})");
    INFO(legacy.body);
    REQUIRE(legacy.status == 200);
    auto body = legacy.body.substr(legacy.body.find('{'));
    body = body.substr(0, body.rfind('}') + 1);  // a JSON body, or the one event of an SSE one
    CHECK(json::parse(body).at("result").at("_meta") == relayed_meta);
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(20s) == 0);
}

TEST_CASE("a tool result's _meta reaches an airlock stdio client unchanged, without airlock's own keys") {
    auto d = meta_deployment();
    child_process airlock({AIRLOCK_BINARY, "stdio", "--config", d.config.string()}, {}, child_stdin::pipe);
    REQUIRE(airlock.write_stdin(
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
        R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
        "\n"
        R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
        "\n"
        R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"meta__labelled","arguments":{}}})"
        "\n"));
    std::string reply;
    auto until = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < until) {
        auto out = airlock.stdout_text();
        auto at = out.find(R"("id":2)");
        if (at != std::string::npos && out.find('\n', at) != std::string::npos) {
            auto start = out.rfind('\n', at);
            start = start == std::string::npos ? 0 : start + 1;
            reply = out.substr(start, out.find('\n', at) - start);
            break;
        }
        std::this_thread::sleep_for(20ms);
    }
    INFO(airlock.stderr_text());
    REQUIRE_FALSE(reply.empty());
    CHECK(json::parse(reply).at("result").at("_meta") == relayed_meta);
    airlock.close_stdin();
    CHECK(airlock.wait(20s) == 0);
}
