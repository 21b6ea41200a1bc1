#pragma once
// The routes about what a caller may use: the agents and the tools.

#include "service/rest/route_context.hpp"

namespace airlock::service::rest_routes {

boost::asio::awaitable<http_response> async_list_agents(route_context& c);  // GET /v1/agents
boost::asio::awaitable<http_response> async_list_tools(route_context& c);   // GET /v1/tools

}  // namespace airlock::service::rest_routes
