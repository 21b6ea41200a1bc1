// `airlock run MANIFEST --input JSON`, the real binary: the TELLER example against the ledger over
// stdio, journaled so `airlock runs` and `airlock replay` see the run; exit codes for each kind of
// end; bad command lines refused naming the field; and a provider's API key kept out of the
// journal and the logs.

#include "tests/support/child_process.hpp"
#include "tests/support/fake_model_api.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/teller_example.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <thread>

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace airlock;
using namespace std::chrono_literals;
using testing::run_command;
namespace teller = testing::teller;

namespace {

constexpr char answer[] = "\"AC-1 holds 42. I was not permitted to post to it.\"";
constexpr char question[] = R"({"question": "what is in AC-1?"})";

testing::command_result airlock_run(fs::path const& config, std::vector<std::string> more) {
    std::vector<std::string> argv{AIRLOCK_BINARY, "run", teller::manifest(), "--config", config.string()};
    argv.insert(argv.end(), more.begin(), more.end());
    return run_command(argv);
}

// The value after "run: " in the text output.
std::string run_id_in(std::string const& out) {
    auto at = out.find("run: ");
    if (at == std::string::npos) return "";
    return out.substr(at + 5, out.find('\n', at) - at - 5);
}

}  // namespace

TEST_CASE("airlock run drives the TELLER example to its answer, and airlock runs and airlock replay see the run") {
    testing::temp_dir dir("airlock-run");
    auto config = teller::write_config(dir.path(), teller::manifest());
    auto run = airlock_run(config, {"--input", question});
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    CHECK_THAT(run.out, Catch::Contains("status: succeeded"));
    CHECK_THAT(run.out, Catch::Contains(std::string("output: ") + answer));
    auto id = run_id_in(run.out);
    REQUIRE(id.size() == 26);

    auto listed = run_command({AIRLOCK_BINARY, "runs", "--config", config.string()});
    CHECK(listed.exit_code == 0);
    CHECK_THAT(listed.out, Catch::Contains(id));

    auto replay = run_command({AIRLOCK_BINARY, "replay", "--config", config.string(), id});
    INFO(replay.out << replay.err);
    CHECK(replay.exit_code == 0);
    CHECK_THAT(replay.out, Catch::Contains("(0 model calls, 0 tool calls)"));
    CHECK_THAT(replay.out, Catch::Contains(std::string("output: ") + answer));
}

TEST_CASE("airlock run --json prints one JSON object, and --script picks the model for an agent not configured") {
    testing::temp_dir dir("airlock-run");
    // No agents: section at all: the manifest given is the agent, the script its model.
    auto config = dir.path() / "airlock.yaml";
    std::ofstream(config) << teller::ledger_sections();
    auto run = airlock_run(config, {"--input", question, "--script", teller::script(), "--json"});
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    auto printed = json::parse(run.out).as_object();
    CHECK(printed.at("status") == "succeeded");
    CHECK(printed.at("output") == json::parse(answer));
    CHECK(printed.at("run_id").as_string().size() == 26);

    auto no_provider = airlock_run(config, {"--input", question});
    CHECK(no_provider.exit_code == 2);
    CHECK_THAT(no_provider.err, Catch::Contains("give --provider NAME or --script FILE"));
}

TEST_CASE("airlock run refuses a bad command line, configuration, manifest or input with exit 2 naming the field") {
    testing::temp_dir dir("airlock-run");
    auto config = teller::write_config(dir.path(), teller::manifest());

    auto bad_json = airlock_run(config, {"--input", R"({"question": nope})"});
    CHECK(bad_json.exit_code == 2);
    CHECK_THAT(bad_json.err, Catch::Contains("--input: not valid JSON at byte 13"));

    auto unknown_provider = airlock_run(config, {"--input", question, "--provider", "gpt"});
    CHECK(unknown_provider.exit_code == 2);
    CHECK_THAT(unknown_provider.err, Catch::Contains("--provider: the configuration has no provider 'gpt'"));

    auto both = airlock_run(config, {"--input", question, "--provider", "gpt", "--script", teller::script()});
    CHECK(both.exit_code == 2);

    auto no_config = run_command({AIRLOCK_BINARY, "run", teller::manifest(), "--input", question});
    CHECK(no_config.exit_code == 2);
    CHECK_THAT(no_config.err, Catch::Contains("--config is required"));

    auto bad_config = run_command(
        {AIRLOCK_BINARY, "run", teller::manifest(), "--input", question, "--config", (dir.path() / "none.yaml").string()});
    CHECK(bad_config.exit_code == 2);

    std::ofstream(dir.path() / "broken.yaml") << "apiVersion: airlock/v1\nkind: Agent\n";
    auto bad_manifest =
        run_command({AIRLOCK_BINARY, "run", (dir.path() / "broken.yaml").string(), "--input", question, "--config",
                     config.string()});
    CHECK(bad_manifest.exit_code == 2);
    CHECK_THAT(bad_manifest.err, Catch::Contains("MANIFEST ("));

    std::ofstream(dir.path() / "broken.script.yaml") << "turns: [{ dance: yes }]\n";
    auto bad_script = airlock_run(config, {"--input", question, "--script", (dir.path() / "broken.script.yaml").string()});
    CHECK(bad_script.exit_code == 2);
    CHECK_THAT(bad_script.err, Catch::Contains("--script: "));

    auto unknown_option = airlock_run(config, {"--input", question, "--fast"});
    CHECK(unknown_option.exit_code == 2);
    CHECK_THAT(unknown_option.err, Catch::Contains("--fast"));
    // None of them started a run.
    CHECK_FALSE(fs::exists(dir.path() / "journal" / "data.mdb"));
}

TEST_CASE("airlock run exits 1 for a run that fails at max_turns, and for one awaiting approval naming the run") {
    testing::temp_dir dir("airlock-run");
    auto config = teller::write_config(dir.path(), teller::manifest());
    std::ofstream(dir.path() / "loop.script.yaml")
        << "after_last: repeat\nturns:\n  - call: { tool: ledger__read, arguments: { account: AC-1 } }\n";
    auto looping = airlock_run(config, {"--input", question, "--script", (dir.path() / "loop.script.yaml").string()});
    INFO(looping.out << looping.err);
    CHECK(looping.exit_code == 1);
    CHECK_THAT(looping.out, Catch::Contains("status: failed"));
    CHECK_THAT(looping.out, Catch::Contains("max_turns (4)"));

    auto reviewed = teller::edited_manifest(dir.path(), "teller-reviewed.yaml",
                                            "      description: Read a ledger account's balance.\n",
                                            "      requires_approval: true\n"
                                            "      description: Read a ledger account's balance.\n");
    auto waiting = run_command({AIRLOCK_BINARY, "run", reviewed.string(), "--input", question, "--config",
                                config.string(), "--script", teller::script()});
    INFO(waiting.out << waiting.err);
    CHECK(waiting.exit_code == 1);
    CHECK_THAT(waiting.out, Catch::Contains("status: awaiting_approval"));
    auto id = run_id_in(waiting.out);
    REQUIRE(id.size() == 26);
    CHECK_THAT(waiting.out, Catch::Contains("POST /v1/runs/" + id + "/approvals/" + id + "%2F000002%2Ftool"));
}

TEST_CASE("a provider's API key from the environment reaches the model API and never the journal or the logs") {
    std::string const key = "sk-airlock-test-6b1f0c9e2d7a4f3b8c5e1a0d9f2b7c4e";
    testing::fake_model_api api("openai_server.mjs", key);
    testing::temp_dir dir("airlock-run-key");
    // The model name picks the fake API's behaviour: `tools` calls the first two tools it is offered
    // (a read of an unknown account, a model-chosen post: both fail) and then answers.
    auto manifest = teller::edited_manifest(dir.path(), "teller-openai.yaml", "model: teller-1", "model: tools");
    auto config = dir.path() / "airlock.yaml";
    std::ofstream(config) << teller::ledger_sections() << "  - " << api.origin() << "\n"
                          << "providers:\n  fake:\n    kind: openai\n    base_url: " << api.origin() << "/v1\n"
                          << "    api_key: { env: AIRLOCK_TEST_MODEL_KEY }\n    model: tools\n"
                          << "logging: { level: trace }\n";
    testing::child_process run({AIRLOCK_BINARY, "run", manifest.string(), "--input", question, "--config",
                                config.string(), "--provider", "fake", "--json"},
                               {"AIRLOCK_TEST_MODEL_KEY=" + key});
    auto code = run.wait(60s);
    auto out = run.stdout_text(), err = run.stderr_text();
    INFO(out << err);
    REQUIRE(code == 0);
    CHECK(json::parse(out).at("status") == "succeeded");

    // The key went where it belongs: every request the model API received carried it.
    auto log = api.log().at("requests").as_array();
    REQUIRE(log.size() == 2);
    for (auto const& r : log) CHECK(r.at("headers").at("authorization") == json::value("Bearer " + key));
    // ... and nowhere else: not in a byte of the journal's data file, not in the trace-level log.
    auto data = testing::file_text(dir.path() / "journal" / "data.mdb");
    REQUIRE(data.size() > 0);
    CHECK(data.find(key) == std::string::npos);
    CHECK(err.find(key) == std::string::npos);
    CHECK(out.find(key) == std::string::npos);
    // The journal is the one the run wrote: it holds the model's answer.
    CHECK(data.find("Done: ") != std::string::npos);
}

TEST_CASE("SIGINT during airlock run cancels the run at its next step, journaled as cancelled") {
    testing::temp_dir dir("airlock-run-sigint");
    auto const node = testing::peers::node();
    auto const fixture = std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/agents/counting_server.mjs";
    auto const calls = dir.path() / "calls.log";
    // Each call takes a while to answer, so the signal comes while the first one is in flight.
    std::ofstream(dir.path() / "airlock.yaml")
        << "journal: { dir: journal }\n"
        << "upstreams:\n  - name: counter\n    stdio:\n      argv: [" << node << ", " << fixture << "]\n"
        << "      env: { COUNTER_LOG: " << calls.string() << ", COUNTER_DELAY_MS: \"3000\" }\n"
        << "egress:\n  - process: " << node << "\n  - local\n";
    std::ofstream(dir.path() / "peek.yaml")
        << "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: peeker, version: \"1.0.0\" }\nspec:\n"
        << "  capabilities: { provides: [peek] }\n  models: { privileged: { provider: scripted, model: peek-1 } }\n"
        << "  tools:\n    - { ref: tool://counter/peek, mutates: false, description: Read a counter. }\n"
        << "  execution: { kind: tool-calling, max_turns: 6 }\n  budgets: {}\n";
    std::ofstream(dir.path() / "peek.script.yaml")
        << "turns:\n  - call: { tool: counter__peek, arguments: { key: a } }\n"
        << "  - call: { tool: counter__peek, arguments: { key: b } }\n  - say: done\n";
    testing::child_process run({AIRLOCK_BINARY, "run", (dir.path() / "peek.yaml").string(), "--input", "{}", "--config",
                                (dir.path() / "airlock.yaml").string(), "--script",
                                (dir.path() / "peek.script.yaml").string()});
    // The first call has reached the counter (it logs before it waits).
    for (int i = 0; i < 600 && testing::file_text(calls).empty(); ++i) std::this_thread::sleep_for(50ms);
    INFO(run.stderr_text());
    REQUIRE_FALSE(testing::file_text(calls).empty());
    run.signal(SIGINT);
    auto code = run.wait(60s);
    INFO(run.stdout_text() << run.stderr_text());
    CHECK(code == 1);
    CHECK_THAT(run.stdout_text(), Catch::Contains("status: cancelled"));
    // The call in flight finished; the next one was never made.
    auto made = testing::file_text(calls);
    CHECK(std::count(made.begin(), made.end(), '\n') == 1);
    auto listed = run_command({AIRLOCK_BINARY, "runs", "--config", (dir.path() / "airlock.yaml").string(), "--status",
                               "cancelled"});
    CHECK_THAT(listed.out, Catch::Contains("peeker"));
}
