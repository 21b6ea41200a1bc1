#pragma once
// Sending a notification through a callable that must outlive the send.

#include "mcp/protocol/messages.hpp"

#include <boost/asio/awaitable.hpp>

#include <functional>

namespace airlock::service {

// Sends through `notify` while holding it: the coroutine it returns may refer to the callable
// (a capturing coroutine lambda does), which must outlive it.
inline boost::asio::awaitable<void> async_send_holding(
    std::function<boost::asio::awaitable<void>(mcp::notification)> notify, mcp::notification n) {
    co_await notify(std::move(n));
}

}  // namespace airlock::service
