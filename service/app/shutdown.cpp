#include "service/app/shutdown.hpp"

#include "service/app/wiring.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

namespace airlock::service {

namespace asio = boost::asio;

namespace {

// The wind-down is bounded: past this, the loop stops whatever is still closing (a stdio child
// takes at most its two 2 s graces and a SIGKILL; an HTTP upstream's DELETE may hang).
constexpr auto wind_down_limit = std::chrono::seconds(15);

// The last of serving: every upstream is stopped and its child reaped, and what was cancelled gets
// at least `settle` to write its journal records; then the loop may end.
asio::awaitable<void> async_wind_down(std::shared_ptr<serving> sv, std::chrono::milliseconds settle) {
    asio::steady_timer settled(co_await asio::this_coro::executor, settle);
    co_await async_close_upstreams(sv->all_clients());
    // Cut-off calls have journaled their outcomes by now, or do so within this bound; then their
    // runs are sealed.
    co_await sv->backend->async_runs_closed(std::chrono::seconds(2));
    co_await settled.async_wait(asio::as_tuple(asio::use_awaitable));
}

}  // namespace

serve_shutdown::serve_shutdown(shutdown_parts parts) : p_(std::move(parts)), poll_(p_.ioc), hard_stop_(p_.ioc) {}

void serve_shutdown::drain(int sig) {
    p_.life.begin_drain();
    spdlog::info("signal {} received: draining (grace {} ms; a second signal stops at once)", sig,
                 p_.drain_grace.count());
    // Notification streams end now (they have no natural end); requests in flight go on.
    p_.endpoint->close_streams();
    p_.server.stop();
    // In-flight requests and agent runs get the grace period; the loop ends as soon as the last
    // connection and run are gone, or when the grace period runs out, whichever comes first.
    check_drained(std::chrono::steady_clock::now() + p_.drain_grace);
}

void serve_shutdown::check_drained(std::chrono::steady_clock::time_point deadline) {
    if (cut_short_) return;
    auto open = p_.server.active_connections();
    auto running = p_.runs->active_runs();
    if ((open == 0 && running == 0) || std::chrono::steady_clock::now() >= deadline) {
        if (open || running)
            spdlog::warn("drain: grace period over with {} connections and {} runs still going; stopping them", open,
                         running);
        finish(std::chrono::milliseconds(300));
        return;
    }
    poll_.expires_after(std::chrono::milliseconds(20));
    poll_.async_wait([this, deadline](boost::system::error_code const& ec) {
        if (!ec) check_drained(deadline);
    });
}

void serve_shutdown::stop_now(int sig) {
    spdlog::warn("signal {} received while draining: stopping now ({} connections still open)", sig,
                 p_.server.active_connections());
    cut_short_ = true;
    finish(std::chrono::milliseconds(0));
}

// Stopping: the loop ends once every upstream has been closed and `settle` has passed.
void serve_shutdown::finish(std::chrono::milliseconds settle) {
    auto& ioc = p_.ioc;
    if (winding_down_.exchange(true)) {
        // Asked again while winding down (a second signal): only the closing of upstreams is left,
        // and it gets a short while more.
        hard_stop_.expires_after(std::chrono::seconds(2));
        hard_stop_.async_wait([&ioc](boost::system::error_code const& ec) {
            if (!ec) ioc.stop();
        });
        return;
    }
    // What is still in flight is cancelled (an effect started and not finished reads as in
    // doubt in the journal); sessions end and their runs are sealed. The runs are closed first,
    // so that they are sealed as stopped by airlock, not as ended by their clients. From the
    // first of these on, no run of any kind is admitted (a REST run is refused by the agent
    // runtime, a gateway run by the gateway): one admitted after the seals would stay running.
    p_.runs->stop();
    if (p_.key_refresh) p_.key_refresh->stop();
    if (p_.retention) p_.retention->stop();
    p_.sv->backend->close_all_runs();
    p_.endpoint->shutdown();
    auto stop_loop = [&ioc](std::exception_ptr e) {
        if (e) spdlog::error("stopping the upstreams ended by an internal error; stopping anyway");
        ioc.stop();
    };
    asio::co_spawn(ioc, async_wind_down(p_.sv, settle), std::move(stop_loop));
    hard_stop_.expires_after(settle + wind_down_limit);
    hard_stop_.async_wait([&ioc](boost::system::error_code const& ec) {
        if (ec) return;
        spdlog::warn("stopping: upstreams still closing after {} s; stopping without them", wind_down_limit.count());
        ioc.stop();
    });
}

}  // namespace airlock::service
