#pragma once
// auth.oauth as `airlock serve` runs it: the issuers' keys fetched and kept fresh, the guard the
// door of /mcp and /v1 asks about each access token, and the resource metadata clients discover.

#include "service/config/config.hpp"
#include "service/http/door.hpp"
#include "service/http/oauth_guard.hpp"
#include "service/http/oauth_introspection.hpp"
#include "service/http/oauth_keys.hpp"
#include "service/http/resource_metadata.hpp"
#include "service/ops/metrics.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>

namespace airlock::service {

struct oauth_parts {
    std::shared_ptr<oauth_keys> keys;
    std::shared_ptr<oauth_guard const> guard;
    std::shared_ptr<token_introspector> introspector;  // auth.oauth.introspection; null without it
    resource_metadata metadata;
    door_oauth door;  // what the endpoints' doors are given
};

// Nothing to build (nullptr) when the configuration has no auth.oauth. The keys are not fetched
// yet: spawn keys->async_start().
std::shared_ptr<oauth_parts> make_oauth(config const& c, boost::asio::any_io_executor exec,
                                        std::shared_ptr<airlock_metrics> metrics);

}  // namespace airlock::service
