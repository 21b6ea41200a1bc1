// The REST API as a user meets it: `airlock serve` (the real binary) with the TELLER example agent,
// the example ledger MCP server over stdio and the scripted model; runs started, waited for,
// listed, read back, replayed and verified over HTTP.
#include "tests/support/child_process.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr char const* token = "e2e-rest-token-0123456789abcdef";

std::string source(std::string const& rel) { return std::string(AIRLOCK_SOURCE_DIR) + "/" + rel; }

struct served_teller {
    temp_dir dir{"airlock-rest-e2e"};
    std::unique_ptr<child_process> airlock;
    std::uint16_t port = 0;

    explicit served_teller(std::string const& script = source("examples/teller.script.yaml")) {
        auto node = peers::node();
        auto file = dir.path() / "airlock.yaml";
        std::ofstream(file) << "journal: { dir: journal }\n"
                            << "upstreams:\n  - name: ledger\n    stdio: { argv: [" << node << ", "
                            << source("examples/ledger/server.mjs") << "] }\n"
                            << "egress:\n  - process: " << node << "\n  - local\n"
                            << "principals:\n  - { name: alice, token_env: E2E_REST_TOKEN, manifest: "
                            << source("examples/desk.yaml") << " }\n"
                            << "agents:\n  - { manifest: " << source("examples/teller.yaml") << ", script: " << script
                            << " }\n";
        airlock = std::make_unique<child_process>(
            std::vector<std::string>{AIRLOCK_BINARY, "serve", "--config", file.string(), "--listen", "127.0.0.1:0"},
            std::vector<std::string>{std::string("E2E_REST_TOKEN=") + token});
        auto line = airlock->wait_for_stderr_line("listening on http://", 30s);
        INFO(airlock->stderr_text());
        REQUIRE(line.has_value());
        std::smatch m;
        REQUIRE(std::regex_search(*line, m, std::regex(R"(127\.0\.0\.1:(\d+))")));
        port = static_cast<std::uint16_t>(std::stoi(m[1]));
    }
    ~served_teller() { stop(); }
    // Ends airlock (SIGTERM, then its exit code); the journal is closed when this returns.
    int stop() {
        if (stopped) return exit_code;
        airlock->signal(SIGTERM);
        exit_code = airlock->wait(20s);
        stopped = true;
        return exit_code;
    }
    bool stopped = false;
    int exit_code = -1;

    raw_response call(std::string const& method, std::string const& target, std::string const& body = {}) {
        std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\nAuthorization: Bearer " + token + "\r\n";
        if (method == "POST") r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
        r += "\r\n" + body;
        return raw_http(port, r, 60s);
    }
};

json::object parsed(raw_response const& r) {
    INFO(r.head << r.body);
    auto v = json::parse(r.body);
    REQUIRE(v.is_object());
    return v.as_object();
}

}  // namespace

TEST_CASE("REST end to end: a TELLER run started over HTTP ends, reads back, replays with no calls and verifies",
          "[rest][e2e]") {
    served_teller s;
    auto agents = parsed(s.call("GET", "/v1/agents"));
    REQUIRE(agents.at("agents").as_array().size() == 1);
    CHECK(agents.at("agents").as_array()[0].at("name") == "teller");

    auto started = s.call("POST", "/v1/runs?wait=30", R"({"agent":"teller","input":"What does AC-1 hold?","idempotency_key":"k-1"})");
    auto run = parsed(started);
    REQUIRE(started.status == 200);
    auto id = std::string(run.at("run_id").as_string());
    CHECK(run.at("status") == "succeeded");
    CHECK(run.at("output") == "AC-1 holds 42. I was not permitted to post to it.");
    CHECK(run.at("principal") == "alice");
    CHECK(run.at("policy_denials").as_int64() >= 1);  // the post the model tried was refused
    CHECK(started.head.find("Location: /v1/runs/" + id) != std::string::npos);

    // The same idempotency key returns the same run, not a second one.
    auto again = parsed(s.call("POST", "/v1/runs", R"({"agent":"teller","input":"other","idempotency_key":"k-1"})"));
    CHECK(again.at("run_id").as_string() == id);
    CHECK(again.at("fresh") == false);

    auto listed = parsed(s.call("GET", "/v1/runs?agent=teller"));
    CHECK(listed.at("runs").as_array().size() == 1);

    auto journal = s.call("GET", "/v1/runs/" + id + "/journal");
    REQUIRE(journal.status == 200);
    CHECK(journal.body.find("\"policy_denied\"") != std::string::npos);
    CHECK(journal.body.find("\"run_sealed\"") != std::string::npos);

    auto replay = parsed(s.call("POST", "/v1/runs/" + id + "/replay"));
    CHECK(replay.at("status") == "succeeded");
    CHECK(replay.at("model_calls") == 0);
    CHECK(replay.at("tool_calls") == 0);
    CHECK(replay.at("output") == run.at("output"));

    auto verify = parsed(s.call("GET", "/v1/runs/" + id + "/verify"));
    CHECK(verify.at("verified") == true);

    // A finished run cannot be cancelled.
    CHECK(s.call("POST", "/v1/runs/" + id + "/cancel").status == 409);
}

TEST_CASE("REST end to end: bad run requests are refused with problems naming the field", "[rest][e2e]") {
    served_teller s;
    auto unknown = s.call("POST", "/v1/runs", R"({"agent":"nobody","input":"x"})");
    CHECK(unknown.status == 422);
    CHECK(unknown.body.find(R"("field":"agent")") != std::string::npos);

    auto both = s.call("POST", "/v1/runs", R"({"agent":"teller","capability":"ledger.ask","input":"x"})");
    CHECK(both.status == 422);

    auto missing = s.call("POST", "/v1/runs", R"({"agent":"teller"})");
    CHECK(missing.status == 422);
    CHECK(missing.body.find(R"("field":"input")") != std::string::npos);

    auto junk = s.call("POST", "/v1/runs", R"({"agent":"teller","input":)");
    CHECK(junk.status == 400);

    auto dup = s.call("POST", "/v1/runs", R"({"agent":"teller","input":"a","input":"b"})");
    CHECK(dup.status == 400);

    // By capability: the agent that provides it runs.
    auto by_cap = parsed(s.call("POST", "/v1/runs?wait=30", R"({"capability":"ledger.ask","input":"balance?"})"));
    CHECK(by_cap.at("agent") == "teller");
    CHECK(by_cap.at("status") == "succeeded");
}

TEST_CASE("airlock runs lists the journal's runs with filters, and refuses bad options naming them", "[rest][e2e]") {
    std::filesystem::path journal;
    std::string id;
    temp_dir keep{"airlock-runs-cli"};
    {
        served_teller s;
        auto run = parsed(s.call("POST", "/v1/runs?wait=30", R"({"agent":"teller","input":"balance?"})"));
        id = std::string(run.at("run_id").as_string());
        journal = s.dir.path() / "journal";
        CHECK(s.stop() == 0);
        std::filesystem::copy(journal, keep.path() / "journal");
    }
    auto dir = (keep.path() / "journal").string();
    child_process all({AIRLOCK_BINARY, "runs", "--journal", dir});
    CHECK(all.wait(20s) == 0);
    CHECK(all.stdout_text().find(id) != std::string::npos);
    CHECK(all.stdout_text().find("teller") != std::string::npos);

    child_process failed({AIRLOCK_BINARY, "runs", "--journal", dir, "--status", "failed", "--json"});
    CHECK(failed.wait(20s) == 0);
    CHECK(failed.stdout_text().find(id) == std::string::npos);

    child_process bad({AIRLOCK_BINARY, "runs", "--journal", dir, "--status", "done"});
    CHECK(bad.wait(20s) == 2);
    CHECK(bad.stderr_text().find("--status") != std::string::npos);

    child_process none({AIRLOCK_BINARY, "runs", "--journal", (keep.path() / "nothing").string()});
    CHECK(none.wait(20s) == 1);
    CHECK_FALSE(std::filesystem::exists(keep.path() / "nothing"));
}
