#pragma once
// A wake-up one coroutine awaits and any thread gives: what the gateway waits on instead of
// polling a timer (a run being admitted, a catalogue being read, probes ending, seals ending).
// A wake() that comes before the wait is kept, so the waiter re-checks its condition under its
// lock, registers, unlocks and waits without losing a wake-up given in between.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <memory>

namespace airlock::service {

class waiter {
public:
    explicit waiter(boost::asio::any_io_executor exec);

    // Thread-safe; any number of times (the first one counts).
    void wake();
    // Resumes once woken, or at `until`, whichever comes first; true when woken. time_point::max()
    // waits for the wake-up alone.
    boost::asio::awaitable<bool> async_wait_until(std::chrono::steady_clock::time_point until);

private:
    using channel = boost::asio::experimental::concurrent_channel<void(boost::system::error_code, bool)>;
    std::shared_ptr<channel> woken_;
};

}  // namespace airlock::service
