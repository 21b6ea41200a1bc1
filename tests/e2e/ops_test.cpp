// airlock as operators see it: /healthz, /readyz, /metrics (checked by promtool) and the request
// log, from the real binary with a real upstream and the official SDK client driving traffic.
#include "tests/service/mcp/endpoint_test_client.hpp"
#include "tests/e2e/sidecar_deployment.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/node_peers.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr char const* alice_token = "alice-ops-0123456789abcdef";

struct deployment : gateway_deployment {
    explicit deployment(std::string const& extra = "", std::string const& stdio_extra = "")
        : gateway_deployment(alice_token, extra, stdio_extra) {}
};

raw_response get_with(std::uint16_t port, std::string const& path, std::string const& headers) {
    return raw_http(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n" + headers +
                              "Connection: close\r\n\r\n");
}

// /readyz until it answers `status` (the upstream is met in the background after start).
raw_response readyz_until(std::uint16_t port, int status) {
    raw_response r;
    for (int i = 0; i < 300; ++i) {
        r = http_get(port, "/readyz");
        if (r.status == status) break;
        std::this_thread::sleep_for(100ms);
    }
    return r;
}

std::string client_script() { return std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/gateway/sdk_client.mjs"; }

// Lists, calls everything__get-sum, and is refused everything__get-env (not granted).
void run_sdk_session(std::uint16_t port, std::string const& token) {
    auto r = run_command({peers::node(), client_script(), "http", "http://127.0.0.1:" + std::to_string(port) + "/mcp", token});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto out = json::parse(r.out).as_object();
    REQUIRE(out.at("sum") == "The sum of 2 and 3 is 5.");
    REQUIRE(out.at("denied").at("text") == "not permitted");
}

// The JSON log lines of the "http request" kind.
std::vector<json::object> request_lines(std::string const& stderr_text) {
    std::vector<json::object> out;
    std::istringstream in(stderr_text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line.front() != '{') continue;
        auto v = json::parse(line).as_object();
        if (v.at("msg") == "http request") out.push_back(std::move(v));
    }
    return out;
}

// The value of the sample with exactly this name and label block, or -1.
double sample(std::string const& exposition, std::string const& series) {
    std::istringstream in(exposition);
    std::string line;
    while (std::getline(in, line))
        if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
    return -1;
}

}  // namespace

TEST_CASE("readyz turns 200 once the upstream answers, naming each check; healthz answers from the start") {
    deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    CHECK(http_get(port, "/healthz").status == 200);
    auto ready = readyz_until(port, 200);
    REQUIRE(ready.status == 200);
    auto body = json::parse(ready.body).as_object();
    CHECK(body.at("status") == "ready");
    CHECK(body.at("checks").at("upstream:everything").at("state") == "up");
    CHECK(body.at("checks").at("journal").at("state") == "open");
    CHECK(body.at("checks").at("draining").at("state") == "serving");
}

TEST_CASE("a required upstream that cannot start keeps readyz at 503 naming it, without revealing its command") {
    deployment d;
    std::ofstream(d.config) << "journal: { dir: journal }\n"
                            << "upstreams:\n  - name: everything\n    stdio: { argv: [\"" << peers::node() << "\", \""
                            << peers::everything() << "\", stdio] }\n"
                            << "  - name: broken\n    stdio: { argv: [/nonexistent/secret-path/server] }\n"
                            // Allowed, so airlock tries to start it (one egress refuses is never started).
                            << "egress:\n  - process: \"" << peers::node() << "\"\n  - process: /nonexistent/secret-path/server\n"
                            << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n";
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    raw_response r;
    // Poll until the everything upstream is up: then the broken one alone holds readiness back.
    for (int i = 0; i < 300; ++i) {
        r = http_get(port, "/readyz");
        if (r.status == 503 && r.body.find(R"("upstream:everything":{"ok":true)") != std::string::npos &&
            r.body.find(R"("state":"down")") != std::string::npos)
            break;
        std::this_thread::sleep_for(100ms);
    }
    CHECK(r.status == 503);
    auto body = json::parse(r.body).as_object();
    CHECK(body.at("status") == "not_ready");
    CHECK(body.at("failed") == json::array{"upstream:broken"});
    CHECK(body.at("checks").at("upstream:broken").at("state") == "down");
    CHECK(r.body.find("secret-path") == std::string::npos);
    CHECK(r.body.find("nonexistent") == std::string::npos);
}

TEST_CASE("an upstream marked optional that cannot start leaves airlock ready") {
    deployment d;
    std::ofstream(d.config) << "journal: { dir: journal }\n"
                            << "upstreams:\n  - name: broken\n    optional: true\n"
                            << "    stdio: { argv: [/nonexistent/server] }\n";
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    auto r = readyz_until(port, 200);
    REQUIRE(r.status == 200);
    auto check = json::parse(r.body).at("checks").at("upstream:broken");
    CHECK(check.at("optional") == true);
    CHECK(check.at("ok") == true);
}

TEST_CASE("while the journal's map is full readyz is 503 naming map_full, the log names journal.map_size, and metrics show the map's use") {
    deployment d;
    {
        // The smallest map airlock accepts, which a few calls with large arguments fill.
        auto text = file_text(d.config);
        auto at = text.find("journal: { dir: journal }");
        REQUIRE(at != std::string::npos);
        text.replace(at, 25, "journal: { dir: journal, map_size: 1MiB }");
        std::ofstream(d.config) << text;
    }
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    REQUIRE(readyz_until(port, 200).status == 200);
    auto before = http_get(port, "/metrics");
    CHECK(sample(before.body, "airlock_journal_map_size_bytes") == 1024 * 1024);
    CHECK(sample(before.body, "airlock_journal_map_used_bytes") > 0);
    CHECK(sample(before.body, "airlock_journal_map_used_bytes") < 512 * 1024);

    std::string const message(60 * 1024, 'm');
    std::string const call = R"("name":"everything__echo","arguments":{"message":")" + message + R"("},)";
    bool unavailable = false;
    for (int i = 0; i < 40 && !unavailable; ++i) {
        auto r = modern_post(port, alice_token, "tools/call", "everything__echo", call);
        REQUIRE(r.status == 200);
        unavailable = r.body.find("the journal is unavailable") != std::string::npos;
    }
    REQUIRE(unavailable);

    auto ready = http_get(port, "/readyz");
    INFO(ready.body);
    CHECK(ready.status == 503);
    auto body = json::parse(ready.body).as_object();
    CHECK(body.at("failed").as_array() == json::array{"journal"});
    CHECK(body.at("checks").at("journal").at("ok") == false);
    CHECK(body.at("checks").at("journal").at("state") == "map_full");
    // The probe /readyz starts finds no room either (nothing freed any): still not ready.
    std::this_thread::sleep_for(1200ms);
    CHECK(http_get(port, "/readyz").status == 503);
    std::this_thread::sleep_for(200ms);
    auto still = http_get(port, "/readyz");
    CHECK(still.status == 503);
    CHECK(still.body.find("map_full") != std::string::npos);

    auto scrape = http_get(port, "/metrics");
    CHECK(sample(scrape.body, "airlock_journal_map_used_bytes") > 0.9 * 1024 * 1024);
    CHECK(sample(scrape.body, "airlock_journal_map_used_bytes") <= 1024 * 1024);
    auto err = airlock.stderr_text();
    CHECK_THAT(err, Catch::Contains("journal.map_size"));
    CHECK(err.find("store.map_size") == std::string::npos);
}

TEST_CASE("metrics show the process as the kernel sees it, and the journal's file growing with calls") {
    deployment d;
    auto const now = [] {
        return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    };
    auto const spawned = now();
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    REQUIRE(readyz_until(port, 200).status == 200);

    auto first = http_get(port, "/metrics");
    REQUIRE(first.status == 200);
    auto const& m = first.body;
    INFO(m);
    CHECK_THAT(m, Catch::Contains("# TYPE process_cpu_seconds_total counter\n"));
    CHECK_THAT(m, Catch::Contains("# TYPE process_start_time_seconds gauge\n"));
    // The boot time is whole seconds, and the wall clock drifts from it as NTP steers it (here by
    // nearly two seconds after a few hours up): a minute either way. Ticks taken for seconds, or
    // the boot time left out, would be off by hours or by decades.
    auto const started = sample(m, "process_start_time_seconds");
    CHECK(started >= spawned - 60);
    CHECK(started <= now() + 60);
    CHECK(started > now() - 3600);
    CHECK(sample(m, "process_cpu_seconds_total") >= 0);
    CHECK(sample(m, "process_resident_memory_bytes") > 1024 * 1024);
    CHECK(sample(m, "process_virtual_memory_bytes") >= sample(m, "process_resident_memory_bytes"));
    // The listener, the journal's files, the upstream's pipes, the scrape's own connection.
    CHECK(sample(m, "process_open_fds") > 5);
    CHECK(sample(m, "process_max_fds") >= sample(m, "process_open_fds"));
    auto const file_before = sample(m, "airlock_journal_file_bytes");
    CHECK(file_before > 0);
    CHECK(file_before == static_cast<double>(std::filesystem::file_size(d.dir.path() / "journal" / "data.mdb")));

    // 40 calls of 16 KiB each are journaled (arguments and output): more than the pages LMDB had free.
    std::string const call = R"("name":"everything__echo","arguments":{"message":")" + std::string(16 * 1024, 'j') + R"("},)";
    for (int i = 0; i < 40; ++i) REQUIRE(modern_post(port, alice_token, "tools/call", "everything__echo", call).status == 200);
    auto after = http_get(port, "/metrics").body;
    CHECK(sample(after, "airlock_journal_file_bytes") >= file_before + 40 * 16 * 1024);
    CHECK(sample(after, "airlock_journal_file_bytes") <= sample(after, "airlock_journal_map_used_bytes"));
    CHECK(sample(after, "process_cpu_seconds_total") >= sample(m, "process_cpu_seconds_total"));
    CHECK(sample(after, "process_start_time_seconds") == sample(m, "process_start_time_seconds"));
}

TEST_CASE("readyz is 503 naming the journal's fault while its file cannot grow, and ready again once it can") {
    deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    REQUIRE(readyz_until(port, 200).status == 200);
    // A file size limit at the journal's present size on the running airlock: every write that grows
    // the file fails, as on a full disk.
    auto pid = std::to_string(airlock.pid());
    auto size = std::filesystem::file_size(d.dir.path() / "journal" / "data.mdb");
    REQUIRE(run_command({"prlimit", "--pid", pid, "--fsize=" + std::to_string(size) + ":"}).exit_code == 0);
    std::string const call =
        R"("name":"everything__echo","arguments":{"message":")" + std::string(200 * 1024, 'd') + R"("},)";
    bool unavailable = false;
    for (int i = 0; i < 20 && !unavailable; ++i)
        unavailable = modern_post(port, alice_token, "tools/call", "everything__echo", call).body.find(
                          "the journal is unavailable") != std::string::npos;
    REQUIRE(unavailable);
    auto down = http_get(port, "/readyz");
    INFO(down.body);
    CHECK(down.status == 503);
    // EFBIG when a write starts past the limit; LMDB reports a write cut short at the limit as EIO.
    auto const state = json::parse(down.body).at("checks").at("journal").at("state");
    CHECK((state == "disk_full" || state == "write_failed"));

    // Room again: no call comes to an unready server, so the probes /readyz starts find out.
    REQUIRE(run_command({"prlimit", "--pid", pid, "--fsize=unlimited:"}).exit_code == 0);
    auto up = readyz_until(port, 200);
    INFO(up.body);
    REQUIRE(up.status == 200);
    CHECK(json::parse(up.body).at("checks").at("journal").at("state") == "open");
    auto again = modern_post(port, alice_token, "tools/call", "everything__echo", call);
    CHECK(again.status == 200);
    CHECK(again.body.find("the journal is unavailable") == std::string::npos);
    CHECK_THAT(airlock.stderr_text(), Catch::Contains("the journal's file may not grow") ||
                                          Catch::Contains("commit batch: Input/output error"));
}

TEST_CASE("one client holding more idle connections than max_connections locks nobody out, and calls and probes are served") {
    deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    REQUIRE(readyz_until(port, 200).status == 200);
    // The default max_connections is 1024: more than that, from one address (127.0.0.2), idle.
    std::vector<raw_connection> flood;
    for (int i = 0; i < 1100; ++i) flood.push_back(raw_connection::tcp(port, "127.0.0.2"));
    // Its share is a quarter of max_connections; what is past it was closed or refused.
    double open = -1;
    for (int i = 0; i < 100; ++i) {
        auto scrape = http_get(port, "/metrics");
        open = sample(scrape.body, "airlock_active_connections");
        if (scrape.status == 200 && open >= 0 && open <= 256 + 2 + 1) break;
        std::this_thread::sleep_for(100ms);
    }
    CHECK(open >= 1);
    CHECK(open <= 256 + 2 + 1);
    std::string const sum = R"("name":"everything__get-sum","arguments":{"a":2,"b":3},)";
    for (int i = 0; i < 3; ++i) {
        CHECK(http_get(port, "/healthz").status == 200);
        CHECK(http_get(port, "/readyz").status == 200);
        auto call = modern_post(port, alice_token, "tools/call", "everything__get-sum", sum);
        CHECK(call.status == 200);
        CHECK_THAT(call.body, Catch::Contains("The sum of 2 and 3 is 5."));
    }
}

TEST_CASE("metrics after real gateway traffic pass promtool and show calls, denials, routes and the journal") {
    deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    REQUIRE(readyz_until(port, 200).status == 200);
    run_sdk_session(port, alice_token);
    CHECK(http_get(port, "/no/such/route").status == 404);
    CHECK(get_with(port, "/v1/runs/some-run-id", std::string("Authorization: Bearer ") + alice_token + "\r\n").status != 0);
    CHECK(get_with(port, "/v1/tools", "Origin: http://elsewhere.example\r\n").status == 403);
    std::string big(20 * 1024, 'x');
    CHECK(raw_http(port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + big + "\r\n\r\n").status == 431);

    auto scrape = http_get(port, "/metrics");
    REQUIRE(scrape.status == 200);
    CHECK_THAT(scrape.head, Catch::Contains("text/plain; version=0.0.4"));
    auto file = d.dir.path() / "scrape.prom";
    std::ofstream(file) << scrape.body;
    auto lint = run_command({"sh", "-c", "promtool check metrics < '" + file.string() + "'"});
    INFO(lint.out << lint.err);
    CHECK(lint.exit_code == 0);

    auto const& m = scrape.body;
    INFO(m);
    CHECK(sample(m, R"(airlock_tool_calls_total{server="everything",tool="get.sum",outcome="ok"})") == 1);
    CHECK(sample(m, R"(airlock_tool_call_duration_seconds_count{server="everything",tool="get.sum"})") == 1);
    CHECK(sample(m, R"(airlock_policy_denials_total{reason="not_granted"})") == 1);
    CHECK(sample(m, R"(airlock_policy_denials_total{reason="egress_ceiling"})") == 0);
    CHECK(sample(m, R"(airlock_http_requests_total{route="other",method="GET",status="404"})") == 1);
    CHECK(sample(m, R"(airlock_http_requests_total{route="/mcp",method="POST",status="200"})") >= 3);
    CHECK(sample(m, R"(airlock_http_requests_total{route="none",method="other",status="431"})") == 1);
    // The REST API is labelled by its route template, never by the id in the path.
    CHECK_THAT(m, Catch::Contains(R"(airlock_http_requests_total{route="/v1/runs/{id}",method="GET")"));
    CHECK(m.find("some-run-id") == std::string::npos);
    // A request the door turns away still counts under the route it asked for.
    CHECK(sample(m, R"(airlock_http_requests_total{route="/v1/tools",method="GET",status="403"})") == 1);
    CHECK(sample(m, R"(airlock_http_request_duration_seconds_count{route="/mcp"})") >= 3);
    CHECK(sample(m, R"(airlock_journal_batch_size_count)") >= 1);
    CHECK(sample(m, R"(airlock_journal_commit_duration_seconds_count)") >= 1);
    CHECK(sample(m, R"(airlock_upstream_up{upstream="everything"})") == 1);
    CHECK(sample(m, R"(airlock_build_info{version=")" + std::string(AIRLOCK_VERSION) + R"("})") == 1);
    CHECK(sample(m, "airlock_active_connections") >= 1);  // the scrape's own
    CHECK(sample(m, "airlock_active_sessions") >= 0);
    // Nothing that names a secret or a principal is a label.
    CHECK(m.find(alice_token) == std::string::npos);
    CHECK(m.find("alice") == std::string::npos);
}

TEST_CASE("with a metrics token, /metrics answers only a scraper that presents it") {
    deployment d("metrics:\n  token_env: AIRLOCK_TEST_METRICS_TOKEN\n");
    std::string token = "scrape-0123456789abcdef";
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"},
                          {"AIRLOCK_TEST_METRICS_TOKEN=" + token});
    auto port = wait_listening(airlock);
    auto bare = http_get(port, "/metrics");
    CHECK(bare.status == 401);
    CHECK(bare.body.find("airlock_") == std::string::npos);
    CHECK(get_with(port, "/metrics", "Authorization: Bearer wrong-0123456789abcdef\r\n").status == 401);
    auto ok = get_with(port, "/metrics", "Authorization: Bearer " + token + "\r\n");
    CHECK(ok.status == 200);
    CHECK_THAT(ok.body, Catch::Contains("airlock_build_info"));
    // Health stays open for probes.
    CHECK(http_get(port, "/healthz").status == 200);
}

TEST_CASE("every request gets one JSON log line with its request id, which the response echoes") {
    deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    auto mine = get_with(port, "/healthz", "X-Request-Id: trace-42.abc\r\n");
    CHECK_THAT(mine.head, Catch::Contains("X-Request-Id: trace-42.abc"));
    // An id that could corrupt a log is replaced by a fresh one.
    auto bad = get_with(port, "/healthz", "X-Request-Id: evil\" id with spaces\r\n");
    std::smatch fresh;
    REQUIRE(std::regex_search(bad.head, fresh, std::regex("X-Request-Id: ([0-9a-f]{32})")));
    run_sdk_session(port, alice_token);

    // The lines come out as the requests end; give the last one a moment to be written.
    std::vector<json::object> lines;
    for (int i = 0; i < 50; ++i) {
        lines = request_lines(airlock.stderr_text());
        if (lines.size() >= 5) break;
        std::this_thread::sleep_for(100ms);
    }
    auto find = [&](std::string const& id) -> json::object const* {
        for (auto const& l : lines)
            if (l.at("request_id") == id.c_str()) return &l;
        return nullptr;
    };
    auto const* l = find("trace-42.abc");
    REQUIRE(l);
    CHECK(l->at("method") == "GET");
    CHECK(l->at("route") == "/healthz");
    CHECK(l->at("status") == 200);
    CHECK(l->at("duration_ms").is_number());
    CHECK(l->at("principal") == "-");
    CHECK(l->at("level") == "info");
    CHECK(find(fresh[1].str()));
    bool alice_called = false;
    for (auto const& line : lines)
        alice_called = alice_called || (line.at("route") == "/mcp" && line.at("principal") == "alice" &&
                                        line.at("method") == "POST" && line.at("status") == 200);
    CHECK(alice_called);
}

TEST_CASE("a client that hangs up during a slow tool call is logged and counted as 499, not 500") {
    sidecar_deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = airlock_port(airlock);
    // hold runs until released, which nobody does: the client reads for a moment, gets nothing and
    // closes its socket with the call in flight.
    auto call = modern_request(port, sidecar_deployment::token, "tools/call", "hold__hold", R"("name":"hold__hold","arguments":{},)");
    REQUIRE(raw_http(port, call, 1s).status == 0);

    std::vector<json::object> lines;
    auto on_mcp = [&] {
        std::vector<json::object> out;
        for (auto& l : request_lines(airlock.stderr_text()))
            if (l.at("route") == "/mcp") out.push_back(l);
        return out;
    };
    for (int i = 0; i < 100 && lines.empty(); ++i) {
        lines = on_mcp();
        if (lines.empty()) std::this_thread::sleep_for(100ms);
    }
    INFO(airlock.stderr_text());
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].at("status") == 499);
    CHECK(lines[0].at("method") == "POST");
    CHECK(lines[0].at("principal") == "alice");

    auto scrape = http_get(port, "/metrics");
    REQUIRE(scrape.status == 200);
    INFO(scrape.body);
    CHECK(sample(scrape.body, R"(airlock_http_requests_total{route="/mcp",method="POST",status="499"})") == 1);
    CHECK_THAT(scrape.body, !Catch::Contains(R"(status="500")"));
}

TEST_CASE("the text log format writes human lines, request lines with key=value fields") {
    deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0",
                           "--log-format", "text", "--log-level", "debug"});
    auto port = wait_listening(airlock);
    CHECK(http_get(port, "/healthz").status == 200);
    auto line = airlock.wait_for_stderr_line("route=/healthz", 10s);
    REQUIRE(line.has_value());
    CHECK(line->front() != '{');
    CHECK_THAT(*line, Catch::Contains(" info "));
    CHECK_THAT(*line, Catch::Contains("status=200"));
    CHECK_THAT(*line, Catch::Contains("method=GET"));
}

TEST_CASE("a wrong --log-format or --log-level is refused naming the flag") {
    auto r = run_command({AIRLOCK_BINARY, "serve", "--log-format", "xml"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--log-format"));
    r = run_command({AIRLOCK_BINARY, "serve", "--log-level", "loud"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--log-level"));
}

TEST_CASE("no token, API key or signing key byte appears in the logs of a full gateway session at debug level") {
    std::string anthropic = "sk-ant-api03-ZZtestSecretValue0123456789";
    std::string openai = "sk-proj-testSecretValue9876543210abcdef";
    std::string bob_token = "bob-ops-fedcba9876543210";
    std::string metrics_token = "metrics-ops-5555aaaa6666bbbb";
    std::string upstream_bearer = "upstream-bearer-77778888cccc";
    deployment d("  - name: bob\n    token_env: AIRLOCK_TEST_BOB_TOKEN\n    manifest: alice.yaml\n"
                 "signing:\n  key_file: keys/provenance.key\n  create_if_missing: true\n"
                 "metrics:\n  token_env: AIRLOCK_TEST_METRICS_TOKEN\n"
                 "providers:\n  gpt: { kind: openai, api_key: { env: OPENAI_API_KEY }, model: gpt-4o-mini }\n"
                 "  claude: { kind: anthropic, api_key: { env: ANTHROPIC_API_KEY }, model: claude-sonnet-4-5 }\n"
                 "logging:\n  level: debug\n",
                 ", env_from: { ANTHROPIC_API_KEY: ANTHROPIC_API_KEY, OPENAI_API_KEY: OPENAI_API_KEY }");
    // A second upstream over HTTP whose credential comes from the environment; it is down, so its
    // failures are logged, and they must not carry the credential.
    {
        std::ifstream in(d.config);
        std::stringstream all;
        all << in.rdbuf();
        auto text = all.str();
        auto at = text.find("egress:");
        text.insert(at, "  - name: remote\n    url: http://127.0.0.1:9/mcp\n    optional: true\n"
                        "    headers: { Authorization: { env: AIRLOCK_TEST_UPSTREAM_BEARER, prefix: \"Bearer \" } }\n");
        text.insert(text.find("principals:"), "  - http://127.0.0.1:9\n");
        std::ofstream(d.config) << text;
    }
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"},
                          {"ANTHROPIC_API_KEY=" + anthropic, "OPENAI_API_KEY=" + openai,
                           "AIRLOCK_TEST_BOB_TOKEN=" + bob_token, "AIRLOCK_TEST_METRICS_TOKEN=" + metrics_token,
                           "AIRLOCK_TEST_UPSTREAM_BEARER=" + upstream_bearer});
    auto port = wait_listening(airlock);
    REQUIRE(readyz_until(port, 200).status == 200);
    run_sdk_session(port, alice_token);
    run_sdk_session(port, bob_token);
    // Wrong and right credentials on every door.
    CHECK(get_with(port, "/metrics", "Authorization: Bearer " + metrics_token + "\r\n").status == 200);
    CHECK(get_with(port, "/metrics", "Authorization: Bearer " + metrics_token + "x\r\n").status == 401);
    auto wrong = raw_http(port, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                    "\r\nAuthorization: Bearer " + alice_token + "-not\r\nContent-Type: application/json\r\n"
                                    "Accept: application/json, text/event-stream\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
    CHECK(wrong.status == 401);
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);

    // The signing key airlock created on first start, as PEM lines and as raw bytes.
    std::vector<std::string> secrets{alice_token, bob_token, anthropic, openai, metrics_token, upstream_bearer};
    auto key_file = d.dir.path() / "keys" / "provenance.key";
    {
        std::ifstream in(key_file);
        std::string line;
        while (std::getline(in, line))
            if (!line.empty() && !line.starts_with("-----")) secrets.push_back(line);
    }
    REQUIRE(secrets.size() > 6);
    FILE* f = std::fopen(key_file.c_str(), "r");
    REQUIRE(f);
    EVP_PKEY* key = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
    std::fclose(f);
    REQUIRE(key);
    unsigned char raw[32];
    std::size_t raw_len = sizeof raw;
    REQUIRE(EVP_PKEY_get_raw_private_key(key, raw, &raw_len) == 1);
    EVP_PKEY_free(key);
    std::string hex;
    std::string bytes(reinterpret_cast<char*>(raw), raw_len);
    for (unsigned char c : bytes) {
        char b[3];
        std::snprintf(b, sizeof b, "%02x", c);
        hex += b;
    }
    secrets.push_back(hex);

    auto const& logs = airlock.stderr_text();
    // The session really ran at debug level, with request lines for both principals.
    CHECK_THAT(logs, Catch::Contains("\"level\":\"debug\""));
    CHECK_THAT(logs, Catch::Contains("\"principal\":\"bob\""));
    for (auto const& s : secrets) {
        INFO("secret " << s.substr(0, 6) << "…");
        CHECK(logs.find(s) == std::string::npos);
    }
    CHECK(logs.find(bytes) == std::string::npos);
}

TEST_CASE("an HTTP upstream that goes away turns readyz to 503 within a few probes, not at the next tool listing") {
    deployment d;
    auto upstream = std::make_unique<everything_server>();
    std::ofstream(d.config) << "journal: { dir: journal }\n"
                            << "upstreams:\n  - name: everything\n    url: " << upstream->url() << "\n"
                            << "egress:\n  - http://127.0.0.1:" << upstream->port << "\n"
                            << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n";
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    REQUIRE(readyz_until(port, 200).status == 200);
    upstream.reset();  // stopped: nothing listens on its port any more
    // The tool listing stays fresh for 30 s; a probe every 100 ms for at most 15 s must see it down
    // through its pings before that.
    raw_response r;
    for (int i = 0; i < 150; ++i) {
        r = http_get(port, "/readyz");
        if (r.status == 503) break;
        std::this_thread::sleep_for(100ms);
    }
    INFO(airlock.stderr_text());
    REQUIRE(r.status == 503);
    auto body = json::parse(r.body).as_object();
    CHECK(body.at("failed") == json::array{"upstream:everything"});
    // Seen down by a ping, or by a re-read of its tools that the upstream's own list_changed at
    // startup set off just before it went away: either way not by the 30-second listing.
    CHECK_THAT(airlock.stderr_text(), Catch::Contains("does not answer a ping") || Catch::Contains("tools unavailable"));
}

TEST_CASE("an HTTP upstream unreachable since start reads down in readyz, not unknown") {
    deployment d;
    // A port nothing listens on: bound once to find it free, then closed.
    std::uint16_t dead_port = 0;
    {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        socklen_t len = sizeof a;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        dead_port = ntohs(a.sin_port);
        ::close(fd);
    }
    std::ofstream(d.config) << "journal: { dir: journal }\n"
                            << "upstreams:\n  - name: gone\n    url: http://127.0.0.1:" << dead_port << "/mcp\n"
                            << "egress:\n  - http://127.0.0.1:" << dead_port << "\n"
                            << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n";
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    raw_response r;
    for (int i = 0; i < 150; ++i) {
        r = http_get(port, "/readyz");
        if (r.body.find(R"("state":"down")") != std::string::npos) break;
        std::this_thread::sleep_for(100ms);
    }
    INFO(r.body << airlock.stderr_text());
    CHECK(r.status == 503);
    auto body = json::parse(r.body).as_object();
    CHECK(body.at("checks").at("upstream:gone").at("state") == "down");
    CHECK(body.at("failed") == json::array{"upstream:gone"});
}
