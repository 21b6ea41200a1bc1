#include "service/app/cpus.hpp"
#include "tests/support/child_process.hpp"

#include <catch2/catch.hpp>

#include <regex>
#include <thread>

using namespace airlock::service;
using namespace airlock::testing;
using namespace std::chrono_literals;

TEST_CASE("a cgroup v2 cpu.max gives the CPUs its quota allows, rounded up") {
    CHECK(cpu_limit_of_cpu_max("200000 100000\n") == 2u);
    CHECK(cpu_limit_of_cpu_max("150000 100000") == 2u);
    CHECK(cpu_limit_of_cpu_max("50000 100000") == 1u);
    CHECK(cpu_limit_of_cpu_max("1000 100000") == 1u);
    CHECK_FALSE(cpu_limit_of_cpu_max("max 100000\n").has_value());
}

TEST_CASE("an unreadable cpu quota sets no limit instead of failing") {
    CHECK_FALSE(cpu_limit_of_cpu_max("").has_value());
    CHECK_FALSE(cpu_limit_of_cpu_max("lots 100000").has_value());
    CHECK_FALSE(cpu_limit_of_cpu_max("100000").has_value());
    CHECK_FALSE(cpu_limit_of_cpu_max("100000 0").has_value());
    CHECK_FALSE(cpu_limit_of_cfs("-1\n", "100000\n").has_value());
    CHECK_FALSE(cpu_limit_of_cfs("x", "100000").has_value());
    CHECK(cpu_limit_of_cfs("300000\n", "100000\n") == 3u);
}

TEST_CASE("the usable CPUs are at least one and no more than the hardware has") {
    auto n = usable_cpus();
    CHECK(n >= 1u);
    auto hw = std::thread::hardware_concurrency();
    if (hw > 0) CHECK(n <= hw);
    // A root without a cgroup file system: the affinity mask alone decides.
    CHECK(usable_cpus("/nonexistent-cgroup-root") >= n);
}

TEST_CASE("serve started on one CPU with taskset runs one I/O thread by default") {
    // The hardware thread count would say 2 or more here; the affinity mask says 1.
    child_process p({"/usr/bin/taskset", "-c", "0", AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0"});
    auto line = p.wait_for_stderr_line("listening on http://", 20s);
    REQUIRE(line.has_value());
    CHECK_THAT(*line, Catch::Contains("1 I/O thread)"));
}

TEST_CASE("an explicit thread count is kept whatever the CPUs") {
    child_process p({"/usr/bin/taskset", "-c", "0", AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0", "--threads", "3"});
    auto line = p.wait_for_stderr_line("listening on http://", 20s);
    REQUIRE(line.has_value());
    CHECK_THAT(*line, Catch::Contains("3 I/O threads)"));
}
