#pragma once
// What `airlock serve` answers besides /mcp and /v1: /healthz, /readyz, /metrics, and 404.

#include "service/app/oauth.hpp"
#include "service/app/lifecycle.hpp"
#include "service/app/serving.hpp"
#include "service/http/http_server.hpp"
#include "service/ops/metrics.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <memory>

namespace airlock::service {

// What /readyz and /metrics read: the service's parts, shared with the routes.
struct ops_state {
    std::shared_ptr<airlock_metrics> metrics;
    std::shared_ptr<serving> sv;  // the gateway and configuration in force, after any reload
    lifecycle* life = nullptr;
    metrics_config metrics_settings;
    std::shared_ptr<oauth_parts> oauth;  // auth.oauth; null without it
    std::atomic<bool> probing{false};
};

// /healthz, /readyz, /metrics, and 404 for everything else.
boost::asio::awaitable<http_response> ops_route(std::shared_ptr<ops_state> s, http_request& req);

}  // namespace airlock::service
