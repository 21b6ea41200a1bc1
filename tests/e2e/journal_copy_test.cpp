// `airlock journal copy` and `airlock journal migrate-schema` against a real PostgreSQL 15: the
// journal-v1 fixture (a journal an earlier airlock wrote) copied to PostgreSQL and back exports
// byte for byte as it did, its pins with it, and a copy that stopped is resumed by running it again.
#include "tests/support/child_process.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct cli_result {
    int code;
    std::string out, err;
};

cli_result run_airlock(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), AIRLOCK_BINARY);
    child_process p(args, std::move(env));
    int code = p.wait(120s);
    return {code, p.stdout_text(), p.stderr_text()};
}

fs::path fixture_journal_copy(fs::path const& dir) {
    fs::create_directories(dir);
    fs::copy_file(std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/journal-v1/journal/data.mdb", dir / "data.mdb");
    return dir;
}

// Every file of an `export --all`, by name.
std::map<std::string, std::string> exported(fs::path const& journal, fs::path const& to) {
    auto r = run_airlock({"journal", "export", "--all", "--to", to.string(), "--journal", journal.string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    std::map<std::string, std::string> files;
    for (auto const& e : fs::directory_iterator(to)) {
        std::ifstream in(e.path(), std::ios::binary);
        std::stringstream s;
        s << in.rdbuf();
        files[e.path().filename().string()] = s.str();
    }
    return files;
}

}  // namespace

TEST_CASE("airlock journal copy takes a journal to PostgreSQL and back with every record and pin unchanged",
          "[journal][postgres][e2e]") {
    postgres_server pg;
    temp_dir dir{"airlock-copy"};
    auto source = fixture_journal_copy(dir.path() / "source");
    auto url = pg.create_database();

    auto to_pg = run_airlock({"journal", "copy", "--from", "lmdb:" + source.string(), "--to", "postgres:" + url});
    INFO(to_pg.out << to_pg.err);
    REQUIRE(to_pg.code == 0);
    auto before = exported(source, dir.path() / "before");
    REQUIRE(before.size() >= 5);
    CHECK_THAT(to_pg.out, Catch::StartsWith("copied " + std::to_string(before.size()) + " runs ("));

    // Run again: everything is there already, nothing is written twice.
    auto again = run_airlock({"journal", "copy", "--from", "lmdb:" + source.string(), "--to", "postgres:" + url});
    INFO(again.out << again.err);
    CHECK(again.code == 0);
    CHECK_THAT(again.out, Catch::StartsWith("copied 0 runs (0 records)") &&
                              Catch::Contains(std::to_string(before.size()) + " runs were there already"));

    auto back = dir.path() / "back";
    auto to_lmdb = run_airlock({"journal", "copy", "--from", "postgres:" + url, "--to", "lmdb:" + back.string()});
    INFO(to_lmdb.out << to_lmdb.err);
    REQUIRE(to_lmdb.code == 0);
    CHECK(exported(back, dir.path() / "after") == before);
    auto verified = run_airlock({"journal", "verify", "--all", "--journal", back.string()});
    CHECK(verified.code == 0);
    auto pins_before = run_airlock({"pins", "list", "--journal", source.string()});
    auto pins_after = run_airlock({"pins", "list", "--journal", back.string()});
    CHECK(pins_before.code == 0);
    CHECK(pins_after.out == pins_before.out);
}

TEST_CASE("airlock journal copy and migrate-schema name what is wrong with their arguments, and no password",
          "[journal][postgres][e2e]") {
    temp_dir dir{"airlock-copy"};
    auto none = run_airlock({"journal", "copy", "--from", "lmdb:" + dir.path().string()});
    CHECK(none.code == 2);
    CHECK_THAT(none.err, Catch::Contains("needs --from STORE and --to STORE"));
    auto odd = run_airlock({"journal", "copy", "--from", "sqlite:x", "--to", "lmdb:" + dir.path().string()});
    CHECK(odd.code == 1);
    CHECK_THAT(odd.err, Catch::Contains("'sqlite:x' is not lmdb:DIR or postgres:URL"));
    auto missing = run_airlock({"journal", "copy", "--from", "lmdb:" + (dir.path() / "nothing").string(), "--to",
                            "lmdb:" + (dir.path() / "out").string()});
    CHECK(missing.code == 1);
    CHECK_THAT(missing.err, Catch::Contains("no journal at"));
    auto unreachable = run_airlock({"journal", "migrate-schema", "--postgres", "postgresql://alice:s3cret@127.0.0.1:1/x"});
    CHECK(unreachable.code == 1);
    CHECK_THAT(unreachable.err, Catch::Contains("unreachable") && !Catch::Contains("s3cret"));
    CHECK_THAT(unreachable.err, Catch::Contains("postgresql://alice:***@127.0.0.1:1/x"));
}

TEST_CASE("airlock journal migrate-schema creates a PostgreSQL journal's schema once and says which version it had",
          "[journal][postgres][e2e]") {
    postgres_server pg;
    auto url = pg.create_database();
    auto first = run_airlock({"journal", "migrate-schema", "--postgres", url});
    INFO(first.err);
    CHECK(first.code == 0);
    CHECK(first.out == "schema version 0 -> 1\n");
    auto second = run_airlock({"journal", "migrate-schema", "--postgres", url});
    CHECK(second.code == 0);
    CHECK(second.out == "schema version 1: already this airlock's\n");
    pg.execute(url.substr(url.rfind('/') + 1), "UPDATE airlock.schema_version SET version = 7");
    auto newer = run_airlock({"journal", "migrate-schema", "--postgres", url});
    CHECK(newer.code == 1);
    CHECK_THAT(newer.err, Catch::Contains("schema version 7, newer than this airlock's 1: upgrade airlock"));
    // A copy into it is refused the same way, before anything is written.
    temp_dir dir{"airlock-copy"};
    auto source = fixture_journal_copy(dir.path() / "source");
    auto copy = run_airlock({"journal", "copy", "--from", "lmdb:" + source.string(), "--to", "postgres:" + url});
    CHECK(copy.code == 1);
    CHECK_THAT(copy.err, Catch::Contains("upgrade airlock"));
}
