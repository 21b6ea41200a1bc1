// mcp::co_await_on: a task awaited on another strand hears the caller's cancellation there.
#include "mcp/client/on_strand.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>

using namespace airlock;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using strand_type = asio::strand<asio::io_context::executor_type>;

}  // namespace

TEST_CASE("a task awaited on another strand ends when its caller is cancelled", "[on_strand]") {
    asio::io_context ioc;
    strand_type caller_strand = asio::make_strand(ioc), task_strand = asio::make_strand(ioc);
    asio::cancellation_signal cancel;
    std::optional<boost::system::error_code> task_saw;
    bool caller_ended = false;

    auto task = [&]() -> asio::awaitable<void> {
        asio::steady_timer t(task_strand, 1h);
        auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        task_saw = ec;
    };
    auto caller = [&]() -> asio::awaitable<void> {
        auto work = task();
        co_await mcp::co_await_on(task_strand, std::move(work));
        caller_ended = true;
    };
    asio::co_spawn(caller_strand, caller(), asio::bind_cancellation_slot(cancel.slot(), asio::detached));
    ioc.poll();
    REQUIRE_FALSE(task_saw.has_value());
    auto emit = [&] { cancel.emit(asio::cancellation_type::terminal); };
    asio::post(caller_strand, emit);
    ioc.run_for(5s);
    REQUIRE(task_saw.has_value());
    CHECK(*task_saw == asio::error::operation_aborted);
    CHECK(caller_ended);
}
