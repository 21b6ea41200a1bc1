#pragma once
// The routes of the pinned tool definitions: list them, review one (its pinned and new definition
// and what changed), accept a changed one. An operator's alone: a pin decides what every principal
// is offered.

#include "service/rest/route_context.hpp"

namespace airlock::service::rest_routes {

boost::asio::awaitable<http_response> async_list_pins(route_context& c);   // GET /v1/pins
boost::asio::awaitable<http_response> async_get_pin(route_context& c);     // GET /v1/pins/{server}/{tool}
boost::asio::awaitable<http_response> async_accept_pin(route_context& c);  // POST /v1/pins/{server}/{tool}/accept

}  // namespace airlock::service::rest_routes
