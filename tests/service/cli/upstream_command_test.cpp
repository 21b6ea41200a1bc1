#include "service/cli/upstream_command.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/node_peers.hpp"
#include "tests/support/peers.hpp"

#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>

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

TEST_CASE("airlock fronts another airlock whose tools are server__tool, with prefixes on both") {
    // The inner airlock serves server-everything's echo and get-sum as everything__echo and
    // everything__get-sum over stdio; the outer one names them inner__everything_-echo, ...
    temp_dir dir{"airlock-nested"};
    std::ofstream(dir.path() / "desk.yaml") << R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: inner-desk, version: "1" }
spec:
  tools:
    - ref: tool://everything/echo
      mutates: false
    - ref: tool://everything/get.sum
      mutates: false
  budgets: {}
)";
    auto inner = dir.path() / "inner.yaml";
    std::ofstream(inner) << "journal: { dir: " << (dir.path() / "journal").string() << " }\n"
                         << "upstreams:\n  - name: everything\n    stdio: { argv: [\"" << peers::node() << "\", \""
                         << peers::everything() << "\", stdio] }\n"
                         << "egress:\n  - process: \"" << peers::node() << "\"\n"
                         << "principals:\n  - name: desk\n    anonymous: true\n    manifest: " << (dir.path() / "desk.yaml").string()
                         << "\n";
    auto server = "stdio:" + std::string(AIRLOCK_BINARY) + " stdio --config " + inner.string() + " --principal desk";
    auto listed = run_command({AIRLOCK_BINARY, "tools", "--server", server, "--name", "inner"});
    INFO(listed.err);
    CHECK(listed.exit_code == 0);
    CHECK_THAT(listed.out, Catch::Contains("everything__get-sum\tinner__everything_-get-sum\tread-only\t"));
    CHECK_THAT(listed.out, Catch::Contains("everything__echo\tinner__everything_-echo\t"));
    auto called = run_command({AIRLOCK_BINARY, "call", "--server", server, "everything__get-sum", R"({"a":2,"b":3})"});
    INFO(called.err);
    CHECK(called.exit_code == 0);
    CHECK_THAT(called.out, Catch::Contains("The sum of 2 and 3 is 5."));
}
