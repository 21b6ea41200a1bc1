#pragma once
// What a route handler of the REST API is given: the request past the door, its captures and query,
// the principal it is served as, and the checks every route shares (unknown parameters, the body, the
// run the caller may see). Internal to service/rest: the route files and the router use it.

#include "core/error.hpp"
#include "core/journal.hpp"
#include "service/rest/problem.hpp"
#include "service/rest/rest_api.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service::rest_routes {

// The query's parameters in order; the router refuses a repeated one.
struct query {
    std::vector<std::pair<std::string, std::string>> params;
    std::optional<std::string> get(std::string_view key) const;
};

struct route_context {
    http_request& req;
    rest_api_options const& options;
    std::vector<std::string> captures;  // what the route's "{x}" segments matched, in order
    query q;
    std::string principal;  // "" when served as nobody
    // Deny by default: an operator sees every run, anyone else the runs they own, and a run owned
    // by nobody (internal, or indexed before runs had owners) is an operator's alone.
    bool is_operator = false;

    unsigned version() const { return req.version(); }

    // The first query parameter that is not among `allowed`.
    std::optional<std::string> unknown_param(std::initializer_list<std::string_view> allowed) const;
    http_response unknown_param_problem(std::string const& key) const;
    // The body of a POST: a JSON object, parsed strictly (duplicate keys refused).
    core::result<boost::json::object> body_object() const;
    http_response body_problem(core::error const& e) const;
    // 503 when no agent runtime is configured.
    std::optional<http_response> need_runtime() const;
    bool sees(core::run_summary const& s) const;
    http_response forbidden(std::string_view detail) const;
    // The run `id` names, when the caller may see it; unknown_run otherwise.
    boost::asio::awaitable<core::result<core::run_summary>> async_run_head(std::string id) const;

    http_response problem_for(core::error const& e, std::string_view field = {}) const;
    // Every JSON body the API answers with passes here or through problem(): none may show a
    // configured secret.
    http_response json_ok(http::status status, boost::json::value body) const;
};

using route_handler = boost::asio::awaitable<http_response> (*)(route_context& c);

// A whole number, all of `s`; nullopt for anything else ("1.5", "-1", "ten", "").
std::optional<std::uint64_t> parse_uint(std::string_view s);
// What is wrong with a parameter that must be a whole number within a range: that it is not one at
// all is worth saying apart from its being out of range.
std::string range_fault(std::optional<std::uint64_t> const& parsed, std::string_view what);
// A string member of `o`, "" when absent or not a string.
boost::json::string_view string_field(boost::json::object const& o, std::string_view key);

}  // namespace airlock::service::rest_routes
