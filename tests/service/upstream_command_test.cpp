#include "service/upstream_command.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/node_peers.hpp"
#include "tests/support/peers.hpp"

#include <catch2/catch.hpp>

using namespace airlock::testing;

namespace {
std::string everything_stdio() { return "stdio:" + peers::node() + " " + peers::everything() + " stdio"; }
}  // namespace

TEST_CASE("airlock tools lists an upstream's tools with wire names and mutates hints") {
    auto r = run_command({AIRLOCK_BINARY, "tools", "--server", everything_stdio(), "--name", "everything"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("get-sum\teverything__get-sum\tread-only\t"));
    CHECK_THAT(r.err, Catch::Contains("era legacy"));
}

TEST_CASE("airlock call prints the result of get-sum and the era used") {
    auto r = run_command({AIRLOCK_BINARY, "call", "--server", everything_stdio(), "get-sum", R"({"a":2,"b":3})"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("The sum of 2 and 3 is 5."));
    CHECK_THAT(r.err, Catch::Contains("era legacy 2025-11-25"));
}

TEST_CASE("airlock call over HTTP to a modern server reports the modern era") {
    modern_proxy proxy;
    auto r = run_command({AIRLOCK_BINARY, "call", "--server", proxy.url(), "get-sum", R"({"a":2,"b":3})"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("is 5"));
    CHECK_THAT(r.err, Catch::Contains("era modern 2026-07-28"));
}

TEST_CASE("airlock call reports the tool error kind when the upstream cannot be reached") {
    auto r = run_command({AIRLOCK_BINARY, "call", "--server", "stdio:/nonexistent/server", "x", "{}"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("unreachable"));
}

TEST_CASE("airlock call refuses arguments that are not a JSON object, naming them") {
    auto r = run_command({AIRLOCK_BINARY, "call", "--server", everything_stdio(), "get-sum", "[1,2]"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("arguments"));
}

TEST_CASE("a command line splits on blanks and honours quotes and backslashes, with no expansion") {
    std::vector<std::string> out;
    std::string problem;
    REQUIRE(airlock::service::split_command_line(R"(node 'a b' "c \"d\"" e\ f $HOME)", out, problem));
    CHECK(out == std::vector<std::string>{"node", "a b", "c \"d\"", "e f", "$HOME"});
    out.clear();
    CHECK_FALSE(airlock::service::split_command_line("node 'open", out, problem));
    CHECK_THAT(problem, Catch::Contains("unterminated"));
}
