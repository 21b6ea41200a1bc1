#pragma once
// Awaiting a coroutine that runs on another strand, with the caller's cancellation carried there.
//
// Why not plain `co_await asio::co_spawn(strand, task, use_awaitable)`: in Boost 1.81 (asio 1.25),
// co_spawn forwards the caller's cancellation by dispatching to the strand a function that holds a
// bare pointer to a signal stored in the caller's cancellation slot. When the caller is cancelled
// from its own strand just as the task ends on the other one, the function is queued, the caller
// resumes and starts its next operation (which takes over that slot), and the function then emits on
// a destroyed signal. airlock's shutdown does exactly that to every parked request (cancelled on its
// strand while its upstream call is failed on the transport's), and `airlock serve` died of SIGSEGV
// now and then on SIGTERM. Later asio keeps that signal alive with a shared_ptr; here the caller's
// slot forwards to a signal of our own, kept alive by the function that is queued, and co_spawn's
// forwarding from it runs only on the strand, where it is immediate.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <memory>
#include <type_traits>
#include <utility>

namespace airlock::mcp {

template <class Strand, class T>
boost::asio::awaitable<T> co_await_on(Strand strand, boost::asio::awaitable<T> task) {
    namespace asio = boost::asio;
    auto forwarded = std::make_shared<asio::cancellation_signal>();
    auto state = co_await asio::this_coro::cancellation_state;
    auto caller = state.slot();
    if (caller.is_connected()) {
        auto forward = [forwarded, strand](asio::cancellation_type type) {
            asio::dispatch(strand, [forwarded, type] { forwarded->emit(type); });
        };
        caller.assign(std::move(forward));
    }
    // The caller's slot goes back to being empty, whichever way the task ends.
    struct release_slot {
        asio::cancellation_slot slot;
        ~release_slot() {
            if (slot.is_connected()) slot.clear();
        }
    } release{caller};
    auto token = asio::bind_cancellation_slot(forwarded->slot(), asio::use_awaitable);
    if constexpr (std::is_void_v<T>) {
        co_await asio::co_spawn(strand, std::move(task), token);
    } else {
        co_return co_await asio::co_spawn(strand, std::move(task), token);
    }
}

}  // namespace airlock::mcp
