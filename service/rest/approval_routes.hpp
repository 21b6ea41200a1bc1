#pragma once
// The routes about a run's approval requests: list them, decide one.

#include "service/rest/route_context.hpp"

namespace airlock::service::rest_routes {

boost::asio::awaitable<http_response> async_list_approvals(route_context& c);   // GET  /v1/runs/{id}/approvals
boost::asio::awaitable<http_response> async_decide_approval(route_context& c);  // POST /v1/runs/{id}/approvals/{effect}

}  // namespace airlock::service::rest_routes
