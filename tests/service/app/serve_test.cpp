#include "tests/e2e/sidecar_deployment.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {
// Starts `airlock serve` on a free loopback port and returns the port it reports.
std::uint16_t start_serve(child_process& p) {
    auto line = p.wait_for_stderr_line("listening on http://", 20s);
    REQUIRE(line.has_value());
    std::smatch m;
    REQUIRE(std::regex_search(*line, m, std::regex(R"(127\.0\.0\.1:(\d+))")));
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}

// A stdio upstream that is no MCP server at all and will not stop: it ignores SIGTERM and never
// reads stdin (so never sees its end). It writes its pid first; `exec` keeps that pid and the
// ignored SIGTERM, and leaves no grandchild whose reaping would be up to init.
constexpr char const* stubborn_sh = R"(trap '' TERM
echo $$ > "$1.tmp" && mv "$1.tmp" "$1"
exec sleep 600
)";

// True once no process is left in the process group `pgid`, polling a while for it.
bool group_ends(int pgid) {
    for (int i = 0; i < 200; ++i) {
        if (::kill(-pgid, 0) == -1 && errno == ESRCH) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

// Kills what is left of a process group when the test ends, whatever happened in it.
struct group_reaper {
    int pgid = 0;
    ~group_reaper() {
        if (pgid > 0) ::kill(-pgid, SIGKILL);
    }
};

// A configuration whose only upstream is stubborn_sh (`extra` is appended to it), and the reaper of
// that upstream's process group. Declare it before the airlock process it serves.
struct stubborn_deployment {
    temp_dir dir;
    std::filesystem::path pid_file = dir.path() / "upstream.pid";
    std::filesystem::path config = dir.path() / "airlock.yaml";
    group_reaper upstream;

    stubborn_deployment(std::string const& name, std::string const& extra) : dir(name) {
        std::ofstream(dir.path() / "stubborn.sh") << stubborn_sh;
        std::ofstream(config) << "journal: { dir: journal }\n"
                              << "upstreams:\n  - name: stubborn\n    stdio: [/bin/sh, stubborn.sh, \"" << pid_file.string()
                              << "\"]\n"
                              << "    optional: true\n"
                              << "egress:\n  - process: /bin/sh\n"
                              << extra;
    }

    // True once the upstream has written its pid and runs (it leads its own process group).
    bool child_runs() {
        for (int i = 0; i < 200 && file_text(pid_file).empty(); ++i) std::this_thread::sleep_for(50ms);
        auto text = file_text(pid_file);
        upstream.pgid = text.empty() ? 0 : std::stoi(text);
        return upstream.pgid > 0 && ::kill(upstream.pgid, 0) == 0;
    }

    // SIGTERM to airlock: it exits 0, having stopped the upstream with SIGTERM and then SIGKILL,
    // and nothing of the upstream's process group is left.
    void check_sigterm_stops_everything(child_process& airlock) const {
        airlock.signal(SIGTERM);
        int exit_code = airlock.wait(30s);
        bool upstream_gone = group_ends(upstream.pgid);
        INFO(airlock.stderr_text());
        CHECK(exit_code == 0);
        CHECK(upstream_gone);
        CHECK_THAT(airlock.stderr_text(), Catch::Contains("sending SIGTERM") && Catch::Contains("sending SIGKILL"));
    }
};

// A legacy session's opening lines for `airlock stdio`, then `request` (one JSON-RPC line).
std::string stdio_session(std::string const& request) {
    return R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
           R"("clientInfo":{"name":"serve-test","version":"1"}}})" "\n"
           R"({"jsonrpc":"2.0","method":"notifications/initialized"})" "\n" +
           request + "\n";
}

// True once the child's stdout contains `needle`, polling a while for it.
bool stdout_shows(child_process& p, std::string const& needle) {
    for (int i = 0; i < 400; ++i) {
        if (p.stdout_text().find(needle) != std::string::npos) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}
}  // namespace

TEST_CASE("serve answers /healthz with 200 and a JSON body") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0", "--threads", "2"});
    auto port = start_serve(p);
    auto r = http_get(port, "/healthz");
    CHECK(r.status == 200);
    CHECK_THAT(r.head, Catch::Contains("application/json"));
    CHECK(r.body == R"({"status":"ok"})");
}

TEST_CASE("an unknown route gets 404 with a JSON error naming the path") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0"});
    auto port = start_serve(p);
    auto r = http_get(port, "/nope");
    CHECK(r.status == 404);
    CHECK_THAT(r.body, Catch::Contains("/nope"));
}

TEST_CASE("oversized headers get 431 and an oversized body 413, and the server stays up") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0"});
    auto port = start_serve(p);
    std::string big_header(20 * 1024, 'x');
    auto r = raw_http(port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + big_header + "\r\n\r\n");
    CHECK(r.status == 431);
    r = raw_http(port, "POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000000\r\n\r\n");
    CHECK(r.status == 413);
    CHECK(http_get(port, "/healthz").status == 200);
}

TEST_CASE("oversized headers or body sent to /mcp get 431 or 413 with a JSON-RPC error an MCP client can read") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0"});
    auto port = start_serve(p);
    auto r = raw_http(port, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000000\r\n\r\n");
    CHECK(r.status == 413);
    INFO(r.body);
    auto body = boost::json::parse(r.body).as_object();
    CHECK(body.at("jsonrpc") == "2.0");
    CHECK(body.at("error").at("code") == -32600);
    CHECK_FALSE(body.contains("id"));
    r = raw_http(port, "POST /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(20 * 1024, 'x') + "\r\n\r\n");
    CHECK(r.status == 431);
    CHECK(boost::json::parse(r.body).at("error").at("code") == -32600);
}

TEST_CASE("garbage instead of HTTP gets 400 and does not take the server down") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0"});
    auto port = start_serve(p);
    auto r = raw_http(port, "\x01\x02 not http at all\r\n\r\n");
    CHECK(r.status == 400);
    CHECK(http_get(port, "/healthz").status == 200);
}

TEST_CASE("SIGTERM stops serve cleanly with exit code 0") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0"});
    auto port = start_serve(p);
    REQUIRE(http_get(port, "/healthz").status == 200);
    p.signal(SIGTERM);
    CHECK(p.wait(15s) == 0);
}

TEST_CASE("serve with busy polling answers requests, stops on SIGTERM, and refuses more than one I/O thread") {
    temp_dir dir("serve-busy-poll");
    auto const config = dir.path() / "airlock.yaml";
    std::ofstream(config) << "journal: { dir: journal }\nserver: { threads: 1, busy_poll: 500us }\n";
    {
        child_process p({AIRLOCK_BINARY, "serve", "--config", config.string(), "--listen", "127.0.0.1:0"});
        auto port = start_serve(p);
        CHECK_THAT(p.stderr_text(), Catch::Contains("busy poll: 500 us"));
        // Requests close together (caught while polling) and apart (after the thread went to sleep).
        for (int i = 0; i < 20; ++i) {
            CHECK(http_get(port, "/healthz").status == 200);
            if (i % 5 == 4) std::this_thread::sleep_for(20ms);
        }
        p.signal(SIGTERM);
        CHECK(p.wait(15s) == 0);
    }
    child_process refused({AIRLOCK_BINARY, "serve", "--config", config.string(), "--listen", "127.0.0.1:0", "--threads", "2"});
    CHECK(refused.wait(15s) == 2);
    CHECK_THAT(refused.stderr_text(), Catch::Contains("busy_poll") && Catch::Contains("--threads"));
    // A file that leaves the thread count to the default: --threads 1 makes busy polling possible,
    // and without it serve refuses, saying how to fix it.
    auto const unset = dir.path() / "unset.yaml";
    std::ofstream(unset) << "journal: { dir: journal }\nserver: { busy_poll: 200us }\n";
    {
        child_process one({AIRLOCK_BINARY, "serve", "--config", unset.string(), "--listen", "127.0.0.1:0", "--threads", "1"});
        auto port = start_serve(one);
        CHECK(http_get(port, "/healthz").status == 200);
        one.signal(SIGTERM);
        CHECK(one.wait(15s) == 0);
    }
    child_process defaulted({AIRLOCK_BINARY, "serve", "--config", unset.string(), "--listen", "127.0.0.1:0"});
    CHECK(defaulted.wait(15s) == 2);
    CHECK_THAT(defaulted.stderr_text(), Catch::Contains("server.threads: 1") && Catch::Contains("--threads 1"));
}

TEST_CASE("SIGTERM to airlock serve stops a stdio upstream that ignores stdin EOF and SIGTERM, leaving no process behind") {
    stubborn_deployment d("airlock-serve-upstream", "");
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0", "--log-format",
                           "text"});
    start_serve(airlock);
    // airlock meets its upstreams right after it starts listening.
    REQUIRE(d.child_runs());
    d.check_sigterm_stops_everything(airlock);
}

TEST_CASE("SIGTERM to airlock stdio stops a stdio upstream that ignores stdin EOF and SIGTERM, and exits 0") {
    stubborn_deployment d("airlock-stdio-upstream",
                          "principals:\n  - name: desk\n    manifest: desk.yaml\n    token_file: desk.token\n"
                          "    create_if_missing: true\n");
    std::ofstream(d.dir.path() / "desk.yaml") << "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: desk, version: \"1\" }\n"
                                              << "spec:\n  tools:\n    - ref: tool://stubborn/anything\n      mutates: false\n"
                                              << "  budgets: {}\n";
    child_process airlock({AIRLOCK_BINARY, "stdio", "--config", d.config.string(), "--log-format", "text"}, {},
                          child_stdin::pipe);
    // Upstreams start on first use: listing tools starts the child (and waits on it, in vain).
    REQUIRE(airlock.write_stdin(stdio_session(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})")));
    INFO(airlock.stderr_text());
    REQUIRE(d.child_runs());
    // Input stays open: only the signal can end the session.
    d.check_sigterm_stops_everything(airlock);
}

TEST_CASE("airlock stdio answers a line over server.body_limit with -32600 and the id written at its end") {
    sidecar_deployment d({"slow", "hold", "release"}, "    body_limit: 2KiB\n");
    child_process airlock({AIRLOCK_BINARY, "stdio", "--config", d.config.string()}, {}, child_stdin::pipe);
    auto const pad = std::string(20'000, 'x');
    auto const call = R"({"method":"tools/call","params":{"name":"hold__slow","arguments":{"pad":")" + pad + R"("}},)";
    // The id last, as the TypeScript SDK writes it; before "jsonrpc", as other writers order
    // members; and a string id longer than a few hundred bytes.
    std::string const long_id(1500, 'k');
    REQUIRE(airlock.write_stdin(stdio_session(call + R"("jsonrpc":"2.0","id":7})" "\n" +
                                              call + R"("id":8,"jsonrpc":"2.0"})" "\n" +
                                              call + R"("jsonrpc":"2.0","id":")" + long_id + "\"}\n" +
                                              R"({"jsonrpc":"2.0","id":9,"method":"ping"})")));
    INFO(airlock.stdout_text() << airlock.stderr_text());
    REQUIRE(stdout_shows(airlock, R"("id":9)"));
    airlock.close_stdin();
    CHECK(airlock.wait(30s) == 0);
    std::map<std::string, boost::json::object> answers;  // by id, as JSON text
    std::istringstream out(airlock.stdout_text());
    for (std::string line; std::getline(out, line);) {
        auto m = boost::json::parse(line).as_object();
        answers[m.contains("id") ? boost::json::serialize(m.at("id")) : "none"] = m;
    }
    CHECK_FALSE(answers.contains("none"));
    for (auto const& id : std::vector<std::string>{"7", "8", "\"" + long_id + "\""}) {
        INFO(id.substr(0, 20));
        REQUIRE(answers.contains(id));
        CHECK(answers[id].at("error").at("code") == -32600);
        CHECK_THAT(std::string(answers[id].at("error").at("message").as_string()), Catch::Contains("longer than 2048 bytes"));
    }
    // The session went on past them.
    CHECK(answers["9"].contains("result"));
}

TEST_CASE("SIGTERM to airlock stdio answers a call still running after the drain grace with an error saying airlock is stopping") {
    sidecar_deployment d({"slow", "hold", "release"}, "    drain_grace: 1s\n");
    child_process airlock({AIRLOCK_BINARY, "stdio", "--config", d.config.string()}, {}, child_stdin::pipe);
    // hold runs until released, with a progress notification every 200 ms: the first says it is under way.
    REQUIRE(airlock.write_stdin(stdio_session(
        R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold__hold","arguments":{},"_meta":{"progressToken":"p"}}})")));
    INFO(airlock.stdout_text() << airlock.stderr_text());
    REQUIRE(stdout_shows(airlock, "notifications/progress"));

    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
    std::vector<boost::json::object> answers;
    std::istringstream out(airlock.stdout_text());
    for (std::string line; std::getline(out, line);)
        if (auto m = boost::json::parse(line).as_object(); m.contains("id") && m.at("id") == 2) answers.push_back(m);
    REQUIRE(answers.size() == 1);
    CHECK(answers[0].at("error").at("code") == -32603);
    CHECK_THAT(std::string(answers[0].at("error").at("message").as_string()),
               Catch::Contains("airlock is stopping: this request was cut off"));
    // The session's run holds the cut-off call's outcome, then its seal.
    d.check_outcome_then_seal("effect_failed");
}

namespace {

// The answers on `airlock stdio`'s output, by id (as JSON text).
std::map<std::string, boost::json::object> answers_by_id(std::string const& out) {
    std::map<std::string, boost::json::object> answers;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        auto m = boost::json::parse(line).as_object();
        if (m.contains("id")) answers[boost::json::serialize(m.at("id"))] = m;
    }
    return answers;
}

}  // namespace

TEST_CASE("airlock stdio answers every request of input piped in whole with its result, as the journal records it") {
    // What `printf '<initialize>\n<initialized>\n<requests>\n' | airlock stdio` sends: all at once,
    // then the end of input, before the first answer. Each mix is run twice.
    std::vector<std::pair<std::vector<std::string>, int>> const mixes = {
        {{R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
          R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hold__slow","arguments":{"steps":1}}})"},
         1},
        {{R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold__slow","arguments":{"steps":4}}})",
          R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hold__release","arguments":{}}})",
          R"({"jsonrpc":"2.0","id":4,"method":"ping"})"},
         2},
        {{R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold__slow","arguments":{"steps":2},"_meta":{"progressToken":"p"}}})",
          R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})",
          R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"hold__slow","arguments":{"steps":1}}})",
          R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hold__slow","arguments":{"steps":3}}})"},
         3},
    };
    for (std::size_t m = 0; m < mixes.size(); ++m) {
        for (int round = 0; round < 2; ++round) {
            auto const& [requests, calls] = mixes[m];
            sidecar_deployment d;
            child_process airlock({AIRLOCK_BINARY, "stdio", "--config", d.config.string()}, {}, child_stdin::pipe);
            std::string input;
            for (auto const& r : requests) input += (input.empty() ? "" : "\n") + r;
            REQUIRE(airlock.write_stdin(stdio_session(input)));
            airlock.close_stdin();
            INFO("mix " << m << ", round " << round << ":\n" << airlock.stdout_text() << airlock.stderr_text());
            REQUIRE(airlock.wait(60s) == 0);
            auto answers = answers_by_id(airlock.stdout_text());
            for (std::size_t i = 0; i < requests.size(); ++i) {
                auto id = std::to_string(i + 2);
                INFO("id " << id);
                REQUIRE(answers.contains(id));
                CHECK(answers[id].contains("result"));
                CHECK_FALSE(answers[id].contains("error"));
            }
            CHECK(d.records_of("effect_done") == calls);
            CHECK(d.records_of("effect_failed") == 0);
        }
    }
}

TEST_CASE("a second SIGTERM to airlock stdio ends the drain grace: what still runs is cut off and answered so") {
    sidecar_deployment d;  // a 60 s grace
    child_process airlock({AIRLOCK_BINARY, "stdio", "--config", d.config.string()}, {}, child_stdin::pipe);
    REQUIRE(airlock.write_stdin(stdio_session(
        R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold__hold","arguments":{},"_meta":{"progressToken":"p"}}})")));
    INFO(airlock.stdout_text() << airlock.stderr_text());
    REQUIRE(stdout_shows(airlock, "notifications/progress"));
    airlock.signal(SIGTERM);
    REQUIRE(airlock.wait_for_stderr_line("ending the session", 10s));
    std::this_thread::sleep_for(300ms);
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
    auto answers = answers_by_id(airlock.stdout_text());
    REQUIRE(answers.contains("2"));
    CHECK_THAT(std::string(answers["2"].at("error").at("message").as_string()),
               Catch::Contains("airlock is stopping: this request was cut off"));
    d.check_outcome_then_seal("effect_failed");
}
