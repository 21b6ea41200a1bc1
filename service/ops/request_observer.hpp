#pragma once
// Wraps the HTTP handler so every request is seen once: it gets a request id (a sane incoming
// X-Request-Id, else a fresh one) echoed in the response, one log line (method, route, status,
// duration, principal, request id) and its metrics (requests by route, method and status; latency
// by route).

#include "service/http/http_server.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

class airlock_metrics;

struct request_observer_options {
    std::shared_ptr<airlock_metrics> metrics;  // null: nothing recorded
    bool log_requests = true;
    // Paths that are their own route label. Any other path is labelled by what the handler noted
    // (note_route), else "other": a label never holds a path a client made up.
    std::vector<std::string> routes{"/mcp", "/healthz", "/readyz", "/metrics"};
};

http_handler observe_requests(http_handler inner, request_observer_options options);
// For http_server_options::on_refused: a request the server refused before reading it whole is
// logged and counted like any other, with route "none" and method "other".
std::function<void(unsigned status)> observe_refusals(request_observer_options options);

// What only the handler knows, for the request's log line and metrics. Kept in the request as
// headers the observer strips from what clients send, so nobody can forge them.
void note_principal(http_request& req, std::string_view principal);
void note_route(http_request& req, std::string_view route);  // a template, such as "/v1/runs/{id}"

// The request id the observer assigned (empty outside it).
std::string request_id_of(http_request const& req);
// 1 to 128 characters from [A-Za-z0-9._:/+=@-]: safe to log and to echo.
bool acceptable_request_id(std::string_view id) noexcept;

}  // namespace airlock::service
