#pragma once
// A unit of work queued for a store's own thread (the LMDB writer, a PostgreSQL connection's
// thread), and how its outcome reaches the coroutine that waits for it. `Context` is what the thread
// runs it against: an LMDB transaction, a database connection. Internal to store/.

#include "core/error.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>

namespace airlock::store::detail {

// One queued op. The thread runs it (perhaps more than once, so it touches nothing but `Context`)
// and completes the waiting coroutine after its transaction commits.
template <class Context>
struct basic_queued_op {
    bool deferred = false;                      // committed with a later op that must be durable now
    std::chrono::steady_clock::time_point due;  // deferred: committed by then at the latest
    virtual ~basic_queued_op() = default;
    virtual bool run(Context ctx) = 0;                       // true: keep what it wrote; false: it refused
    virtual void fail(core::error e) = 0;                    // its transaction could not be made durable
    virtual void complete() = 0;                             // hands the result to the waiting coroutine
    virtual std::optional<core::error> failure() const = 0;  // after run/fail: why it failed
};

// An op that computes a core::result<T> against the context.
template <class T, class Context>
struct basic_result_op : basic_queued_op<Context> {
    using fn_type = std::function<core::result<T>(Context)>;
    fn_type fn;
    core::result<T> outcome = core::make_error(core::errc::internal, "operation did not run");

    bool ran = false;

    explicit basic_result_op(fn_type f) : fn(std::move(f)) {}
    bool run(Context ctx) override {
        ran = true;
        // An exception must never leave the store's thread (it would end the process); it fails
        // this op alone, and what it wrote is undone.
        try {
            outcome = fn(ctx);
        } catch (std::exception const& e) {
            outcome = core::make_error(core::errc::internal, std::string("journal operation failed: ") + e.what());
        }
        return outcome.has_value();
    }
    void fail(core::error e) override {
        // An op that never ran takes the reason too: "did not run" would tell its caller nothing.
        if (outcome.has_value() || !ran) outcome = std::move(e);
    }
    std::optional<core::error> failure() const override {
        return outcome.has_value() ? std::nullopt : std::optional<core::error>(outcome.error());
    }
};

// An op whose outcome is posted to the waiting coroutine's executor.
template <class T, class Handler, class Context>
struct basic_posted_op final : basic_result_op<T, Context> {
    Handler handler;
    boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler>> work;

    basic_posted_op(typename basic_result_op<T, Context>::fn_type f, Handler h)
        : basic_result_op<T, Context>(std::move(f)), handler(std::move(h)),
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

}  // namespace airlock::store::detail
