#pragma once
// What the runner keeps per run it drives (a slot) and per async_wait caller: shared by the
// runner's admission and control (runner.cpp), its slots (runner_slots.cpp) and the driver.

#include "service/agents/runner.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <memory>
#include <string>

namespace airlock::service {

using cancel_channel = boost::asio::experimental::concurrent_channel<void(boost::system::error_code)>;

struct runner::run_slot {
    std::string run_id;
    std::atomic<bool> cancel{false};
    bool counted = true;  // holds one of max_concurrent_runs
    // Rung by async_cancel (safe from any thread; a ring before anyone listens is kept): a model
    // call under way is no longer waited for. Absent for replays, which make no calls.
    std::shared_ptr<cancel_channel> cancelled;
};

// One async_wait caller. The driver's thread signals it through a channel (safe from any thread,
// and a signal sent before the caller starts waiting is kept), never through the caller's timer.
struct runner::waiter {
    explicit waiter(boost::asio::any_io_executor ex) : wake(std::move(ex), 1) {}
    cancel_channel wake;
};

}  // namespace airlock::service
