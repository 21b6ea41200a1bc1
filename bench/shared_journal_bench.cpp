// The shared journal against the embedded one: durable appends of effect records from 256
// concurrent runs on LMDB, on PostgreSQL 15 through one store (one replica), and through two
// stores on one database (two replicas' worth of connections and group commits, in one process).
// Each store in durable mode: LMDB fsyncs every commit, PostgreSQL flushes its WAL (fsync on,
// synchronous_commit on). Prints a table and one JSON line; it never passes or fails on time.
//
//   build/bench/bench_shared_journal_bench [--runs N] [--per-run N]
//
// Everything lives under /tmp: LMDB's file and PostgreSQL's data directory are on the same disk.

#include "bench/journal_records.hpp"
#include "store/lmdb_store.hpp"
#include "store/postgres_store.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace airlock;
using clock_type = std::chrono::steady_clock;

namespace {

struct cell {
    std::string store;
    std::size_t appends = 0;
    std::size_t failed = 0;
    double seconds = 0;
    double p50_us = 0, p99_us = 0;
    std::uint64_t batches = 0;
};

using bench::admitted;
using bench::effect;
using bench::percentile;


// `runs` coroutines, run r on stores[r % stores.size()], each admitting its run and then
// appending `per_run` effect records one after another, as an agent's calls do.
cell measure(std::string name, std::vector<core::journal_store*> const& stores, int runs, int per_run) {
    std::vector<double> latencies;
    std::size_t failed = 0;
    std::mutex m;
    asio::thread_pool pool(2);
    auto start = clock_type::now();
    for (int r = 0; r < runs; ++r) {
        auto task = [&, r]() -> asio::awaitable<void> {
            auto& s = *stores[static_cast<std::size_t>(r) % stores.size()];
            auto run = name + "-" + std::to_string(r);
            std::vector<double> mine;
            std::size_t mine_failed = 0;
            std::vector<core::new_record> admit{admitted()};  // named: GCC 12 and co_await
            if (co_await s.async_append(run, std::move(admit))) {
                for (int i = 0; i < per_run; ++i) {
                    auto t0 = clock_type::now();
                    std::vector<core::new_record> next{effect(i)};
                    auto done = co_await s.async_append(run, std::move(next));
                    if (!done) ++mine_failed;
                    mine.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
                }
            } else {
                mine_failed += static_cast<std::size_t>(per_run);
            }
            std::lock_guard lock(m);
            latencies.insert(latencies.end(), mine.begin(), mine.end());
            failed += mine_failed;
        };
        asio::co_spawn(pool, task, asio::detached);
    }
    pool.join();
    cell c;
    c.store = std::move(name);
    c.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    c.appends = latencies.size() - failed;
    c.failed = failed;
    c.p50_us = percentile(latencies, 0.50);
    c.p99_us = percentile(latencies, 0.99);
    return c;
}

std::unique_ptr<store::postgres_store> open_pg(std::string const& url) {
    store::postgres_options o;
    o.conninfo = url;
    auto s = store::postgres_store::open(std::move(o));
    if (!s) {
        std::cerr << "cannot open the PostgreSQL journal: " << s.error().message << "\n";
        std::exit(1);
    }
    return std::move(*s);
}

}  // namespace

int main(int argc, char** argv) {
    int runs = 256, per_run = 100;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
        else if (a == "--per-run" && i + 1 < argc) per_run = std::max(1, std::atoi(argv[++i]));
        else {
            std::cerr << "usage: shared_journal_bench [--runs N] [--per-run N]\n";
            return 2;
        }
    }
    std::vector<cell> cells;
    {
        testing::temp_dir dir{"airlock-shared-bench"};
        auto s = store::lmdb_store::open({dir.path(), std::size_t{4} << 30, store::durability::durable});
        if (!s) return std::cerr << s.error().message << "\n", 1;
        cells.push_back(measure("lmdb", {s->get()}, runs, per_run));
        cells.back().batches = (*s)->writer_stats().batches;
    }
    testing::postgres_settings settings;
    settings.fsync = true;
    testing::postgres_server server(settings);
    {
        auto s = open_pg(server.create_database());
        cells.push_back(measure("postgres-1", {s.get()}, runs, per_run));
        cells.back().batches = s->writer_stats().batches;
    }
    {
        auto url = server.create_database();
        auto a = open_pg(url);
        auto b = open_pg(url);
        cells.push_back(measure("postgres-2", {a.get(), b.get()}, runs, per_run));
        cells.back().batches = a->writer_stats().batches + b->writer_stats().batches;
    }

    std::printf("%d runs, %d durable effect appends each, after its admission\n", runs, per_run);
    std::printf("%-11s %9s %7s %12s %10s %10s %9s %14s\n", "store", "appends", "failed", "appends/s", "p50 us", "p99 us",
                "commits", "appends/commit");
    boost::json::array rows;
    for (auto const& c : cells) {
        double rate = static_cast<double>(c.appends) / c.seconds;
        double per_commit = c.batches ? static_cast<double>(c.appends + static_cast<std::size_t>(runs)) / static_cast<double>(c.batches) : 0;
        std::printf("%-11s %9zu %7zu %12.0f %10.0f %10.0f %9llu %14.1f\n", c.store.c_str(), c.appends, c.failed, rate,
                    c.p50_us, c.p99_us, static_cast<unsigned long long>(c.batches), per_commit);
        rows.push_back({{"store", c.store}, {"appends", c.appends}, {"failed", c.failed}, {"appends_per_s", rate},
                        {"p50_us", c.p50_us}, {"p99_us", c.p99_us}, {"commits", c.batches}});
    }
    std::cout << boost::json::serialize(boost::json::object{{"bench", "shared_journal"}, {"runs", runs}, {"cells", rows}})
              << "\n";
}
