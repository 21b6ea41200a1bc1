#include "core/metrics.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

using namespace airlock::core::metrics;

TEST_CASE("a counter family renders its HELP, TYPE and one sample per label set") {
    registry r;
    auto& calls = r.add_counter("airlock_calls_total", "Calls made.", {"server", "outcome"});
    calls.with({"ledger", "ok"}).inc();
    calls.with({"ledger", "ok"}).inc(2);
    calls.with({"ledger", "timed_out"}).inc();
    auto text = r.render();
    CHECK(text ==
          "# HELP airlock_calls_total Calls made.\n"
          "# TYPE airlock_calls_total counter\n"
          "airlock_calls_total{server=\"ledger\",outcome=\"ok\"} 3\n"
          "airlock_calls_total{server=\"ledger\",outcome=\"timed_out\"} 1\n");
}

TEST_CASE("an unlabelled metric is present at zero before anything is recorded") {
    registry r;
    r.add_gauge("airlock_sessions", "Open sessions.");
    CHECK(r.render() == "# HELP airlock_sessions Open sessions.\n# TYPE airlock_sessions gauge\nairlock_sessions 0\n");
}

TEST_CASE("a sampled value renders as the counter or gauge it is, fractions kept") {
    registry r;
    r.add_sampled_counter("process_cpu_seconds_total", "CPU seconds.").with({}).set(1.25);
    auto& start = r.add_sampled_gauge("process_start_time_seconds", "Start time.");
    start.with({}).set(1764756000.5);
    start.with({}).set(1764756001.75);  // set whole: the last reading is what a scrape shows
    CHECK(r.render() ==
          "# HELP process_cpu_seconds_total CPU seconds.\n# TYPE process_cpu_seconds_total counter\n"
          "process_cpu_seconds_total 1.25\n"
          "# HELP process_start_time_seconds Start time.\n# TYPE process_start_time_seconds gauge\n"
          "process_start_time_seconds 1764756001.75\n");
}

TEST_CASE("a histogram renders cumulative buckets, +Inf, sum and count") {
    registry r;
    auto& h = r.add_histogram("airlock_latency_seconds", "Latency.", {"route"}, {0.125, 1});
    auto& mcp = h.with({"/mcp"});
    mcp.observe(0.0625);
    mcp.observe(0.125);  // "less than or equal": the 0.125 bucket
    mcp.observe(0.5);
    mcp.observe(7);
    CHECK(r.render() ==
          "# HELP airlock_latency_seconds Latency.\n"
          "# TYPE airlock_latency_seconds histogram\n"
          "airlock_latency_seconds_bucket{route=\"/mcp\",le=\"0.125\"} 2\n"
          "airlock_latency_seconds_bucket{route=\"/mcp\",le=\"1\"} 3\n"
          "airlock_latency_seconds_bucket{route=\"/mcp\",le=\"+Inf\"} 4\n"
          "airlock_latency_seconds_sum{route=\"/mcp\"} 7.6875\n"
          "airlock_latency_seconds_count{route=\"/mcp\"} 4\n");
}

TEST_CASE("label values with quotes, backslashes and line breaks are escaped") {
    registry r;
    auto& f = r.add_counter("x_total", "A \\ help\nline.", {"tool"});
    f.with({"a\"b\\c\nd"}).inc();
    auto text = r.render();
    CHECK_THAT(text, Catch::Contains("# HELP x_total A \\\\ help\\nline.\n"));
    CHECK_THAT(text, Catch::Contains("x_total{tool=\"a\\\"b\\\\c\\nd\"} 1\n"));
}

TEST_CASE("a family past its series limit counts further label sets under _overflow") {
    registry r;
    auto& f = r.add_counter("calls_total", "Calls.", {"tool"}, 2);
    f.with({"a"}).inc();
    f.with({"b"}).inc();
    f.with({"c"}).inc();
    f.with({"d"}).inc();
    f.with({"a"}).inc();
    CHECK(f.size() == 3);
    auto text = r.render();
    CHECK_THAT(text, Catch::Contains("calls_total{tool=\"a\"} 2\n"));
    CHECK_THAT(text, Catch::Contains("calls_total{tool=\"_overflow\"} 2\n"));
    CHECK_THAT(text, !Catch::Contains("tool=\"c\""));
}

TEST_CASE("concurrent recording from many threads loses no increment") {
    registry r;
    auto& f = r.add_counter("calls_total", "Calls.", {"tool"});
    auto& h = r.add_histogram("took_seconds", "Took.", {}, {1});
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 10'000; ++i) {
                std::string tool = "t" + std::to_string(i % 50);
                f.with({tool}).inc();
                h.with({}).observe(t % 2 ? 0.5 : 2);
            }
        });
    for (auto& t : threads) t.join();
    std::uint64_t total = 0;
    for (int i = 0; i < 50; ++i) total += f.with({"t" + std::to_string(i)}).value();
    CHECK(total == 40'000);
    CHECK(f.size() == 50);
    auto snap = h.with({}).read();
    CHECK(snap.cumulative == std::vector<std::uint64_t>{20'000, 40'000});
    CHECK(snap.sum == Approx(50'000));
}

TEST_CASE("metric and label names outside the exposition format's grammar are refused") {
    registry r;
    CHECK_THROWS_AS(r.add_counter("bad-name", "x"), std::invalid_argument);
    CHECK_THROWS_AS(r.add_counter("ok_total", "x", {"le"}), std::invalid_argument);
    CHECK_THROWS_AS(r.add_counter("ok_total", "x", {"9lives"}), std::invalid_argument);
    r.add_counter("ok_total", "x");
    CHECK_THROWS_AS(r.add_gauge("ok_total", "again"), std::invalid_argument);
    CHECK_THROWS_AS(r.add_histogram("h", "x", {}, {1, 1}), std::invalid_argument);
}

TEST_CASE("the wrong number of label values is a bug, not a new series") {
    registry r;
    auto& f = r.add_counter("calls_total", "Calls.", {"server", "tool"});
    CHECK_THROWS_AS(f.with({"only-one"}), std::invalid_argument);
    CHECK(f.size() == 0);
}
