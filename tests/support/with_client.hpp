#pragma once
// Runs a test body against an MCP client on a private io_context, then always closes the client
// (stopping any child it started), and rethrows what the body threw. Results travel through
// variables the body captures by reference.

#include "mcp/client/client.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <exception>

namespace airlock::testing {

template <class F>
void with_client(boost::asio::io_context& ioc, mcp::mcp_client& c, F body) {
    auto task = [&]() -> boost::asio::awaitable<void> {
        std::exception_ptr failure;
        try {
            co_await body();
        } catch (...) {
            failure = std::current_exception();
        }
        co_await c.async_close();
        if (failure) std::rethrow_exception(failure);
    };
    auto fut = boost::asio::co_spawn(ioc, task(), boost::asio::use_future);
    ioc.run();
    fut.get();
}

}  // namespace airlock::testing
