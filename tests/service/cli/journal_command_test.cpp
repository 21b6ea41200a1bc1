#include "store/lmdb_store.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/run_awaitable.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>

using namespace airlock;
using namespace airlock::testing;

namespace {

void write_run(std::filesystem::path const& dir, std::string const& run) {
    auto s = store::lmdb_store::open({dir});
    REQUIRE(s.has_value());
    boost::json::object admitted{{"agent", {{"name", "teller"}, {"version", "1"}, {"digest", "d"}}},
                                 {"input", "what is my balance?"},
                                 {"admitted_at", "2026-11-30T08:00:00Z"}};
    boost::json::object started{{"effect_key", run + "/000001/tool"}, {"target", "tool"}, {"tool", "tool://ledger/read"},
                                {"arguments", {{"account", "acct-1"}}}, {"mutates", false}, {"attempt", 1}};
    boost::json::object done{{"effect_key", run + "/000001/tool"}, {"output", {{"balance", 1.5}}}};
    auto r = run_awaitable((*s)->async_append(run, {{core::record_kind::run_admitted, admitted},
                                                    {core::record_kind::effect_started, started},
                                                    {core::record_kind::effect_done, done}}));
    REQUIRE(r.has_value());
    REQUIRE(run_awaitable((*s)->async_seal(run, "succeeded", "answered")).has_value());
}

std::string slurp(std::filesystem::path const& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("journal export, import into a fresh directory and export again round-trips byte for byte") {
    temp_dir a, b;
    write_run(a.path(), "run-a");
    auto exported = run_command({AIRLOCK_BINARY, "journal", "export", "run-a", "--journal", a.path().string()});
    REQUIRE(exported.exit_code == 0);
    CHECK(std::count(exported.out.begin(), exported.out.end(), '\n') == 4);
    auto file = a.path() / "run-a.jsonl";
    std::ofstream(file, std::ios::binary) << exported.out;

    auto imported = run_command({AIRLOCK_BINARY, "journal", "import", file.string(), "--journal", b.path().string()});
    INFO(imported.err);
    REQUIRE(imported.exit_code == 0);
    auto again = run_command({AIRLOCK_BINARY, "journal", "export", "run-a", "--journal", b.path().string()});
    CHECK(again.out == exported.out);
    auto verified = run_command({AIRLOCK_BINARY, "journal", "verify", "--all", "--journal", b.path().string()});
    CHECK(verified.exit_code == 0);
    CHECK_THAT(verified.out, Catch::Contains("run-a: ok (4 records)"));
}

TEST_CASE("a tampered export is refused whole, naming the seq") {
    temp_dir a, b;
    write_run(a.path(), "run-t");
    auto exported = run_command({AIRLOCK_BINARY, "journal", "export", "run-t", "--journal", a.path().string()});
    REQUIRE(exported.exit_code == 0);
    auto text = exported.out;
    auto at = text.find("acct-1");
    REQUIRE(at != std::string::npos);
    text.replace(at, 6, "acct-9");  // record 2 now says another account
    auto file = a.path() / "tampered.jsonl";
    std::ofstream(file, std::ios::binary) << text;
    auto imported = run_command({AIRLOCK_BINARY, "journal", "import", file.string(), "--journal", b.path().string()});
    CHECK(imported.exit_code == 1);
    CHECK_THAT(imported.err, Catch::Contains("seq 2"));
    // Refused whole: nothing of the run was written.
    auto shown = run_command({AIRLOCK_BINARY, "journal", "show", "run-t", "--journal", b.path().string()});
    CHECK(shown.exit_code == 1);
}

TEST_CASE("journal show prints one line per record with its kind") {
    temp_dir a;
    write_run(a.path(), "run-s");
    auto shown = run_command({AIRLOCK_BINARY, "journal", "show", "run-s", "--journal", a.path().string()});
    CHECK(shown.exit_code == 0);
    CHECK_THAT(shown.out, Catch::Contains("1  run_admitted"));
    CHECK_THAT(shown.out, Catch::Contains("4  run_sealed"));
}

TEST_CASE("journal verify names the run and seq of a flipped byte and exits 1") {
    temp_dir a;
    write_run(a.path(), "run-v");
    auto path = a.path() / "data.mdb";
    auto bytes = slurp(path);
    // Every copy: LMDB's copy-on-write leaves stale page copies beside the live one.
    int flipped = 0;
    for (auto at = bytes.find("what is my balance?"); at != std::string::npos; at = bytes.find("what is my balance?", at + 1)) {
        bytes[at] = 'W';
        ++flipped;
    }
    REQUIRE(flipped > 0);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    auto r = run_command({AIRLOCK_BINARY, "journal", "verify", "run-v", "--journal", a.path().string()});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("run-v: BROKEN at seq 1"));
}

TEST_CASE("journal commands on a directory without a journal say so instead of creating one") {
    temp_dir a;
    auto r = run_command({AIRLOCK_BINARY, "journal", "show", "x", "--journal", (a.path() / "none").string()});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("no journal"));
    CHECK_FALSE(std::filesystem::exists(a.path() / "none"));
}

TEST_CASE("journal show refuses an unknown option by its name") {
    temp_dir a;
    write_run(a.path(), "run-o");
    auto r = run_command({AIRLOCK_BINARY, "journal", "show", "run-o", "--full", "--journal", a.path().string()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("unknown option '--full'"));
    CHECK_THAT(r.err, !Catch::Contains("expected"));
}

TEST_CASE("journal commands take the journal from a configuration given with --config, as runs and pins do") {
    temp_dir a;
    write_run(a.path() / "var" / "journal", "run-c");
    auto config = a.path() / "airlock.yaml";
    std::ofstream(config) << "journal: { dir: var/journal }\n";
    auto shown = run_command({AIRLOCK_BINARY, "journal", "show", "run-c", "--config", config.string()});
    INFO(shown.err);
    CHECK(shown.exit_code == 0);
    CHECK_THAT(shown.out, Catch::Contains("1  run_admitted"));
    auto verified = run_command({AIRLOCK_BINARY, "journal", "verify", "--all", "--config", config.string()});
    CHECK(verified.exit_code == 0);
    CHECK_THAT(verified.out, Catch::Contains("run-c: ok (4 records)"));

    auto both = run_command({AIRLOCK_BINARY, "journal", "show", "run-c", "--config", config.string(), "--journal",
                             a.path().string()});
    CHECK(both.exit_code == 2);
    CHECK_THAT(both.err, Catch::Contains("not both"));
}
