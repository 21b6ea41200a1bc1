#include "service/app/signals.hpp"

#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>

#include <spdlog/spdlog.h>

#include <csignal>

namespace airlock::service {

namespace asio = boost::asio;

struct signal_watcher::state : std::enable_shared_from_this<state> {
    asio::signal_set signals;
    signal_actions actions;
    bool draining = false;

    state(asio::io_context& ioc, signal_actions a)
        : signals(asio::make_strand(ioc), SIGINT, SIGTERM, SIGHUP), actions(std::move(a)) {}

    void wait() {
        signals.async_wait([self = shared_from_this()](boost::system::error_code const& ec, int sig) {
            if (ec) return;  // cancelled
            self->dispatch(sig);
            self->wait();
        });
    }

    void dispatch(int sig) {
        if (sig == SIGHUP) {
            if (draining) {
                spdlog::info("signal {} (SIGHUP) ignored: draining", sig);
                return;
            }
            if (actions.reload) actions.reload();
            return;
        }
        if (!draining) {
            draining = true;
            if (actions.drain) actions.drain(sig);
            return;
        }
        if (actions.stop_now) actions.stop_now(sig);
    }
};

signal_watcher::signal_watcher(asio::io_context& ioc, signal_actions actions)
    : state_(std::make_shared<state>(ioc, std::move(actions))) {
    state_->wait();
}

signal_watcher::~signal_watcher() { cancel(); }

void signal_watcher::cancel() {
    boost::system::error_code ignored;
    state_->signals.cancel(ignored);
}

}  // namespace airlock::service
