// Journal throughput and latency: durable and fast modes, 1/16/256 concurrent writers, and
// sequential reads. Prints a table and one JSON line; it never passes or fails on time.
//
//   build/bench/bench_journal_bench [--dir DIR] [--scale N]
//
// DIR defaults to a fresh directory under /tmp (use a real disk to measure real fsyncs).

#include "bench/journal_records.hpp"
#include "store/lmdb_store.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace airlock;
using clock_type = std::chrono::steady_clock;

namespace {

struct figures {
    std::string mode;
    int writers = 0;
    std::size_t records = 0;
    double seconds = 0;
    double p50_us = 0;
    double p99_us = 0;
    std::uint64_t batches = 0;
};

using bench::admitted;
using bench::effect;
using bench::percentile;


figures measure(std::filesystem::path const& dir, store::durability mode, int writers, int per_writer) {
    std::filesystem::remove_all(dir);
    auto opened = store::lmdb_store::open({dir, std::size_t{4} << 30, mode});
    if (!opened) {
        std::cerr << "cannot open journal: " << opened.error().message << "\n";
        std::exit(1);
    }
    auto& s = *opened;
    std::vector<double> latencies;
    std::mutex m;
    asio::thread_pool pool(2);
    auto start = clock_type::now();
    for (int w = 0; w < writers; ++w) {
        auto task = [&, w]() -> asio::awaitable<void> {
            auto run = "bench-" + std::to_string(w);
            std::vector<double> mine;
            mine.reserve(static_cast<std::size_t>(per_writer));
            // Named first: GCC 12 mishandles braced temporaries inside co_await expressions.
            std::vector<core::new_record> admit{admitted()};
            auto a = co_await s->async_append(run, std::move(admit));
            if (!a) co_return;
            for (int i = 0; i < per_writer; ++i) {
                auto t0 = clock_type::now();
                std::vector<core::new_record> next{effect(i)};
                auto r = co_await s->async_append(run, std::move(next));
                auto t1 = clock_type::now();
                if (!r) {
                    std::cerr << "append failed: " << r.error().message << "\n";
                    co_return;
                }
                mine.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            }
            std::lock_guard lock(m);
            latencies.insert(latencies.end(), mine.begin(), mine.end());
        };
        asio::co_spawn(pool, task, asio::detached);
    }
    pool.join();
    auto secs = std::chrono::duration<double>(clock_type::now() - start).count();
    figures f;
    f.mode = mode == store::durability::durable ? "durable" : "fast";
    f.writers = writers;
    f.records = latencies.size();
    f.seconds = secs;
    f.p50_us = percentile(latencies, 0.50);
    f.p99_us = percentile(latencies, 0.99);
    f.batches = s->writer_stats().batches;
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    std::filesystem::path base = std::filesystem::temp_directory_path() / ("airlock-journal-bench-" + std::to_string(getpid()));
    int scale = 1;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--dir" && i + 1 < argc) base = argv[++i];
        else if (a == "--scale" && i + 1 < argc) scale = std::max(1, std::atoi(argv[++i]));
        else {
            std::cerr << "usage: journal_bench [--dir DIR] [--scale N]\n";
            return 2;
        }
    }
    std::vector<figures> all;
    for (auto mode : {store::durability::durable, store::durability::fast}) {
        for (int writers : {1, 16, 256}) {
            // Bounded work: about 2,000-25,000 appends per cell, times --scale.
            int per_writer = (writers == 1 ? 2000 : writers == 16 ? 500 : 100) * scale;
            all.push_back(measure(base / "w", mode, writers, per_writer));
        }
    }

    // Sequential read of what the last cell wrote.
    double read_rate = 0;
    std::size_t read_records = 0;
    {
        auto s = store::lmdb_store::open({base / "w", std::size_t{4} << 30});
        if (s) {
            auto t0 = clock_type::now();
            for (int w = 0; w < 256; ++w) {
                auto recs = (*s)->read("bench-" + std::to_string(w));
                if (recs) read_records += recs->size();
            }
            read_rate = static_cast<double>(read_records) / std::chrono::duration<double>(clock_type::now() - t0).count();
        }
    }
    std::filesystem::remove_all(base);

    std::printf("%-8s %8s %9s %12s %10s %10s %9s\n", "mode", "writers", "records", "records/s", "p50 us", "p99 us", "batches");
    boost::json::array rows;
    for (auto const& f : all) {
        double rate = static_cast<double>(f.records) / f.seconds;
        std::printf("%-8s %8d %9zu %12.0f %10.1f %10.1f %9llu\n", f.mode.c_str(), f.writers, f.records, rate, f.p50_us,
                    f.p99_us, static_cast<unsigned long long>(f.batches));
        rows.push_back({{"mode", f.mode}, {"writers", f.writers}, {"records", f.records}, {"records_per_s", rate},
                        {"p50_us", f.p50_us}, {"p99_us", f.p99_us}, {"batches", f.batches}});
    }
    std::printf("sequential read: %zu records, %.0f records/s\n", read_records, read_rate);
    boost::json::object out{{"bench", "journal"}, {"cells", rows}, {"sequential_read_records_per_s", read_rate}};
    std::cout << boost::json::serialize(out) << "\n";
}
