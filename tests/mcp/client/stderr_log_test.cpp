#include "mcp/client/stderr_log.hpp"

#include "tests/support/log_capture.hpp"

#include <catch2/catch.hpp>

#include <string>

using airlock::mcp::stderr_log;
using airlock::testing::log_capture;
using namespace std::chrono_literals;

namespace {

// A log of 3 lines every 10 s on a clock the test moves by hand.
struct budgeted {
    log_capture captured;
    stderr_log::clock::time_point t{};
    stderr_log log{"noisy", 3, 10s, [this] { return t; }};

    int lines_with(std::string const& needle) const {
        auto text = captured.text();
        int n = 0;
        for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
        return n;
    }
};

}  // namespace

TEST_CASE("a server's stderr lines are logged one by one, at info, in the order written") {
    budgeted b;
    b.log.take("starting\nlistening on stdio\n");
    b.log.take("half a li");
    b.log.take("ne\n");
    CHECK(b.captured.text() ==
          "info upstream noisy stderr: starting\ninfo upstream noisy stderr: listening on stdio\n"
          "info upstream noisy stderr: half a line\n");
}

TEST_CASE("past its budget a server's stderr is counted, not logged, and told with its last lines after the interval") {
    budgeted b;
    for (int i = 0; i < 1000; ++i) b.log.take("line " + std::to_string(i) + "\n");
    CHECK(b.lines_with("stderr: line") == 3);
    CHECK(b.lines_with("stderr: line 2\n") == 1);
    // Said once, at the first line held back.
    CHECK(b.lines_with(
              "warning upstream noisy: its stderr wrote more than 3 lines within 10 s; further lines are counted, "
              "not logged") == 1);
    b.t += 10s;
    b.log.take("after the pause\n");
    CHECK(b.lines_with("warning upstream noisy: 997 lines of its stderr were not logged (at most 3 are, every 10 s); "
                       "the last 20 follow") == 1);
    // Lines 980 to 999, after the count and before the next line.
    CHECK(b.lines_with("stderr: line") == 23);
    CHECK(b.lines_with("stderr: line 979\n") == 0);
    auto const text = b.captured.text();
    CHECK(text.find("stderr: line 980\n") > text.find("997 lines"));
    CHECK(text.find("stderr: line 999\n") < text.find("stderr: after the pause"));
}

TEST_CASE("what a server's stderr held back is told when the stream ends, its last words included") {
    budgeted b;
    b.log.take("a\nb\nc\nd\ne\nError: the reason it died");
    b.log.finish();
    CHECK(b.lines_with("3 lines of its stderr were not logged (at most 3 are, every 10 s); the last 3 follow") == 1);
    CHECK(b.lines_with("stderr: ") == 6);
    CHECK_THAT(b.captured.text(), Catch::EndsWith("info upstream noisy stderr: Error: the reason it died\n"));
}

TEST_CASE("a server's stderr line over 16 KiB is logged cut, saying so") {
    budgeted b;
    b.log.take(std::string(20 * 1024, 'x') + "\n");
    auto text = b.captured.text();
    CHECK_THAT(text, Catch::EndsWith(" [truncated]\n"));
    CHECK(text.size() < 17 * 1024);
}
