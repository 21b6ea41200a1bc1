#pragma once
// How `airlock serve` stops. The first SIGTERM/SIGINT drains: listeners close, notification
// streams end, requests and agent runs in flight get server.drain_grace. A second one stops at
// once. Either way the upstreams are closed last (a stdio child stopped in the spec's order and
// reaped: none outlives airlock), and the loop ends, within a bound, when they are.

#include "service/agents/runner.hpp"
#include "service/app/lifecycle.hpp"
#include "service/app/serving.hpp"
#include "service/http/http_server.hpp"
#include "service/http/oauth_keys.hpp"
#include "service/mcp/streamable_http_endpoint.hpp"
#include "service/ops/journal_retention.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <memory>

namespace airlock::service {

struct shutdown_parts {
    boost::asio::io_context& ioc;
    http_server& server;
    lifecycle& life;
    std::shared_ptr<serving> sv;
    std::shared_ptr<mcp_endpoint> endpoint;
    std::shared_ptr<runner> runs;
    std::chrono::milliseconds drain_grace;
    std::shared_ptr<oauth_keys> key_refresh;  // auth.oauth's key refresh; null without it
    std::shared_ptr<ops::journal_retention> retention;  // journal.retention's pruning; null without it
};

// Lives as long as the loop runs (the signal handlers call it from the loop's threads).
class serve_shutdown {
public:
    explicit serve_shutdown(shutdown_parts parts);
    void drain(int sig);     // the first SIGTERM/SIGINT
    void stop_now(int sig);  // a second one, while draining

private:
    void check_drained(std::chrono::steady_clock::time_point deadline);
    void finish(std::chrono::milliseconds settle);

    shutdown_parts p_;
    boost::asio::steady_timer poll_;       // drain: is every connection and run gone yet?
    boost::asio::steady_timer hard_stop_;  // the bound on the wind-down
    std::atomic<bool> cut_short_{false};
    std::atomic<bool> winding_down_{false};
};

}  // namespace airlock::service
