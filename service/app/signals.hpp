#pragma once
// How `airlock serve` answers signals: SIGTERM or SIGINT starts a drain and a second one during the
// drain ends it at once; SIGHUP asks for a reload of the configuration.

#include <boost/asio/io_context.hpp>

#include <functional>
#include <memory>

namespace airlock::service {

struct signal_actions {
    std::function<void(int signal)> drain;     // the first SIGTERM or SIGINT
    std::function<void(int signal)> stop_now;  // a SIGTERM or SIGINT while draining
    std::function<void()> reload;              // SIGHUP; ignored once draining
};

// Catches SIGTERM, SIGINT and SIGHUP from construction until destruction (or cancel()) and calls the
// actions one at a time, on a strand of `ioc`.
class signal_watcher {
public:
    signal_watcher(boost::asio::io_context& ioc, signal_actions actions);
    ~signal_watcher();
    signal_watcher(signal_watcher const&) = delete;
    signal_watcher& operator=(signal_watcher const&) = delete;

    void cancel();

private:
    struct state;
    std::shared_ptr<state> state_;
};

}  // namespace airlock::service
