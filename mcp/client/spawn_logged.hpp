#pragma once
// Starting a task nobody awaits. `co_spawn(ex, task, detached)` drops whatever the task throws, so a
// bug in a background task (a probe, a keep-alive, a reload) would vanish without a trace. Every
// fire-and-forget task in airlock starts through spawn_logged instead: an exception that escapes the
// task is logged at error with the task's name; a task ended by cancellation (shutdown) is not an
// error and is logged at debug.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <spdlog/spdlog.h>

#include <exception>
#include <string_view>
#include <utility>

namespace airlock::mcp {

// Logs how a task nobody awaits ended, for a completion handler of its own. `what` names the task
// ("gateway probe", "stdio keep-alive").
inline void log_task_end(std::string_view what, std::exception_ptr e) noexcept {
    if (!e) return;
    try {
        std::rethrow_exception(e);
    } catch (boost::system::system_error const& err) {
        if (err.code() == boost::asio::error::operation_aborted) {
            spdlog::debug("background task '{}' was cancelled", what);
        } else {
            spdlog::error("background task '{}' failed: {}", what, err.what());
        }
    } catch (std::exception const& err) {
        spdlog::error("background task '{}' failed: {}", what, err.what());
    } catch (...) {
        spdlog::error("background task '{}' failed with an exception that is not a std::exception", what);
    }
}

// Starts `task` on `ex` and returns at once. `what` must outlive the task: pass a string literal.
template <class Executor, class T>
void spawn_logged(Executor const& ex, boost::asio::awaitable<T> task, char const* what) {
    boost::asio::co_spawn(ex, std::move(task), [what](std::exception_ptr e, auto&&...) { log_task_end(what, e); });
}

template <class Executor>
void spawn_logged(Executor const& ex, boost::asio::awaitable<void> task, char const* what) {
    boost::asio::co_spawn(ex, std::move(task), [what](std::exception_ptr e) { log_task_end(what, e); });
}

}  // namespace airlock::mcp
