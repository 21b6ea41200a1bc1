#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

using namespace airlock::testing;

TEST_CASE("airlock check prints ok, name, version and digest for a valid manifest") {
    auto r = run_command({AIRLOCK_BINARY, "check", std::string(AIRLOCK_SOURCE_DIR) + "/examples/teller.yaml"});
    CHECK(r.exit_code == 0);
    CHECK(std::regex_match(r.out, std::regex("ok teller 1\\.0\\.0 [0-9a-f]{64}\n")));
}

TEST_CASE("airlock check names the field at fault and exits 1") {
    temp_dir dir;
    auto path = dir.path() / "bad.yaml";
    {
        std::ofstream f(path);
        f << "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: x, version: \"1\" }\n"
             "spec:\n  tools:\n    - ref: tool://ledger/po-st\n      mutates: false\n  budgets: {}\n";
    }
    auto r = run_command({AIRLOCK_BINARY, "check", path.string()});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("spec.tools[0].ref"));
}

TEST_CASE("airlock check on a missing file exits 1 naming the file") {
    auto r = run_command({AIRLOCK_BINARY, "check", "/nonexistent/agent.yaml"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("/nonexistent/agent.yaml"));
}

TEST_CASE("airlock check validates a configuration file and prints its summary") {
    auto r = run_command({AIRLOCK_BINARY, "check", std::string(AIRLOCK_SOURCE_DIR) + "/examples/airlock.yaml"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("ok config "));
}

TEST_CASE("airlock check names an unknown configuration key with its path") {
    temp_dir dir;
    auto path = dir.path() / "airlock.yaml";
    std::ofstream(path) << "server:\n  listen: 127.0.0.1:0\n  lisen: oops\n";
    auto r = run_command({AIRLOCK_BINARY, "check", path.string()});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("server.lisen"));
}
