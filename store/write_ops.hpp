#pragma once
// The LMDB journal's write queue: what a queued write is, and how its outcome reaches the coroutine
// that waits for it. Internal to store/ (lmdb_store.cpp is its one user).

#include "core/error.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <lmdb.h>

#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>

namespace airlock::store::detail {

struct read_txn {
    MDB_txn* txn = nullptr;
    ~read_txn() {
        if (txn) mdb_txn_abort(txn);
    }
};

// One queued write. The writer runs it inside the batch's transaction (or a child transaction of
// it, see commit_batch) and completes the waiting coroutine after the batch commits. It may be run
// more than once, so it reads and writes nothing but the transaction it is given.
struct write_op {
    bool deferred = false;                      // see lmdb_store::async_append_deferred
    std::chrono::steady_clock::time_point due;  // deferred: committed by then at the latest
    virtual ~write_op() = default;
    virtual bool run(MDB_txn* txn) = 0;                      // true: keep what it wrote; false: it refused
    virtual void fail(core::error e) = 0;                    // the batch could not be made durable
    virtual void complete() = 0;                             // hands the result to the waiting coroutine
    virtual std::optional<core::error> failure() const = 0;  // after run/fail: why it failed
};

// An op that computes a core::result<T> in the transaction.
template <class T>
struct result_op : write_op {
    using fn_type = std::function<core::result<T>(MDB_txn*)>;
    fn_type fn;
    core::result<T> outcome = core::make_error(core::errc::internal, "operation did not run");

    explicit result_op(fn_type f) : fn(std::move(f)) {}
    bool run(MDB_txn* txn) override {
        // An exception must never leave the committing thread (it would end the process); it fails
        // this append alone, and what it wrote is undone.
        try {
            outcome = fn(txn);
        } catch (std::exception const& e) {
            outcome = core::make_error(core::errc::internal, std::string("append failed: ") + e.what());
        }
        return outcome.has_value();
    }
    void fail(core::error e) override {
        if (outcome.has_value()) outcome = std::move(e);
    }
    std::optional<core::error> failure() const override {
        return outcome.has_value() ? std::nullopt : std::optional<core::error>(outcome.error());
    }
};

// An op queued for the writer: its outcome is posted to the waiting coroutine's executor.
template <class T, class Handler>
struct typed_op final : result_op<T> {
    Handler handler;
    boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler>> work;

    typed_op(typename result_op<T>::fn_type f, Handler h)
        : result_op<T>(std::move(f)), handler(std::move(h)),
          work(boost::asio::make_work_guard(boost::asio::get_associated_executor(handler))) {}

    void complete() override {
        auto ex = work.get_executor();
        auto h = std::move(handler);
        auto r = std::move(this->outcome);
        boost::asio::post(ex, [h = std::move(h), r = std::move(r)]() mutable { std::move(h)(std::move(r)); });
        // Only after post has returned: post signals the io_context's threads after it has queued
        // the handler, and a one-shot io_context (the CLI's, a test's) whose last work ran meanwhile
        // would be destroyed under it. Held until here, the guard keeps it running (ThreadSanitizer).
        work.reset();
    }
};

// An op committed by the coroutine that submitted it (see lmdb_store::impl::try_commit_inline):
// its outcome is read after the commit, with nothing to post.
template <class T>
struct inline_op final : result_op<T> {
    using result_op<T>::result_op;
    void complete() override {}
};

}  // namespace airlock::store::detail
