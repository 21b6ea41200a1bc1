#include "service/gateway/waiter.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <optional>
#include <tuple>

namespace airlock::service {

namespace asio = boost::asio;

waiter::waiter(asio::any_io_executor exec) : woken_(std::make_shared<channel>(std::move(exec), 1)) {}

void waiter::wake() { woken_->try_send(boost::system::error_code{}, true); }

asio::awaitable<bool> waiter::async_wait_until(std::chrono::steady_clock::time_point until) {
    // The timeout is one more sender on the same channel, so the wait is a single receive: no
    // awaitable operator, which would need the caller to be on a strand.
    std::optional<asio::steady_timer> timer;
    if (until != std::chrono::steady_clock::time_point::max()) {
        timer.emplace(co_await asio::this_coro::executor, until);
        timer->async_wait([woken = woken_](boost::system::error_code ec) {
            if (!ec) woken->try_send(boost::system::error_code{}, false);
        });
    }
    auto [ec, woke] = co_await woken_->async_receive(asio::as_tuple(asio::use_awaitable));
    if (timer) timer->cancel();
    co_return !ec && woke;
}

}  // namespace airlock::service
