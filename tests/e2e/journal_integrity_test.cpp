// The journal's promise from outside: whatever a client or an API caller sends that airlock accepts
// is journaled unchanged and reads back through every reader (verify, show, export, import, the REST
// journal route, resume after a crash); what airlock does not accept is refused at the door, naming
// the limit, before anything is written; and a restart after kill -9 closes what the dead process
// left open instead of leaving it running forever.
#include "core/canonical_json.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/random_numbers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>
#include <lmdb.h>

#include <sys/stat.h>

#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr char const* token = "integrity-alice-0123456789abcdef";

std::string source(std::string const& rel) { return std::string(AIRLOCK_SOURCE_DIR) + "/" + rel; }

// server-everything over stdio, with echo (read-only) and the long-running operation (granted as
// mutating, so that a call of it cut off by a crash is one nobody may repeat); the TELLER agent
// beside it for REST runs.
struct deployment {
    temp_dir dir{"airlock-journal-integrity"};
    fs::path config = dir.path() / "airlock.yaml";
    fs::path journal = dir.path() / "journal";

    deployment() {
        std::ofstream(dir.path() / "alice.token") << token << "\n";
        ::chmod((dir.path() / "alice.token").c_str(), 0600);
        std::ofstream(dir.path() / "alice.yaml") << R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: alice-desk, version: "1" }
spec:
  tools:
    - ref: tool://everything/echo
      mutates: false
    - ref: tool://everything/trigger.long.running.operation
      mutates: true
  budgets: {}
)";
        auto node = peers::node();
        std::ofstream(config) << "journal: { dir: journal }\n"
                              << "upstreams:\n  - name: everything\n    stdio: { argv: [\"" << node << "\", \""
                              << peers::everything() << "\", stdio] }\n"
                              << "  - name: ledger\n    stdio: { argv: [\"" << node << "\", \""
                              << source("examples/ledger/server.mjs") << "\"] }\n"
                              << "egress:\n  - process: \"" << node << "\"\n  - local\n"
                              << "principals:\n  - name: alice\n    trusted: true\n    token_file: alice.token\n    manifest: alice.yaml\n"
                              << "agents:\n  - { manifest: " << source("examples/teller.yaml")
                              << ", script: " << source("examples/teller.script.yaml") << " }\n";
    }

    std::unique_ptr<child_process> serve() {
        auto p = std::make_unique<child_process>(
            std::vector<std::string>{AIRLOCK_BINARY, "serve", "--config", config.string(), "--listen", "127.0.0.1:0"});
        auto line = p->wait_for_stderr_line("listening on http://", 30s);
        INFO(p->stderr_text());
        REQUIRE(line.has_value());
        std::smatch m;
        REQUIRE(std::regex_search(*line, m, std::regex(R"(127\.0\.0\.1:(\d+))")));
        port = static_cast<std::uint16_t>(std::stoi(m[1]));
        return p;
    }
    std::uint16_t port = 0;

    command_result journal_cli(std::vector<std::string> args) {
        std::vector<std::string> argv{AIRLOCK_BINARY, "journal"};
        argv.insert(argv.end(), args.begin(), args.end());
        argv.push_back("--journal");
        argv.push_back(journal.string());
        return run_command(argv);
    }

    raw_response rest(std::string const& method, std::string const& target, std::string const& body = {}) {
        std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\nAuthorization: Bearer " + token + "\r\n";
        if (method == "POST") r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
        r += "\r\n" + body;
        return raw_http(port, r, 60s);
    }
};

std::string numbers_array(std::vector<double> const& numbers) {
    std::string out = "[";
    for (std::size_t i = 0; i < numbers.size(); ++i) {
        if (i) out += ",";
        out += airlock::core::format_es_number(numbers[i]);
    }
    return out + "]";
}

// How many of `numbers` `got` (an array read back) does not hold to the bit, the first few shown.
std::size_t differences(json::value const& got, std::vector<double> const& numbers) {
    auto const* a = got.if_array();
    if (!a || a->size() != numbers.size()) return numbers.size();
    std::size_t n = 0;
    for (std::size_t i = 0; i < numbers.size(); ++i)
        if (!same_number((*a)[i], numbers[i]) && ++n <= 5)
            UNSCOPED_INFO("read back " << json::serialize((*a)[i]) << " for " << airlock::core::format_es_number(numbers[i]));
    return n;
}

// The records of an export (JSON lines), read exactly.
std::vector<json::object> records_of(std::string const& lines) {
    std::vector<json::object> out;
    std::istringstream in(lines);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        auto v = airlock::core::parse_ijson(line, airlock::core::max_json_depth + 16);
        INFO(line.substr(0, 200));
        REQUIRE(v.has_value());
        out.push_back(v->as_object());
    }
    return out;
}

std::vector<std::string> run_ids(deployment& d) {
    auto listed = run_command({AIRLOCK_BINARY, "runs", "--json", "--kind", "all", "--journal", d.journal.string()});
    INFO(listed.err);
    REQUIRE(listed.exit_code == 0);
    std::vector<std::string> ids;
    for (auto const& r : records_of(listed.out)) ids.push_back(std::string(r.at("run_id").as_string()));
    return ids;
}

json::object run_summary(deployment& d, std::string const& id) {
    auto listed = run_command({AIRLOCK_BINARY, "runs", "--json", "--kind", "all", "--journal", d.journal.string()});
    for (auto const& r : records_of(listed.out))
        if (r.at("run_id").as_string() == id) return r;
    FAIL("no run " << id << " in " << listed.out);
    return {};
}

}  // namespace

TEST_CASE("random doubles and deep arguments of a tools/call are journaled unchanged, and every reader reads them",
          "[journal][e2e]") {
    deployment d;
    auto numbers = number_edges();
    auto random = random_doubles(2000, 18);
    numbers.insert(numbers.end(), random.begin(), random.end());
    // The most a message may nest is max_json_depth; the arguments sit 3 levels into it.
    auto deep = json::serialize(nested_objects(airlock::core::max_json_depth - 3));
    std::string run;
    {
        auto airlock = d.serve();
        auto r = modern_post(d.port, token, "tools/call", "everything__echo",
                             R"("name":"everything__echo","arguments":{"message":"hi","numbers":)" + numbers_array(numbers) +
                                 R"(,"deep":)" + deep + "},");
        INFO(r.head << r.body.substr(0, 500));
        REQUIRE(r.status == 200);
        CHECK_THAT(r.body, Catch::Contains("Echo: hi"));
        airlock->signal(SIGTERM);
        CHECK(airlock->wait(20s) == 0);
    }
    auto verified = d.journal_cli({"verify", "--all"});
    INFO(verified.out << verified.err);
    CHECK(verified.exit_code == 0);
    CHECK_THAT(verified.out, !Catch::Contains("BROKEN"));

    auto ids = run_ids(d);
    REQUIRE(ids.size() == 1);
    auto exported = d.journal_cli({"export", ids[0]});
    INFO(exported.err);
    REQUIRE(exported.exit_code == 0);
    bool found = false;
    for (auto const& rec : records_of(exported.out)) {
        if (rec.at("kind") != "effect_started") continue;
        auto const& args = rec.at("body").at("arguments").as_object();
        CHECK(differences(args.at("numbers"), numbers) == 0);
        CHECK(args.at("deep") == nested_objects(airlock::core::max_json_depth - 3));
        found = true;
    }
    CHECK(found);
    auto shown = d.journal_cli({"show", ids[0]});
    INFO(shown.err);
    CHECK(shown.exit_code == 0);

    // What was exported imports into another journal and verifies there.
    auto file = d.dir.path() / "run.jsonl";
    std::ofstream(file) << exported.out;
    temp_dir other{"airlock-journal-integrity-import"};
    auto imported = run_command({AIRLOCK_BINARY, "journal", "import", file.string(), "--journal", (other.path() / "j").string()});
    INFO(imported.out << imported.err);
    CHECK(imported.exit_code == 0);
    auto again = run_command({AIRLOCK_BINARY, "journal", "verify", "--all", "--journal", (other.path() / "j").string()});
    CHECK(again.exit_code == 0);
}

TEST_CASE("a REST run whose input holds random doubles and deep nesting ends, reads back exactly and verifies",
          "[journal][e2e][rest]") {
    deployment d;
    auto airlock = d.serve();
    auto numbers = random_doubles(1000, 7);
    auto edges = number_edges();
    numbers.insert(numbers.end(), edges.begin(), edges.end());
    // The input sits 2 levels into the body.
    auto deep = json::serialize(nested_objects(airlock::core::max_json_depth - 2));
    auto started = d.rest("POST", "/v1/runs?wait=30",
                          R"({"agent":"teller","input":{"numbers":)" + numbers_array(numbers) + R"(,"deep":)" + deep + "}}");
    INFO(started.head << started.body.substr(0, 500));
    REQUIRE(started.status == 200);
    auto run = airlock::core::parse_ijson(started.body, 200).value().as_object();
    CHECK(run.at("status") == "succeeded");
    auto id = std::string(run.at("run_id").as_string());

    auto read = d.rest("GET", "/v1/runs/" + id);
    REQUIRE(read.status == 200);
    auto input = airlock::core::parse_ijson(read.body, 200).value().at("input").as_object();
    CHECK(differences(input.at("numbers"), numbers) == 0);
    CHECK(input.at("deep") == nested_objects(airlock::core::max_json_depth - 2));

    auto journal = d.rest("GET", "/v1/runs/" + id + "/journal");
    REQUIRE(journal.status == 200);
    auto records = records_of(journal.body);
    REQUIRE_FALSE(records.empty());
    CHECK(differences(records.front().at("body").at("input").at("numbers"), numbers) == 0);

    auto verify = d.rest("GET", "/v1/runs/" + id + "/verify");
    CHECK(json::parse(verify.body).at("verified") == true);
    auto replay = d.rest("POST", "/v1/runs/" + id + "/replay");
    INFO(replay.body);
    CHECK(json::parse(replay.body).at("status") == "succeeded");
}

TEST_CASE("input nested deeper than airlock reads is refused at the door, naming the limit, and nothing is journaled",
          "[journal][e2e][rest]") {
    deployment d;
    auto airlock = d.serve();
    auto limit = std::to_string(airlock::core::max_json_depth);
    // One level past the limit, at /mcp (the arguments sit 3 levels into the message) ...
    auto too_deep = json::serialize(nested_objects(airlock::core::max_json_depth - 2));
    auto call = modern_post(d.port, token, "tools/call", "everything__echo",
                            R"("name":"everything__echo","arguments":{"message":"hi","deep":)" + too_deep + "},");
    INFO(call.head << call.body);
    auto reply = json::parse(call.body);
    CHECK(reply.at("error").at("code") == -32602);
    CHECK_THAT(std::string(reply.at("error").at("message").as_string()), Catch::Contains(limit + " levels"));
    CHECK(reply.at("id") != nullptr);
    // ... and over REST (the input is level 2 of the body).
    auto rest_deep = json::serialize(nested_objects(airlock::core::max_json_depth));
    auto started = d.rest("POST", "/v1/runs", R"({"agent":"teller","input":)" + rest_deep + "}");
    INFO(started.head << started.body);
    CHECK(started.status == 422);
    CHECK_THAT(started.body, Catch::Contains(limit + " levels"));
    airlock->signal(SIGTERM);
    CHECK(airlock->wait(20s) == 0);
    CHECK(run_ids(d).empty());
}

TEST_CASE("after kill -9 a gateway session's run is sealed at restart with its cut-off call flagged in doubt",
          "[journal][e2e][crash]") {
    deployment d;
    std::string session_run;
    {
        auto airlock = d.serve();
        // A long call in flight when the process dies: its start is journaled, its outcome never is.
        std::thread caller([&] {
            modern_post(d.port, token, "tools/call", "everything__trigger-long-running-operation",
                        R"("name":"everything__trigger-long-running-operation","arguments":{"duration":30,"steps":30},)");
        });
        // A finished call beside it.
        auto done = modern_post(d.port, token, "tools/call", "everything__echo",
                                R"("name":"everything__echo","arguments":{"message":"done"},)");
        CHECK(done.status == 200);
        std::this_thread::sleep_for(1500ms);
        airlock->signal(SIGKILL);
        airlock->wait(10s);
        caller.join();
    }
    auto before = run_ids(d);
    REQUIRE(before.size() == 1);
    CHECK(run_summary(d, before[0]).at("status") == "running");

    {
        auto airlock = d.serve();
        // The restart seals the dead process's run before it serves anything else, and keeps serving.
        auto sealed = airlock->wait_for_stderr_line("sealed 1 runs an earlier airlock left open", 20s);
        INFO(airlock->stderr_text());
        CHECK(sealed.has_value());
        auto r = modern_post(d.port, token, "tools/call", "everything__echo",
                             R"("name":"everything__echo","arguments":{"message":"after"},)");
        CHECK(r.status == 200);
        airlock->signal(SIGTERM);
        CHECK(airlock->wait(20s) == 0);
    }
    auto s = run_summary(d, before[0]);
    CHECK(s.at("status") == "quarantined");
    auto exported = d.journal_cli({"export", before[0]});
    std::size_t in_doubt = 0;
    for (auto const& rec : records_of(exported.out)) {
        if (rec.at("kind") == "note" && rec.at("body").at("event") == "effect_in_doubt") {
            ++in_doubt;
            CHECK(rec.at("body").at("tool") == "tool://everything/trigger.long.running.operation");
            CHECK(rec.at("body").at("mutates") == true);
        }
        if (rec.at("kind") == "run_sealed")
            CHECK_THAT(std::string(rec.at("body").at("reason").as_string()), Catch::Contains("in doubt"));
    }
    CHECK(in_doubt == 1);
    auto verified = d.journal_cli({"verify", "--all"});
    INFO(verified.out);
    CHECK(verified.exit_code == 0);
}

TEST_CASE("a restart quarantines a run whose records cannot be read, names it, and goes on serving",
          "[journal][e2e][crash]") {
    deployment d;
    std::string id;
    {
        auto airlock = d.serve();
        auto r = modern_post(d.port, token, "tools/call", "everything__echo",
                             R"("name":"everything__echo","arguments":{"message":"before"},)");
        REQUIRE(r.status == 200);
        airlock->signal(SIGKILL);
        airlock->wait(10s);
    }
    auto ids = run_ids(d);
    REQUIRE(ids.size() == 1);
    id = ids[0];
    // The run's first record is damaged on disk (a torn write, a bad sector, a hand edit): it no longer
    // parses. Written with LMDB itself, as another program on the host could.
    {
        MDB_env* env = nullptr;
        REQUIRE(mdb_env_create(&env) == 0);
        mdb_env_set_maxdbs(env, 8);
        mdb_env_set_mapsize(env, std::size_t{1} << 30);
        REQUIRE(mdb_env_open(env, d.journal.c_str(), 0, 0640) == 0);
        MDB_txn* txn = nullptr;
        REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
        MDB_dbi records;
        REQUIRE(mdb_dbi_open(txn, "records", 0, &records) == 0);
        std::string key = id + std::string(1, '\0') + std::string(7, '\0') + std::string(1, '\1');
        std::string garbage = R"({"run_id":")" + id + R"(","seq":1,"kind":"run_adm)";
        MDB_val k{key.size(), key.data()}, v{garbage.size(), garbage.data()};
        REQUIRE(mdb_put(txn, records, &k, &v, 0) == 0);
        REQUIRE(mdb_txn_commit(txn) == 0);
        mdb_env_close(env);
    }
    {
        auto airlock = d.serve();
        auto line = airlock->wait_for_stderr_line("sealed 1 runs an earlier airlock left open", 20s);
        INFO(airlock->stderr_text());
        CHECK(line.has_value());
        CHECK_THAT(airlock->stderr_text(), Catch::Contains(id) && Catch::Contains("cannot be read"));
        // Still serving: a new run ends as usual.
        auto again = d.rest("POST", "/v1/runs?wait=30", R"({"agent":"teller","input":"What does AC-1 hold?"})");
        INFO(again.body);
        CHECK(again.status == 200);
        airlock->signal(SIGTERM);
        CHECK(airlock->wait(20s) == 0);
    }
    CHECK(run_summary(d, id).at("status") == "quarantined");
    auto verified = d.journal_cli({"verify", id});
    INFO(verified.out << verified.err);
    CHECK(verified.exit_code != 0);
    CHECK_THAT(verified.out + verified.err, Catch::Contains("seq 1"));
}
