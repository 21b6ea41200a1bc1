#include "tests/support/child_process.hpp"

#include <catch2/catch.hpp>

using airlock::testing::run_command;

TEST_CASE("airlock --version prints the version and exits 0") {
    auto r = run_command({AIRLOCK_BINARY, "--version"});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("airlock 0."));
}

TEST_CASE("airlock --help lists every subcommand, including those still to come") {
    auto r = run_command({AIRLOCK_BINARY, "--help"});
    CHECK(r.exit_code == 0);
    for (auto cmd : {"serve", "stdio", "check", "journal", "replay", "verify-provenance", "keygen"}) {
        INFO(cmd);
        CHECK_THAT(r.out, Catch::Contains(std::string("\n  ") + cmd + " "));
    }
}

TEST_CASE("an unknown subcommand exits 2 with a usage message naming it") {
    auto r = run_command({AIRLOCK_BINARY, "frobnicate"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("unknown command 'frobnicate'"));
    CHECK_THAT(r.err, Catch::Contains("usage: airlock"));
}

TEST_CASE("airlock with no arguments prints usage and exits 2") {
    auto r = run_command({AIRLOCK_BINARY});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("usage: airlock"));
}

TEST_CASE("serve refuses an unknown option and a malformed --listen, naming them") {
    auto r = run_command({AIRLOCK_BINARY, "serve", "--bogus"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--bogus"));
    r = run_command({AIRLOCK_BINARY, "serve", "--listen", "nonsense"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--listen"));
}
