// journal-v1 (tests/fixtures/journal-v1/, its README.md says what is in it and which airlock wrote
// it): a journal written by an earlier airlock, read by this one. It verifies, its finished runs
// replay strictly, `airlock serve` resumes the run it left awaiting approval, and its gateway
// session reads back with its calls. A change of the record format, the hash chain or the replay
// rules fails here. Each test works on a copy in a fresh directory: the fixture is never written.
#include "tests/support/child_process.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>
#include <lmdb.h>

#include <sys/stat.h>

#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

// The principals' tokens in airlock.yaml.in (test values, as make_fixture.sh served them).
constexpr char const* alice_token = "fixture-alice-0123456789abcdef";
constexpr char const* carol_token = "fixture-carol-0123456789abcdef";  // an operator

// The fixture's runs as README.md states them: id, status, the records `journal verify` counts and
// those `airlock replay` replays (every one after run_admitted).
struct fixture_run {
    char const* id;
    char const* status;
    int records;
};
constexpr fixture_run session_run{"01M8T3TFWT58Q2QFW6N7E8TBTF", "succeeded", 7};
constexpr fixture_run finished_run{"01M8T3TMEBTCFVAXKVD7P71CZB", "succeeded", 12};
constexpr fixture_run parked_run{"01M8T3TMJS2W5KSA5Q5WVVMG2N", "awaiting_approval", 4};
constexpr fixture_run rejected_run{"01M8T3TMRA6ADTSNKS2BFV502A", "succeeded", 12};
constexpr fixture_run cancelled_run{"01M8T3TN9NTKWE6Y6KNH3MPW7Z", "cancelled", 5};
constexpr fixture_run all_runs[] = {session_run, finished_run, parked_run, rejected_run, cancelled_run};

constexpr char const* teller_answer = "AC-1 holds 42. I was not permitted to post to it.";

std::string fixture(std::string const& rel) {
    return std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/journal-v1/" + rel;
}

std::string replaced(std::string text, std::string const& from, std::string const& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

// The fixture copied into a fresh directory: its journal, manifests, script and key, and its
// configuration with this machine's paths.
struct fixture_copy {
    temp_dir dir{"airlock-journal-v1"};
    fs::path journal = dir.path() / "journal";
    fs::path config = dir.path() / "airlock.yaml";

    fixture_copy() {
        fs::create_directories(journal);
        fs::copy_file(fixture("journal/data.mdb"), journal / "data.mdb");
        for (auto const* f : {"alice.yaml", "teller.yaml", "teller.script.yaml", "reviewed-teller.yaml"})
            fs::copy_file(fixture(f), dir.path() / f);
        fs::create_directories(dir.path() / "keys");
        for (auto const* f : {"provenance.key", "provenance.pub"})
            fs::copy_file(fixture(std::string("keys/") + f), dir.path() / "keys" / f);
        ::chmod((dir.path() / "keys" / "provenance.key").c_str(), 0600);
        auto yaml = file_text(fixture("airlock.yaml.in"));
        yaml = replaced(yaml, "@NODE@", peers::node());
        yaml = replaced(yaml, "@EVERYTHING@", peers::everything());
        yaml = replaced(yaml, "@LEDGER@", std::string(AIRLOCK_SOURCE_DIR) + "/examples/ledger/server.mjs");
        std::ofstream(config) << yaml;
    }

    static std::vector<std::string> tokens() {
        return {std::string("FIXTURE_ALICE_TOKEN=") + alice_token, std::string("FIXTURE_CAROL_TOKEN=") + carol_token};
    }

    // airlock with `args`, run to its end with the principals' tokens in its environment.
    command_result airlock(std::vector<std::string> args) const {
        args.insert(args.begin(), AIRLOCK_BINARY);
        child_process p(args, tokens());
        int code = p.wait(60s);
        return {code, p.stdout_text(), p.stderr_text()};
    }
    command_result journal_cli(std::vector<std::string> args) const {
        args.insert(args.begin(), "journal");
        args.push_back("--journal");
        args.push_back(journal.string());
        return airlock(args);
    }
};

// `airlock serve` on a fixture copy, and REST requests to it.
struct served_fixture {
    fixture_copy& copy;
    std::unique_ptr<child_process> process;
    std::uint16_t port = 0;

    explicit served_fixture(fixture_copy& c) : copy(c) {
        process = std::make_unique<child_process>(
            std::vector<std::string>{AIRLOCK_BINARY, "serve", "--config", copy.config.string(), "--listen", "127.0.0.1:0"},
            fixture_copy::tokens());
        INFO(process->stderr_text());
        port = wait_listening(*process);
    }
    ~served_fixture() { stop(); }
    int stop() {
        if (!process) return exit_code;
        process->signal(SIGTERM);
        exit_code = process->wait(20s);
        process.reset();
        return exit_code;
    }
    int exit_code = -1;

    raw_response call(std::string const& bearer, std::string const& method, std::string const& target,
                      std::string const& body = {}) {
        std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\nAuthorization: Bearer " + bearer + "\r\n";
        if (method == "POST") r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
        r += "\r\n" + body;
        return raw_http(port, r, 60s);
    }
    json::object get(std::string const& target) {
        auto r = call(carol_token, "GET", target);
        INFO(r.head << r.body);
        REQUIRE(r.status == 200);
        return json::parse(r.body).as_object();
    }
};

// The records of an export (JSON lines).
std::vector<json::object> records_of(std::string const& lines) {
    std::vector<json::object> out;
    std::istringstream in(lines);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty()) out.push_back(json::parse(line).as_object());
    return out;
}

std::string records_text(int n) { return "ok (" + std::to_string(n) + " records)"; }

}  // namespace

TEST_CASE("the journal-v1 fixture verifies, each run with the record count its README states", "[journal][fixture][e2e]") {
    fixture_copy copy;
    auto verified = copy.journal_cli({"verify", "--all"});
    INFO(verified.out << verified.err);
    CHECK(verified.exit_code == 0);
    for (auto const& run : all_runs) CHECK_THAT(verified.out, Catch::Contains(std::string(run.id) + ": " + records_text(run.records)));
    CHECK_THAT(verified.out, Catch::Contains("5 runs verified"));
    CHECK_THAT(verified.out, !Catch::Contains("BROKEN"));
}

TEST_CASE("every finished agent run of the journal-v1 fixture replays strictly from the journal alone",
          "[journal][fixture][e2e]") {
    fixture_copy copy;
    for (auto const& run : {finished_run, rejected_run, cancelled_run}) {
        auto replay = copy.airlock({"replay", "--config", copy.config.string(), run.id});
        INFO(run.id << "\n" << replay.out << replay.err);
        CHECK(replay.exit_code == 0);
        CHECK_THAT(replay.out, Catch::Contains("replayed " + std::to_string(run.records - 1) +
                                               " records from the journal alone (0 model calls, 0 tool calls)"));
        CHECK_THAT(replay.out, Catch::Contains(std::string("status: ") + run.status));
    }
    auto finished = copy.airlock({"replay", "--config", copy.config.string(), finished_run.id});
    CHECK_THAT(finished.out, Catch::Contains(std::string("output: \"") + teller_answer + "\""));
}

TEST_CASE("airlock serve on the journal-v1 fixture lists its runs, and the run it left awaiting approval finishes once "
          "an operator approves it",
          "[journal][fixture][e2e][rest]") {
    fixture_copy copy;
    {
        served_fixture s(copy);
        // Agent runs by default; the gateway session on request. The index the earlier airlock wrote
        // had no kinds (and no owner for the session): this one fills them in from each run's admission.
        auto statuses_of = [&](std::string const& query) {
            std::map<std::string, std::string> statuses;
            auto const listed = s.get("/v1/runs" + query);  // kept: the loop reads into it
            for (auto const& r : listed.at("runs").as_array())
                statuses[std::string(r.at("run_id").as_string())] =
                    std::string(r.at("kind").as_string()) + " " + std::string(r.at("status").as_string());
            return statuses;
        };
        std::map<std::string, std::string> agents, every;
        for (auto const& run : all_runs) {
            bool const session = std::string(run.id) == session_run.id;
            every[run.id] = std::string(session ? "session " : "agent ") + run.status;
            if (!session) agents[run.id] = every[run.id];
        }
        CHECK(statuses_of("") == agents);
        CHECK(statuses_of("?kind=all") == every);
        auto sessions = s.get("/v1/runs?kind=session").at("runs").as_array();
        REQUIRE(sessions.size() == 1);
        CHECK(sessions.at(0).at("run_id") == session_run.id);
        CHECK(sessions.at(0).at("principal") == "alice");
        auto bogus = s.call(carol_token, "GET", "/v1/runs?kind=sessions");
        CHECK(bogus.status == 400);
        CHECK_THAT(bogus.body, Catch::Contains("kind 'sessions' is not a run kind") && Catch::Contains("agent, session, airlock, all"));
        auto replayed = s.call(carol_token, "POST", "/v1/runs/" + std::string(session_run.id) + "/replay", "{}");
        CHECK(replayed.status == 409);
        CHECK_THAT(replayed.body, Catch::Contains("not_an_agent_run") && Catch::Contains("a gateway session has nothing to replay"));

        auto parked = std::string(parked_run.id);
        auto approvals = s.get("/v1/runs/" + parked + "/approvals?status=pending");
        REQUIRE(approvals.at("approvals").as_array().size() == 1);
        auto decided = s.call(carol_token, "POST", "/v1/runs/" + parked + "/approvals/" + parked + "%2F000002%2Ftool",
                              R"({"decision":"approve","reason":"journal-v1 resumed"})");
        INFO(decided.head << decided.body);
        REQUIRE(decided.status == 200);
        json::object run;
        for (int i = 0; i < 200; ++i) {
            run = s.get("/v1/runs/" + parked);
            if (run.at("status") != "running" && run.at("status") != "awaiting_approval") break;
            std::this_thread::sleep_for(100ms);
        }
        INFO(json::serialize(run));
        CHECK(run.at("status") == "succeeded");
        CHECK(run.at("output") == teller_answer);
        CHECK(s.stop() == 0);
    }
    auto verified = copy.journal_cli({"verify", "--all"});
    INFO(verified.out << verified.err);
    CHECK(verified.exit_code == 0);
    CHECK_THAT(verified.out, Catch::Contains("5 runs verified"));
    auto replay = copy.airlock({"replay", "--config", copy.config.string(), parked_run.id});
    INFO(replay.out << replay.err);
    CHECK(replay.exit_code == 0);
    CHECK_THAT(replay.out, Catch::Contains("(0 model calls, 0 tool calls)"));
}

TEST_CASE("the gateway session of the journal-v1 fixture reads back with its calls, their doubles and nesting unchanged",
          "[journal][fixture][e2e]") {
    fixture_copy copy;
    auto listed = copy.airlock({"runs", "--json", "--kind", "session", "--journal", copy.journal.string()});
    INFO(listed.out << listed.err);
    REQUIRE(listed.exit_code == 0);
    auto sessions = records_of(listed.out);
    REQUIRE(sessions.size() == 1);
    CHECK(sessions.at(0).at("run_id") == session_run.id);
    CHECK(sessions.at(0).at("status") == session_run.status);
    CHECK(sessions.at(0).at("kind") == "session");
    CHECK(sessions.at(0).at("principal") == "alice");
    // Listed among agent runs it is not; replayed it cannot be, and airlock says why.
    auto agents = copy.airlock({"runs", "--json", "--journal", copy.journal.string()});
    CHECK(agents.exit_code == 0);
    CHECK_THAT(agents.out, !Catch::Contains(session_run.id));
    auto replay = copy.airlock({"replay", "--config", copy.config.string(), session_run.id});
    INFO(replay.out << replay.err);
    CHECK(replay.exit_code != 0);
    CHECK_THAT(replay.err, Catch::Contains("not_an_agent_run") && Catch::Contains("a gateway session has nothing to replay"));

    auto exported = copy.journal_cli({"export", session_run.id});
    INFO(exported.err);
    REQUIRE(exported.exit_code == 0);
    // The values exactly as the client sent them, written the RFC 8785 way.
    CHECK_THAT(exported.out, Catch::Contains(R"("numbers":[0.1,0.9424502837770503,1e+21,5e-324,-1.5,1.7976931348623157e+308,123456789.125])"));
    CHECK_THAT(exported.out, Catch::Contains(R"("nested":{"a":{"b":[1,{"c":[2.5,null,true,"x",{"d":{}}]}]}})"));
    std::vector<std::string> tools, denied;
    for (auto const& rec : records_of(exported.out)) {
        if (rec.at("kind") == "effect_started") tools.push_back(std::string(rec.at("body").at("tool").as_string()));
        if (rec.at("kind") == "policy_denied") denied.push_back(std::string(rec.at("body").at("tool").as_string()));
    }
    CHECK(tools == std::vector<std::string>{"tool://everything/echo", "tool://everything/get.sum"});
    CHECK(denied == std::vector<std::string>{"everything__get-env"});

    auto shown = copy.journal_cli({"show", session_run.id});
    INFO(shown.err);
    CHECK(shown.exit_code == 0);
    CHECK_THAT(shown.out, Catch::Contains("effect_started") && Catch::Contains("policy_denied"));
}

TEST_CASE("every run of the journal-v1 fixture exports byte for byte as the airlock that wrote it exported it",
          "[journal][fixture][e2e]") {
    fixture_copy copy;
    std::string exported;
    for (auto const& run : all_runs) {
        auto one = copy.journal_cli({"export", run.id});
        INFO(run.id << ": " << one.err);
        CHECK(one.exit_code == 0);
        exported += one.out;
    }
    CHECK(exported == file_text(fixture("journal.jsonl")));
}

TEST_CASE("a copy of the journal-v1 fixture with one byte of a record changed does not verify, naming that record",
          "[journal][fixture][e2e]") {
    fixture_copy copy;
    // seq 1 of the finished run, its input's "AC-1" made "AC-2": still a record that parses, no
    // longer the one that was hashed. Written with LMDB itself, as another program on the host could.
    {
        MDB_env* env = nullptr;
        REQUIRE(mdb_env_create(&env) == 0);
        mdb_env_set_maxdbs(env, 8);
        mdb_env_set_mapsize(env, std::size_t{1} << 30);
        REQUIRE(mdb_env_open(env, copy.journal.c_str(), 0, 0640) == 0);
        MDB_txn* txn = nullptr;
        REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
        MDB_dbi records;
        REQUIRE(mdb_dbi_open(txn, "records", 0, &records) == 0);
        std::string key = finished_run.id + std::string(1, '\0') + std::string(7, '\0') + std::string(1, '\1');
        MDB_val k{key.size(), key.data()}, v{};
        REQUIRE(mdb_get(txn, records, &k, &v) == 0);
        std::string value(static_cast<char const*>(v.mv_data), v.mv_size);
        auto at = value.find("AC-1");
        REQUIRE(at != std::string::npos);
        value[at + 3] = '2';
        MDB_val changed{value.size(), value.data()};
        REQUIRE(mdb_put(txn, records, &k, &changed, 0) == 0);
        REQUIRE(mdb_txn_commit(txn) == 0);
        mdb_env_close(env);
    }
    auto verified = copy.journal_cli({"verify", finished_run.id});
    INFO(verified.out << verified.err);
    CHECK(verified.exit_code != 0);
    CHECK_THAT(verified.out, Catch::Contains(std::string(finished_run.id) + ": BROKEN at seq 1"));
    auto all = copy.journal_cli({"verify", "--all"});
    CHECK(all.exit_code != 0);
}
