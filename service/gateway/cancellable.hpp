#pragma once
// A forwarded operation the downstream client's cancellation reaches.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <optional>
#include <utility>

namespace airlock::service {

// A caller's cancellation passed on to the call it cancels, remembering that it came.
struct cancellation_seen {
    boost::asio::cancellation_signal inner;
    bool seen = false;
};

// Runs `op` as a child that the client's cancellation reaches (the transport then tells the
// upstream); nullopt when it was cancelled before it finished. The slot is cleared afterwards: it
// outlives the child, and a late cancellation must find nothing to call.
template <class T>
boost::asio::awaitable<std::optional<T>> async_cancellable(boost::asio::cancellation_slot slot,
                                                           boost::asio::awaitable<T> op) {
    namespace asio = boost::asio;
    auto exec = co_await asio::this_coro::executor;
    std::optional<T> out;
    try {
        auto token = asio::bind_cancellation_slot(slot, asio::use_awaitable);
        out = co_await asio::co_spawn(exec, std::move(op), token);
    } catch (boost::system::system_error const& e) {
        slot.clear();
        if (e.code() != asio::error::operation_aborted) throw;
        co_return std::nullopt;
    }
    slot.clear();
    co_return out;
}

}  // namespace airlock::service
