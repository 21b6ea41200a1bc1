// `airlock runs` against a real LMDB journal: --since and --cursor are read as strictly as
// GET /v1/runs reads them.
#include "store/lmdb_store.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/run_awaitable.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace airlock;
using namespace airlock::testing;

namespace {

// Two runs, admitted an hour apart.
struct two_runs {
    temp_dir dir{"airlock-runs-cli"};
    two_runs() {
        auto s = store::lmdb_store::open({dir.path()});
        REQUIRE(s.has_value());
        for (auto const& [run, at] : {std::pair{"run-early", "2026-12-01T04:00:00Z"}, {"run-late", "2026-12-01T05:00:00Z"}}) {
            boost::json::object admitted{{"agent", {{"name", "teller"}, {"version", "1"}, {"digest", "d"}}}, {"mode", "agent"},
                                         {"input", "q"},
                                         {"admitted_at", at}};
            REQUIRE(run_awaitable((*s)->async_append(run, {{core::record_kind::run_admitted, admitted}})).has_value());
        }
    }
    command_result runs(std::vector<std::string> extra) const {
        std::vector<std::string> argv{AIRLOCK_BINARY, "runs", "--journal", dir.path().string(), "--json"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return run_command(argv);
    }
    // Which of the two runs a listing that must succeed shows.
    std::set<std::string> listed(std::vector<std::string> extra) const {
        auto r = runs(std::move(extra));
        INFO(r.err);
        CHECK(r.exit_code == 0);
        std::set<std::string> out;
        for (auto const* run : {"run-early", "run-late"})
            if (r.out.find(run) != std::string::npos) out.insert(run);
        return out;
    }
};

using names = std::set<std::string>;

}  // namespace

TEST_CASE("airlock runs --since honours a time zone offset") {
    two_runs j;
    // 04:30 at UTC-01:00 is 05:30Z: after both runs. At UTC+01:00 it is 03:30Z: before both.
    CHECK(j.listed({"--since", "2026-12-01T04:30:00-01:00"}).empty());
    CHECK(j.listed({"--since", "2026-12-01T04:30:00+01:00"}) == names{"run-early", "run-late"});
    CHECK(j.listed({"--since", "2026-12-01T04:30:00Z"}) == names{"run-late"});
}

TEST_CASE("airlock runs --since refuses what is not an RFC 3339 time, naming the option, and exits 2") {
    two_runs j;
    for (auto const* bad : {"2026-12-01T04:28:30Zjunk", "2026-12-01Tgarbage", "2026-12-01", "yesterday",
                            "2026-13-01T00:00:00Z"}) {
        INFO(bad);
        auto r = j.runs({"--since", bad});
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.err, Catch::Contains("--since"));
        CHECK(r.out.empty());
    }
}

TEST_CASE("airlock runs --since reads a space between date and time as RFC 3339 allows, not as a date alone") {
    two_runs j;
    CHECK(j.listed({"--since", "2026-12-01 04:30:00Z"}) == names{"run-late"});
}

TEST_CASE("airlock runs --cursor refuses a run the journal does not hold instead of listing nothing") {
    two_runs j;
    auto bad = j.runs({"--cursor", "garbage"});
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--cursor"));
    CHECK(j.listed({"--cursor", "run-early"}) == names{"run-late"});
}

TEST_CASE("airlock runs prints the next page's cursor as the table's own last line, and keeps JSON lines pure") {
    two_runs j;
    auto table = run_command({AIRLOCK_BINARY, "runs", "--journal", j.dir.path().string(), "--limit", "1"});
    INFO(table.out << table.err);
    REQUIRE(table.exit_code == 0);
    // On stdout after the rows, on a line of its own, wherever the two streams are merged.
    CHECK_THAT(table.out, Catch::EndsWith("\nmore: --cursor run-early\n"));
    CHECK(table.err.find("more:") == std::string::npos);
    auto json = j.runs({"--limit", "1"});
    CHECK(json.out.find("more:") == std::string::npos);
    CHECK_THAT(json.err, Catch::Contains("more: --cursor run-early\n"));
}
