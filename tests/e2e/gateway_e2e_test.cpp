// airlock as a whole, from a configuration file: the official SDK client lists and calls tools of a
// real upstream through `airlock serve` (Streamable HTTP) and `airlock stdio`, and the journal
// written on the way verifies.
#include "tests/support/child_process.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <csignal>
#include <fstream>
#include <regex>

using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {

constexpr char const* token = "alice-0123456789abcdef";

// A deployment: one stdio upstream (server-everything), egress allowing exactly it, one principal.
struct deployment {
    temp_dir dir{"airlock-gateway-e2e"};
    std::filesystem::path config = dir.path() / "airlock.yaml";

    deployment() {
        std::ofstream(dir.path() / "alice.token") << token << "\n";
        ::chmod((dir.path() / "alice.token").c_str(), 0600);
        std::ofstream(dir.path() / "alice.yaml") << R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: alice-desk, version: "1" }
spec:
  tools:
    - ref: tool://everything/get.sum
      mutates: false
    - ref: tool://everything/echo
      mutates: false
    - ref: tool://everything/trigger.sampling.request
      mutates: false
  budgets: {}
)";
        std::ofstream(config) << "journal: { dir: journal }\n"
                              << "upstreams:\n  - name: everything\n    stdio: { argv: [\"" << peers::node() << "\", \""
                              << peers::everything() << "\", stdio] }\n"
                              << "egress:\n  - process: \"" << peers::node() << "\"\n"
                              << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n";
    }
};

std::uint16_t wait_listening(child_process& p) {
    auto line = p.wait_for_stderr_line("listening on http://", 30s);
    REQUIRE(line.has_value());
    std::smatch m;
    REQUIRE(std::regex_search(*line, m, std::regex(R"(127\.0\.0\.1:(\d+))")));
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}

std::string client_script() { return std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/gateway/sdk_client.mjs"; }

void check_client_output(command_result const& r) {
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto out = boost::json::parse(r.out).as_object();
    auto const& tools = out.at("tools").as_array();
    REQUIRE(tools.size() == 3);
    CHECK(tools[0] == "everything__echo");
    CHECK(tools[1] == "everything__get-sum");
    CHECK(tools[2] == "everything__trigger-sampling-request");
    CHECK(out.at("sum") == "The sum of 2 and 3 is 5.");
    CHECK(out.at("denied").at("isError") == true);
    CHECK(out.at("denied").at("text") == "not permitted");
}

// A 2026-07-28 POST to /mcp as alice.
raw_response modern_post(std::uint16_t port, std::string const& method, std::string const& name, std::string const& params) {
    return airlock::testing::modern_post(port, token, method, name, params);
}

}  // namespace

TEST_CASE("a 2026-07-28 caller answers an upstream's sampling question through an InputRequiredResult and its retry") {
    deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    std::string call = R"("name":"everything__trigger-sampling-request","arguments":{"prompt":"capital of France?"},)";
    auto first = modern_post(port, "tools/call", "everything__trigger-sampling-request", call);
    INFO(first.body);
    REQUIRE(first.status == 200);
    auto result = boost::json::parse(first.body).at("result").as_object();
    REQUIRE(result.at("resultType") == "input_required");
    auto const& requests = result.at("inputRequests").as_object();
    REQUIRE(requests.size() == 1);
    auto const& [key, question] = *requests.begin();
    CHECK(question.at("method") == "sampling/createMessage");
    CHECK_THAT(std::string(question.at("params").at("messages").at(0).at("content").at("text").as_string()),
               Catch::Contains("capital of France?"));

    auto answer = R"("inputResponses":{")" + std::string(key) +
                  R"(":{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"e2e-model","stopReason":"endTurn"}},)" +
                  R"("requestState":)" + boost::json::serialize(result.at("requestState")) + ",";
    auto retry = modern_post(port, "tools/call", "everything__trigger-sampling-request", call + answer);
    INFO(retry.body);
    REQUIRE(retry.status == 200);
    auto done = boost::json::parse(retry.body).at("result").as_object();
    CHECK(done.at("resultType") == "complete");
    CHECK_THAT(std::string(done.at("content").at(0).at("text").as_string()), Catch::Contains("Paris"));
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(20s) == 0);
}

TEST_CASE("the SDK client lists and calls granted tools through airlock serve, and the journal verifies") {
    deployment d;
    {
        child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
        auto port = wait_listening(airlock);
        auto url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
        check_client_output(run_command({peers::node(), client_script(), "http", url, token}));
        // A wrong token never reaches the gateway.
        auto anon = raw_http(port, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                       "\r\nAuthorization: Bearer wrong-token-0123456789\r\nContent-Type: application/json\r\n"
                                       "Accept: application/json, text/event-stream\r\nContent-Length: 2\r\n\r\n{}");
        CHECK(anon.status == 401);
        airlock.signal(SIGTERM);
        CHECK(airlock.wait(20s) == 0);
        CHECK(airlock.stderr_text().find(token) == std::string::npos);
    }
    auto verified = run_command({AIRLOCK_BINARY, "journal", "verify", "--all", "--journal", (d.dir.path() / "journal").string()});
    INFO(verified.out);
    CHECK(verified.exit_code == 0);
    CHECK_THAT(verified.out, Catch::Contains("1 runs verified"));
}

TEST_CASE("the SDK client lists and calls granted tools through airlock stdio") {
    deployment d;
    auto r = run_command({peers::node(), client_script(), "stdio", AIRLOCK_BINARY, "stdio", "--config", d.config.string()});
    REQUIRE(r.exit_code == 0);
    check_client_output(r);
}

TEST_CASE("airlock tools sends --header to an HTTP upstream, and a wrong bearer token is refused without being echoed") {
    deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    auto url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
    std::string wrong = "not-the-token-0123456789";
    auto refused = run_command({AIRLOCK_BINARY, "tools", "--server", url, "--header", "Authorization: Bearer " + wrong});
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.err, Catch::Contains("refused"));
    CHECK(refused.err.find(wrong) == std::string::npos);
    auto accepted = run_command({AIRLOCK_BINARY, "tools", "--server", url, "--header", std::string("Authorization: Bearer ") + token});
    INFO(accepted.err);
    CHECK(accepted.exit_code == 0);
    CHECK(accepted.err.find(token) == std::string::npos);
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(20s) == 0);
}
