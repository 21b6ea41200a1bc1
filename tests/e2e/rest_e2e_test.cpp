// The REST API as a user meets it: `airlock serve` (the real binary) with the TELLER example agent,
// the example ledger MCP server over stdio and the scripted model; runs started, waited for,
// listed, read back, replayed and verified over HTTP; its OpenAPI document read without a token
// and held valid by a real OpenAPI validator.
#include "tests/support/child_process.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/listed_runs.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/teller_example.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr char const* token = "e2e-rest-token-0123456789abcdef";  // alice's
constexpr char const* bob_token = "e2e-rest-token-bob-0123456789abcdef";
constexpr char const* carol_token = "e2e-rest-token-carol-0123456789abcdef";  // carol is an operator

std::string source(std::string const& rel) { return std::string(AIRLOCK_SOURCE_DIR) + "/" + rel; }

struct served_teller {
    temp_dir dir{"airlock-rest-e2e"};
    std::unique_ptr<child_process> airlock;
    std::uint16_t port = 0;

    explicit served_teller(std::string const& script = source("examples/teller.script.yaml"),
                           std::string const& manifest = source("examples/teller.yaml")) {
        auto node = peers::node();
        auto file = dir.path() / "airlock.yaml";
        std::ofstream(file) << "journal: { dir: journal }\n"
                            << "upstreams:\n  - name: ledger\n    stdio: { argv: [" << node << ", "
                            << source("examples/ledger/server.mjs") << "] }\n"
                            << "egress:\n  - process: " << node << "\n  - local\n"
                            << "principals:\n  - { name: alice, token_env: E2E_REST_TOKEN, manifest: "
                            << source("examples/desk.yaml") << " }\n"
                            << "  - { name: bob, token_env: E2E_BOB_TOKEN, manifest: " << source("examples/desk.yaml")
                            << " }\n"
                            << "  - { name: carol, token_env: E2E_CAROL_TOKEN, operator: true, manifest: "
                            << source("examples/desk.yaml") << " }\n"
                            << "agents:\n  - { manifest: " << manifest << ", script: " << script << " }\n";
        airlock = std::make_unique<child_process>(
            std::vector<std::string>{AIRLOCK_BINARY, "serve", "--config", file.string(), "--listen", "127.0.0.1:0"},
            std::vector<std::string>{std::string("E2E_REST_TOKEN=") + token, std::string("E2E_BOB_TOKEN=") + bob_token,
                                     std::string("E2E_CAROL_TOKEN=") + carol_token});
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
        return call_as(token, method, target, body);
    }
    raw_response call_as(std::string const& bearer, std::string const& method, std::string const& target,
                         std::string const& body = {}) {
        std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\nAuthorization: Bearer " + bearer + "\r\n";
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

// tests/fixtures/openapi/validate.mjs on a document written to `file`: @apidevtools/swagger-parser.
command_result validate_openapi(fs::path const& file) {
    return run_command({peers::node(), source("tests/fixtures/openapi/validate.mjs"), file.string()});
}

}  // namespace

TEST_CASE("REST end to end: the OpenAPI document is served without a token, and a real validator accepts it",
          "[rest][e2e]") {
    served_teller s;
    auto const here = "127.0.0.1:" + std::to_string(s.port);
    auto served = raw_http(s.port, "GET /v1/openapi.json HTTP/1.1\r\nHost: " + here + "\r\nConnection: close\r\n\r\n");
    INFO(served.head << served.body);
    REQUIRE(served.status == 200);
    CHECK_THAT(served.head, Catch::Contains("Content-Type: application/json"));
    auto doc = parsed(served);

    auto file = s.dir.path() / "openapi.json";
    std::ofstream(file) << served.body;
    auto valid = validate_openapi(file);
    INFO(valid.out << valid.err);
    REQUIRE(valid.exit_code == 0);
    auto verdict = json::parse(valid.out).as_object();
    CHECK(verdict.at("valid") == true);
    CHECK(verdict.at("openapi") == "3.1.0");
    std::int64_t operations = 0;
    for (auto const& [path, item] : doc.at("paths").as_object())
        for (auto const& [key, op] : item.as_object()) operations += key == "parameters" ? 0 : 1;
    CHECK(operations >= 12);
    CHECK(verdict.at("operations") == operations);  // the validator read the document whole

    // Its server, "/", resolved against where the document came from, is where the API answers:
    // each route without a path parameter, with a token.
    REQUIRE(doc.at("servers").as_array().size() == 1);
    CHECK(doc.at("servers").as_array()[0].at("url") == "/");
    for (auto const& [path, item] : doc.at("paths").as_object()) {
        if (path.find('{') != std::string::npos || !item.as_object().contains("get")) continue;
        INFO(path);
        // A route the document says is for operators refuses this (non-operator) caller by name.
        auto const& summary = item.at("get").at("summary").as_string();
        bool const operators_only = std::string_view(summary).find("(operators only)") != std::string_view::npos;
        CHECK(s.call("GET", std::string(path)).status == (operators_only ? 403 : 200));
        // And only the document itself without one.
        auto bare = raw_http(s.port, "GET " + std::string(path) + " HTTP/1.1\r\nHost: " + here + "\r\nConnection: close\r\n\r\n");
        CHECK(bare.status == (path == "/v1/openapi.json" ? 200 : 401));
    }

    // Host is judged as at every route: a name rebound to 127.0.0.1 is refused.
    auto rebound = raw_http(s.port, "GET /v1/openapi.json HTTP/1.1\r\nHost: rebind.example\r\nConnection: close\r\n\r\n");
    CHECK(rebound.status == 403);
    CHECK(parsed(rebound).at("title") == "forbidden_host");

    // The validator is not one that passes anything: a parameter without `in` is refused, by name.
    auto& broken = doc.at("paths").at("/v1/runs").at("get").at("parameters").as_array()[0].as_object();
    broken.erase("in");
    std::ofstream(file, std::ios::trunc) << json::serialize(doc);
    auto invalid = validate_openapi(file);
    INFO(invalid.out << invalid.err);
    CHECK(invalid.exit_code == 1);
    CHECK_THAT(invalid.out, Catch::Contains("\"valid\":false") && Catch::Contains("'in'"));
}

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

namespace {

std::set<std::string> listed_ids(raw_response const& r) {
    INFO(r.head << r.body);
    REQUIRE(r.status == 200);
    return listed_run_ids(r.body);
}

}  // namespace

TEST_CASE("REST end to end: each principal sees its own runs only, an operator sees them all, and idempotency "
          "keys are each principal's own",
          "[rest][e2e]") {
    served_teller s;
    auto alices = parsed(s.call("POST", "/v1/runs?wait=30", R"({"agent":"teller","input":"AC-1?","idempotency_key":"k-1"})"));
    auto alice_id = std::string(alices.at("run_id").as_string());
    CHECK(alices.at("principal") == "alice");
    // bob's k-1 is not alice's: a run of his own, not a view of hers.
    auto bobs = parsed(s.call_as(bob_token, "POST", "/v1/runs?wait=30",
                                 R"({"agent":"teller","input":"AC-2?","idempotency_key":"k-1"})"));
    auto bob_id = std::string(bobs.at("run_id").as_string());
    CHECK(bob_id != alice_id);
    CHECK(bobs.at("fresh") == true);
    CHECK(bobs.at("input") == "AC-2?");

    CHECK(listed_ids(s.call("GET", "/v1/runs")) == std::set<std::string>{alice_id});
    CHECK(listed_ids(s.call_as(bob_token, "GET", "/v1/runs")) == std::set<std::string>{bob_id});
    for (auto const* suffix : {"", "/journal", "/verify", "/approvals"}) {
        INFO(suffix);
        auto hidden = s.call("GET", "/v1/runs/" + bob_id + suffix);
        CHECK(hidden.status == 404);
        CHECK(hidden.body.find("AC-2") == std::string::npos);
    }
    CHECK(s.call("POST", "/v1/runs/" + bob_id + "/replay").status == 404);
    CHECK(s.call("POST", "/v1/runs/" + bob_id + "/cancel").status == 404);

    CHECK(listed_ids(s.call_as(carol_token, "GET", "/v1/runs")) == std::set<std::string>{alice_id, bob_id});
    CHECK(listed_ids(s.call_as(carol_token, "GET", "/v1/runs?principal=bob")) == std::set<std::string>{bob_id});
    CHECK(s.call_as(carol_token, "GET", "/v1/runs/" + bob_id + "/journal").status == 200);
    CHECK(s.call("GET", "/v1/runs?principal=bob").status == 403);
}

namespace {

// The TELLER with its ledger read held for a reviewer, served, and one run of it waiting there.
struct awaiting_approval {
    temp_dir edits{"airlock-rest-e2e-manifest"};
    served_teller s;
    std::string id;      // the waiting run
    std::string target;  // POST here to decide its approval

    awaiting_approval()
        : s(source("examples/teller.script.yaml"),
            teller::edited_manifest(edits.path(), "teller-reviewed.yaml",
                                    "      description: Read a ledger account's balance.\n",
                                    "      requires_approval: true\n"
                                    "      description: Read a ledger account's balance.\n")
                .string()) {
        auto waiting = parsed(s.call("POST", "/v1/runs?wait=30", R"({"agent":"teller","input":"AC-1?"})"));
        REQUIRE(waiting.at("status") == "awaiting_approval");
        REQUIRE(waiting.at("pending_approvals") == 1);
        id = std::string(waiting.at("run_id").as_string());
        target = "/v1/runs/" + id + "/approvals/" + id + "%2F000002%2Ftool";
    }
};

}  // namespace

TEST_CASE("REST end to end: a run's own principal cannot approve its call, an operator can",
          "[rest][e2e]") {
    awaiting_approval a;
    auto& s = a.s;
    auto own = s.call("POST", a.target, R"({"decision":"approve"})");
    CHECK(own.status == 403);
    CHECK(own.body.find("only operators may decide approvals") != std::string::npos);
    CHECK(parsed(s.call("GET", "/v1/runs/" + a.id)).at("status") == "awaiting_approval");

    auto decided = s.call_as(carol_token, "POST", a.target, R"({"decision":"approve","reason":"read only"})");
    INFO(decided.body);
    REQUIRE(decided.status == 200);
    auto approvals = parsed(s.call("GET", "/v1/runs/" + a.id + "/approvals"));
    REQUIRE(approvals.at("approvals").as_array().size() == 1);
    CHECK(approvals.at("approvals").as_array()[0].at("status") == "approved");
    CHECK(approvals.at("approvals").as_array()[0].at("reviewer") == "carol");
}

TEST_CASE("REST end to end: a run cancelled while awaiting approval has no pending approval left: it reads "
          "withdrawn and cannot be decided",
          "[rest][e2e]") {
    awaiting_approval a;
    auto& s = a.s;
    REQUIRE(s.call("POST", "/v1/runs/" + a.id + "/cancel").status == 202);
    auto run = parsed(s.call("GET", "/v1/runs/" + a.id));
    CHECK(run.at("status") == "cancelled");
    CHECK(run.at("sealed") == true);
    CHECK(run.at("pending_approvals") == 0);

    auto pending = parsed(s.call_as(carol_token, "GET", "/v1/runs/" + a.id + "/approvals?status=pending"));
    CHECK(pending.at("approvals").as_array().empty());
    auto withdrawn = parsed(s.call_as(carol_token, "GET", "/v1/runs/" + a.id + "/approvals?status=withdrawn"));
    REQUIRE(withdrawn.at("approvals").as_array().size() == 1);
    CHECK(withdrawn.at("approvals").as_array()[0].at("effect_key").as_string() == a.id + "/000002/tool");

    CHECK(s.call_as(carol_token, "POST", a.target, R"({"decision":"approve"})").status == 409);
}
