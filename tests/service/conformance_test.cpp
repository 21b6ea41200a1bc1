// The official MCP conformance suite (@modelcontextprotocol/conformance, every 2025-11-25 server
// scenario) pointed at airlock, which fronts the project's conformance fixture as a stdio upstream
// with `prefix: none`. The CLI cannot send credentials, so the deployment serves it as an
// anonymous principal granted every fixture tool.
//
// Hidden from a plain run of service_tests ([.]): ctest runs it as its own entry with a longer
// timeout (tests/CMakeLists.txt). Run it by hand with: service_tests "[conformance]".
#include "tests/support/child_process.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <regex>

using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {

// The fixture's tools (tests/fixtures/conformance_server.mjs), all granted to the anonymous principal.
constexpr char const* fixture_tools[] = {
    "test_simple_text",     "test_image_content",   "test_audio_content",
    "test_embedded_resource", "test_multiple_content_types", "test_tool_with_logging",
    "test_tool_with_progress", "test_error_handling", "test_sampling",
    "test_elicitation",     "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
    "test_reconnection",    "json_schema_2020_12_tool", "test_dynamic_tool",
};

struct conformance_deployment {
    temp_dir dir{"airlock-conformance"};
    std::filesystem::path config = dir.path() / "airlock.yaml";

    conformance_deployment() {
        std::ofstream m(dir.path() / "public.yaml");
        m << "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: conformance-client, version: \"1\" }\n"
             "spec:\n  tools:\n";
        for (auto const* t : fixture_tools) m << "    - ref: tool://fixture/" << t << "\n      mutates: false\n";
        m << "  budgets: {}\n";
        auto fixture = std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/conformance_server.mjs";
        std::ofstream(config) << "journal: { dir: journal }\n"
                              << "upstreams:\n  - name: fixture\n    prefix: none\n"
                              << "    stdio: { argv: [\"" << peers::node() << "\", \"" << fixture
                              << "\", --transport, stdio] }\n"
                              << "egress:\n  - process: \"" << peers::node() << "\"\n"
                              << "principals:\n  - name: public\n    anonymous: true\n    manifest: public.yaml\n";
    }
};

}  // namespace

TEST_CASE("every 2025-11-25 server scenario of the MCP conformance suite passes through airlock", "[.][conformance]") {
    conformance_deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto line = airlock.wait_for_stderr_line("listening on http://", 30s);
    REQUIRE(line.has_value());
    std::smatch port;
    REQUIRE(std::regex_search(*line, port, std::regex(R"(127\.0\.0\.1:(\d+))")));
    auto url = "http://127.0.0.1:" + port[1].str() + "/mcp";

    auto script = std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/run_conformance.sh";
    auto out_dir = "CONFORMANCE_OUTPUT_DIR=" + (d.dir.path() / "results").string();
    auto run = run_command({"env", out_dir, "bash", script, url}, 600s);
    INFO(run.out);
    INFO(run.err);
    CHECK(run.exit_code == 0);
    std::smatch total;
    REQUIRE(std::regex_search(run.out, total, std::regex(R"(Total: (\d+) passed, (\d+) failed)")));
    CHECK(std::stoi(total[1].str()) > 0);
    CHECK(total[2].str() == "0");
    // The suite's own count of failed checks, warnings included, from its saved results.
    CHECK_THAT(run.out, Catch::Contains("checks with FAILURE: 0,"));

    airlock.signal(SIGTERM);
    CHECK(airlock.wait(20s) == 0);
    // What the suite read and got through airlock is on the record, and the record holds together.
    auto verified = run_command({AIRLOCK_BINARY, "journal", "verify", "--all", "--journal", (d.dir.path() / "journal").string()});
    INFO(verified.out);
    CHECK(verified.exit_code == 0);
}
