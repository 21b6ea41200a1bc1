#pragma once
// The stores the journal conformance battery runs against, and a helper to run many awaitables at
// once from a test. Each fixture owns one fresh, empty store; every TEMPLATE_TEST_CASE constructs its own.

#include "core/journal.hpp"
#include "store/lmdb_store.hpp"
#include "store/memory_store.hpp"
#include "store/postgres_store.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/run_awaitable.hpp"  // run_awaitable: one awaitable, run to completion

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace airlock::testing {

struct memory_fixture {
    std::unique_ptr<core::journal_store> store;
    memory_fixture() : store(std::make_unique<store::memory_store>()) {}
};

// Every store the battery runs on. A new store gets the whole battery by adding its fixture here
// (comma-separated; a fixture is default-constructible and exposes `store`). The names are left
// unqualified because Catch2 appends them to each test's name; the battery brings them into scope
// with `using namespace airlock::testing`.
// A real LMDB journal in a fresh directory; `dir` is declared first so the store closes before the
// directory is removed.
struct lmdb_fixture {
    temp_dir dir;
    std::unique_ptr<core::journal_store> store;
    lmdb_fixture() {
        auto opened = store::lmdb_store::open({dir.path(), std::size_t{256} << 20});
        if (!opened) throw std::runtime_error(opened.error().message);
        store = std::move(*opened);
    }
};

// A real PostgreSQL journal in a fresh database of the test process's one server (initdb'd and
// started at first use, stopped at exit). ctest runs every case on it as one entry (one server
// start), "store_tests: the journal store battery and the PostgreSQL store's own cases".
struct postgres_fixture {
    std::unique_ptr<core::journal_store> store;
    postgres_fixture() {
        store::postgres_options o;
        o.conninfo = postgres_server::shared().create_database();
        auto opened = store::postgres_store::open(std::move(o));
        if (!opened) throw std::runtime_error(opened.error().message);
        store = std::move(*opened);
    }
};

#define AIRLOCK_JOURNAL_STORE_FIXTURES memory_fixture, lmdb_fixture, postgres_fixture

// Runs every awaitable at once on one io_context served by `threads` threads, the way the service
// runs many sessions, and returns when all have finished. The first exception is rethrown here.
// Catch2's assertions are not thread-safe: the awaitables record outcomes for the test to check after.
inline void run_concurrently(std::vector<boost::asio::awaitable<void>> ops, int threads) {
    boost::asio::io_context ctx(threads);
    std::mutex failure_mutex;
    std::exception_ptr failure;
    for (auto& op : ops) {
        auto on_done = [&](std::exception_ptr e) {
            std::lock_guard lock(failure_mutex);
            if (e && !failure) failure = e;
        };
        boost::asio::co_spawn(ctx, std::move(op), on_done);
    }
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) pool.emplace_back([&ctx] { ctx.run(); });
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace airlock::testing
