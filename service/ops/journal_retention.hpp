#pragma once
// journal.retention in a running airlock: every so often, the sealed runs sealed longer ago than
// the retention are pruned (ops::async_prune), and the log says what went.

#include "store/lmdb_store.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <memory>

namespace airlock::service::ops {

class journal_retention : public std::enable_shared_from_this<journal_retention> {
public:
    journal_retention(boost::asio::any_io_executor exec, std::shared_ptr<store::lmdb_store> journal,
                      std::chrono::milliseconds retention);

    // How often it looks: a quarter of the retention, between a second and an hour, so a run is
    // kept at most that much longer than the retention says.
    std::chrono::milliseconds interval() const noexcept;

    // Prunes now, then every interval() until stop().
    void start();
    void stop();

private:
    boost::asio::awaitable<void> async_loop();

    std::shared_ptr<store::lmdb_store> journal_;
    std::chrono::milliseconds retention_;
    std::shared_ptr<boost::asio::steady_timer> timer_;
    std::atomic<bool> stopped_{false};
};

}  // namespace airlock::service::ops
