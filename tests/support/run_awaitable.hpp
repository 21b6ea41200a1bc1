#pragma once
// Runs an awaitable to completion on a private io_context: for tests of coroutine APIs.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

namespace airlock::testing {

template <class T>
T run_awaitable(boost::asio::awaitable<T> task) {
    boost::asio::io_context ioc;
    auto fut = boost::asio::co_spawn(ioc, std::move(task), boost::asio::use_future);
    ioc.run();
    return fut.get();
}

}  // namespace airlock::testing
