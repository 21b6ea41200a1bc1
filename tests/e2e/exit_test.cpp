// What airlock holds is released when it stops: run under valgrind's leak check, `airlock serve`
// (stopped by SIGTERM after serving a little) and `airlock stdio` (stopped by end of input) leave
// nothing definitely or indirectly lost. A cycle of shared ownership among the service's parts
// (the metrics, the gateway, the journal) would keep all of them, and the LMDB environment would
// never be closed. In a sanitized build (make test-asan / test-tsan) valgrind cannot run the binary:
// there AddressSanitizer's leak check does the same at exit (a leak makes the exit code non-zero),
// and under ThreadSanitizer only the clean exit is checked.
#include "tests/support/child_process.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {

constexpr char const* valgrind = "/usr/bin/valgrind";
constexpr char const* token = "alice-exit-0123456789abcdef";
// Valgrind's exit code when it found a leak of the kinds asked for; airlock never exits with it.
constexpr int leak_exit = 97;
#ifdef AIRLOCK_SANITIZED
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif

// valgrind and its options before the airlock command line. The airlock binary allocates with
// jemalloc, whose functions valgrind must be told to watch.
std::vector<std::string> under_valgrind(std::filesystem::path const& report, std::vector<std::string> command) {
#ifdef AIRLOCK_SANITIZED
    (void)report;
    command.insert(command.begin(), AIRLOCK_BINARY);
    return command;
#else
    std::vector<std::string> argv{valgrind,
                                  "--leak-check=full",
                                  "--errors-for-leak-kinds=definite,indirect",
                                  "--show-leak-kinds=definite,indirect",
                                  "--error-exitcode=" + std::to_string(leak_exit),
                                  "--soname-synonyms=somalloc=*jemalloc*",
                                  "--log-file=" + report.string(),
                                  AIRLOCK_BINARY};
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
#endif
}

// A gateway with no upstream (so no child runs under valgrind): the journal, the metrics and one
// principal are what is built at start either way.
struct quiet_deployment : gateway_deployment {
    quiet_deployment() : gateway_deployment(token) {
        std::ofstream(config) << "journal: { dir: journal }\n"
                              << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n";
    }
    std::filesystem::path report = dir.path() / "valgrind.txt";
};

}  // namespace

TEST_CASE("airlock serve stopped by SIGTERM leaves no memory lost: its parts own each other in no cycle") {
    if (!sanitized && !std::filesystem::exists(valgrind)) {
        WARN("valgrind is not installed; not checked");
        return;
    }
    quiet_deployment d;
    child_process airlock(under_valgrind(d.report, {"serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"}));
    auto port = wait_listening(airlock, 120s);
    // A scrape runs the samplers the metrics hold; a call to /mcp makes a session's run.
    CHECK(http_get(port, "/metrics").status == 200);
    CHECK(modern_post(port, token, "tools/list", "", "").status == 200);
    airlock.signal(SIGTERM);
    auto rc = airlock.wait(120s);
    INFO(file_text(d.report) << airlock.stderr_text());
    CHECK(rc == 0);
}

TEST_CASE("airlock stdio ended by end of input leaves no memory lost") {
    if (!sanitized && !std::filesystem::exists(valgrind)) {
        WARN("valgrind is not installed; not checked");
        return;
    }
    quiet_deployment d;
    child_process airlock(under_valgrind(d.report, {"stdio", "--config", d.config.string()}), {}, child_stdin::pipe);
    REQUIRE(airlock.write_stdin(
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"exit-test","version":"1"}}})"
        "\n"));
    for (int i = 0; i < 1200 && airlock.stdout_text().find("\"id\":1") == std::string::npos; ++i)
        std::this_thread::sleep_for(100ms);
    airlock.close_stdin();
    auto rc = airlock.wait(120s);
    INFO(airlock.stdout_text() << file_text(d.report) << airlock.stderr_text());
    CHECK(rc == 0);
}
