#include "store/lmdb_store.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/run_awaitable.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

using namespace airlock;
using namespace airlock::testing;

TEST_CASE("airlock pins lists a changed definition and accept makes it the pinned one") {
    temp_dir dir;
    {
        auto s = store::lmdb_store::open({dir.path()});
        REQUIRE(s.has_value());
        std::string key = "ledger/post", first(64, 'a'), second(64, 'b');
        REQUIRE(run_awaitable((*s)->async_check_pin(key, first)).has_value());
        REQUIRE(*run_awaitable((*s)->async_check_pin(key, second)) == core::pin_verdict::changed);
    }
    auto listed = run_command({AIRLOCK_BINARY, "pins", "list", "--journal", dir.path().string()});
    CHECK(listed.exit_code == 0);
    CHECK_THAT(listed.out, Catch::Contains("ledger/post  aaaaaaaaaaaaaaaa  CHANGED to bbbbbbbbbbbbbbbb"));

    auto accepted = run_command({AIRLOCK_BINARY, "pins", "accept", "ledger", "post", "--journal", dir.path().string()});
    CHECK(accepted.exit_code == 0);
    listed = run_command({AIRLOCK_BINARY, "pins", "list", "--journal", dir.path().string()});
    CHECK_THAT(listed.out, Catch::Contains("ledger/post  bbbbbbbbbbbbbbbb"));
    CHECK_THAT(listed.out, !Catch::Contains("CHANGED"));

    auto again = run_command({AIRLOCK_BINARY, "pins", "accept", "ledger", "post", "--journal", dir.path().string()});
    CHECK(again.exit_code == 1);
    CHECK_THAT(again.err, Catch::Contains("no changed definition"));
}
