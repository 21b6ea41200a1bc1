// The journal over months, from the command line: a backup taken while `airlock serve` takes calls
// verifies and restores; compaction is refused while airlock runs and gives space back once it is
// stopped; a prune of a journal an earlier airlock wrote (tests/fixtures/journal-v1) takes its
// sealed runs, keeps the run awaiting approval, and leaves a journal that verifies and serves.
#include "tests/support/child_process.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr char const* alice_token = "upkeep-alice-0123456789abcdef";

command_result journal(std::vector<std::string> args) {
    std::vector<std::string> argv{AIRLOCK_BINARY, "journal"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, 120s);
}

// A call that lands in the journal: an effect_started and an effect_done record.
void call_sum(std::uint16_t port, int i) {
    auto args = "\"name\":\"everything__get-sum\",\"arguments\":{\"a\":" + std::to_string(i) + ",\"b\":1},";
    auto r = modern_post(port, alice_token, "tools/call", "everything__get-sum", args);
    REQUIRE(r.status == 200);
}

struct serving {
    std::unique_ptr<child_process> airlock;
    std::uint16_t port = 0;
    explicit serving(gateway_deployment const& d) {
        airlock = std::make_unique<child_process>(
            std::vector<std::string>{AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
        port = wait_listening(*airlock);
        for (int i = 0; i < 300 && http_get(port, "/readyz").status != 200; ++i) std::this_thread::sleep_for(100ms);
        REQUIRE(http_get(port, "/readyz").status == 200);
    }
    void stop() {
        if (!airlock) return;
        airlock->signal(SIGTERM);
        airlock->wait(20s);
        airlock.reset();
    }
    ~serving() { stop(); }
};

}  // namespace

TEST_CASE("journal backup under load: each copy verifies, and a restored journal serves and verifies", "[e2e][journal]") {
    gateway_deployment d(alice_token);
    auto const live = (d.dir.path() / "journal").string();
    serving s(d);
    for (int i = 0; i < 20; ++i) call_sum(s.port, i);

    // Calls keep coming while three backups are taken. The loop is bounded: 400 calls at most.
    std::atomic<bool> done{false};
    std::atomic<int> calls{0};
    std::thread load([&] {
        for (int i = 0; i < 400 && !done.load(); ++i) {
            auto r = modern_post(s.port, alice_token, "tools/call", "everything__get-sum",
                                 "\"name\":\"everything__get-sum\",\"arguments\":{\"a\":1,\"b\":2},");
            if (r.status == 200) ++calls;
        }
    });
    std::vector<fs::path> copies;
    for (int i = 0; i < 3; ++i) {
        auto to = d.dir.path() / ("backup-" + std::to_string(i));
        auto b = journal({"backup", "--journal", live, to.string()});
        INFO(b.err);
        CHECK(b.exit_code == 0);
        CHECK_THAT(b.out, Catch::Contains("backed up " + live));
        copies.push_back(to);
        std::this_thread::sleep_for(50ms);
    }
    done = true;
    load.join();
    CHECK(calls.load() > 0);
    for (auto const& c : copies) {
        auto v = journal({"verify", "--all", "--journal", c.string()});
        INFO(c.string() << "\n" << v.out << v.err);
        CHECK(v.exit_code == 0);
    }
    // A backup is refused over an existing journal rather than mixed into it.
    auto over = journal({"backup", "--journal", live, copies.front().string()});
    CHECK(over.exit_code == 1);
    CHECK_THAT(over.err, Catch::Contains("already holds a journal"));

    // Restore: airlock stopped, the copy put where the journal was, airlock started on it.
    s.stop();
    fs::remove_all(live);
    fs::create_directories(live);
    fs::copy_file(copies.back() / "data.mdb", fs::path(live) / "data.mdb");
    serving restored(d);
    call_sum(restored.port, 7);
    restored.stop();
    auto v = journal({"verify", "--all", "--journal", live});
    INFO(v.out << v.err);
    CHECK(v.exit_code == 0);
}

TEST_CASE("journal compact is refused while airlock has the journal open, and once it is stopped gives pruned space back",
          "[e2e][journal]") {
    gateway_deployment d(alice_token);
    auto const live = (d.dir.path() / "journal").string();
    {
        serving s(d);
        for (int i = 0; i < 200; ++i) call_sum(s.port, i);
        auto busy = journal({"compact", "--journal", live});
        CHECK(busy.exit_code == 1);
        CHECK_THAT(busy.err, Catch::Contains("is open in another process (a running airlock?); stop it first"));
    }
    // Stopped: the session's run is sealed, so it is past a retention of "now".
    auto pruned = journal({"prune", "--journal", live, "--sealed-before", "2999-01-01"});
    INFO(pruned.out << pruned.err);
    REQUIRE(pruned.exit_code == 0);
    CHECK_THAT(pruned.out, Catch::Contains("pruned 1 runs"));
    auto const before = fs::file_size(fs::path(live) / "data.mdb");
    auto compacted = journal({"compact", "--journal", live});
    INFO(compacted.out << compacted.err);
    REQUIRE(compacted.exit_code == 0);
    CHECK_THAT(compacted.out, Catch::Contains("compacted " + live));
    CHECK(fs::file_size(fs::path(live) / "data.mdb") < before);
    CHECK_FALSE(fs::exists(fs::path(live) / ".compacting"));
    // What is left (the prune's own run) verifies, and airlock serves on the compacted journal.
    auto v = journal({"verify", "--all", "--journal", live});
    INFO(v.out << v.err);
    CHECK(v.exit_code == 0);
    serving again(d);
    call_sum(again.port, 1);
}

TEST_CASE("journal prune on a journal an earlier airlock wrote: sealed runs go, exported first; the parked run stays",
          "[e2e][journal]") {
    temp_dir dir{"airlock-prune"};
    auto const j = dir.path() / "journal";
    fs::create_directories(j);
    fs::copy_file(std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/journal-v1/journal/data.mdb", j / "data.mdb");

    // Bad input is named.
    auto neither = journal({"prune", "--journal", j.string()});
    CHECK(neither.exit_code == 2);
    CHECK_THAT(neither.err, Catch::Contains("give --sealed-before DATE or --older-than AGE"));
    auto bad_date = journal({"prune", "--journal", j.string(), "--sealed-before", "last week"});
    CHECK(bad_date.exit_code == 2);
    CHECK_THAT(bad_date.err, Catch::Contains("--sealed-before 'last week' is not a date"));
    auto bad_age = journal({"prune", "--journal", j.string(), "--older-than", "30"});
    CHECK(bad_age.exit_code == 2);
    CHECK_THAT(bad_age.err, Catch::Contains("--older-than '30' is not an age"));

    // The fixture's seals predate sealed_at: they count from admission (2026), so a date before it takes none.
    auto none = journal({"prune", "--journal", j.string(), "--sealed-before", "2001-01-01"});
    CHECK(none.exit_code == 0);
    CHECK_THAT(none.out, Catch::Contains("nothing pruned"));

    auto dry = journal({"prune", "--journal", j.string(), "--older-than", "1d", "--dry-run"});
    INFO(dry.out << dry.err);
    CHECK(dry.exit_code == 0);
    CHECK_THAT(dry.out, Catch::Contains("4 runs sealed before"));

    auto const exported = dir.path() / "exported";
    auto pruned = journal({"prune", "--journal", j.string(), "--older-than", "1d", "--export-to", exported.string()});
    INFO(pruned.out << pruned.err);
    REQUIRE(pruned.exit_code == 0);
    CHECK_THAT(pruned.out, Catch::Contains("pruned 4 runs"));
    CHECK_THAT(pruned.out, !Catch::Contains("01M8T3TMJS2W5KSA5Q5WVVMG2N"));  // awaiting approval: kept

    // Each export imports into a fresh journal as a whole, verified chain.
    auto const fresh = dir.path() / "fresh";
    int imported = 0;
    for (auto const& f : fs::directory_iterator(exported)) {
        auto in = journal({"import", "--journal", fresh.string(), f.path().string()});
        INFO(f.path() << in.err);
        CHECK(in.exit_code == 0);
        ++imported;
    }
    CHECK(imported == 4);
    auto vf = journal({"verify", "--all", "--journal", fresh.string()});
    CHECK(vf.exit_code == 0);
    // What stayed verifies: the parked run and the prune's record of itself.
    auto v = journal({"verify", "--all", "--journal", j.string()});
    INFO(v.out << v.err);
    CHECK(v.exit_code == 0);
    CHECK_THAT(v.out, Catch::Contains("01M8T3TMJS2W5KSA5Q5WVVMG2N"));

    // export --all writes every remaining run, one file each.
    auto all = journal({"export", "--all", "--to", (dir.path() / "all").string(), "--journal", j.string()});
    INFO(all.err);
    CHECK(all.exit_code == 0);
    CHECK_THAT(all.out, Catch::Contains("exported 2 runs"));
    CHECK(fs::exists(dir.path() / "all" / "01M8T3TMJS2W5KSA5Q5WVVMG2N.jsonl"));
}

TEST_CASE("journal.retention in a running airlock prunes the sealed runs past it and logs what went", "[e2e][journal]") {
    gateway_deployment d(alice_token, "", "");
    auto const live = (d.dir.path() / "journal").string();
    {
        serving s(d);  // no retention yet: the session's run is kept
        call_sum(s.port, 1);
    }
    // Seal times are whole seconds: two seconds on, the stopped session's run is past a second.
    std::this_thread::sleep_for(2100ms);
    auto listed = journal({"prune", "--journal", live, "--older-than", "1s", "--dry-run"});
    REQUIRE(listed.exit_code == 0);
    INFO(listed.out << listed.err);
    CHECK_THAT(listed.out, Catch::Contains("1 runs sealed before"));

    // The same deployment with a retention of one second: airlock prunes at start and every second.
    std::ifstream in(d.config);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    auto const at = text.find("journal: { dir: journal }");
    REQUIRE(at != std::string::npos);
    text.replace(at, 25, "journal: { dir: journal, retention: 1s }");
    std::ofstream(d.config, std::ios::trunc) << text;

    serving s(d);
    auto line = s.airlock->wait_for_stderr_line("journal retention: pruned", 20s);
    INFO(s.airlock->stderr_text());
    REQUIRE(line.has_value());
    CHECK_THAT(*line, Catch::Contains("pruned 1 runs"));
    // The live session's calls are not touched while it runs.
    call_sum(s.port, 2);
    s.stop();
    auto v = journal({"verify", "--all", "--journal", live});
    INFO(v.out << v.err);
    CHECK(v.exit_code == 0);
}
