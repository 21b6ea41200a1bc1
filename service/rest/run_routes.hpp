#pragma once
// The routes about runs: list, start, inspect, read the journal of, cancel, replay and verify one.

#include "service/rest/route_context.hpp"

namespace airlock::service::rest_routes {

boost::asio::awaitable<http_response> async_list_runs(route_context& c);     // GET  /v1/runs
boost::asio::awaitable<http_response> async_start_run(route_context& c);     // POST /v1/runs
boost::asio::awaitable<http_response> async_get_run(route_context& c);       // GET  /v1/runs/{id}
boost::asio::awaitable<http_response> async_run_journal(route_context& c);   // GET  /v1/runs/{id}/journal
boost::asio::awaitable<http_response> async_cancel_run(route_context& c);    // POST /v1/runs/{id}/cancel
boost::asio::awaitable<http_response> async_replay_run(route_context& c);    // POST /v1/runs/{id}/replay
boost::asio::awaitable<http_response> async_verify_run(route_context& c);    // GET  /v1/runs/{id}/verify

}  // namespace airlock::service::rest_routes
