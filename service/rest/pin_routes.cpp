#include "service/rest/pin_routes.hpp"

#include "core/pin_review.hpp"

#include <boost/json/array.hpp>

namespace airlock::service::rest_routes {

namespace asio = boost::asio;
namespace json = boost::json;
using core::errc;

namespace {

// What every pin route checks first: no stray parameter, an operator, a pin store. The problem
// to answer, or nothing.
std::optional<http_response> refuse(route_context& c) {
    if (auto k = c.unknown_param({})) return c.unknown_param_problem(*k);
    if (!c.is_operator) return c.forbidden("only operators may review and accept pinned tool definitions");
    if (!c.options.pins) return problem(errc::unavailable, "no pin store is configured", {}, c.version());
    return std::nullopt;
}

// The pin the path names, or the problem naming the segment that names nothing.
asio::awaitable<std::variant<core::pin, http_response>> async_named_pin(route_context& c) {
    auto pins = co_await c.options.pins->async_pins();
    if (!pins) co_return c.problem_for(pins.error());
    auto found = core::find_pin(*pins, c.captures[0], c.captures[1]);
    if (!found) {
        auto const field = found.error().code == "unknown_server" ? "server" : "tool";
        co_return problem(errc::not_found, found.error().message, {{field, found.error().message}}, c.version());
    }
    co_return std::move(*found);
}

// The digest the reviewer saw, from an optional body {"pending_digest": "..."}: accepting what
// changed again since it was reviewed would accept a definition nobody read.
std::variant<std::optional<std::string>, http_response> expected_digest(route_context& c) {
    if (c.req.body().empty()) return std::optional<std::string>{};
    auto body = c.body_object();
    if (!body) return c.body_problem(body.error());
    for (auto const& kv : *body)
        if (kv.key() != "pending_digest")
            return problem(errc::invalid_field, "unknown field '" + std::string(kv.key()) + "'",
                           {{std::string(kv.key()), "not a field of an acceptance"}}, c.version());
    auto const* d = body->if_contains("pending_digest");
    if (!d) return std::optional<std::string>{};
    if (!d->is_string())
        return problem(errc::invalid_field, "pending_digest must be a string",
                       {{"pending_digest", "must be the hex SHA-256 of the definition reviewed"}}, c.version());
    return std::optional<std::string>(d->get_string());
}

}  // namespace

asio::awaitable<http_response> async_list_pins(route_context& c) {
    if (auto bad = refuse(c)) co_return std::move(*bad);
    auto pins = co_await c.options.pins->async_pins();
    if (!pins) co_return c.problem_for(pins.error());
    json::array out;
    for (auto const& p : *pins) out.push_back(core::pin_json(p, false));
    co_return c.json_ok(http::status::ok, json::object{{"pins", std::move(out)}});
}

asio::awaitable<http_response> async_get_pin(route_context& c) {
    if (auto bad = refuse(c)) co_return std::move(*bad);
    auto named = co_await async_named_pin(c);
    if (auto* res = std::get_if<http_response>(&named)) co_return std::move(*res);
    co_return c.json_ok(http::status::ok, core::pin_json(std::get<core::pin>(named), true));
}

asio::awaitable<http_response> async_accept_pin(route_context& c) {
    if (auto bad = refuse(c)) co_return std::move(*bad);
    auto expected = expected_digest(c);
    if (auto* res = std::get_if<http_response>(&expected)) co_return std::move(*res);
    auto named = co_await async_named_pin(c);
    if (auto* res = std::get_if<http_response>(&named)) co_return std::move(*res);
    auto key = std::get<core::pin>(named).key;
    auto want = std::get<std::optional<std::string>>(std::move(expected));
    auto accepted = co_await c.options.pins->async_accept_pin(key, std::move(want));
    if (!accepted) {
        auto const& code = accepted.error().code;
        if (code == "no_pending") co_return problem(errc::not_pending, accepted.error().message, {}, c.version());
        if (code == "pending_changed")
            co_return problem(errc::conflict, accepted.error().message, {{"pending_digest", accepted.error().message}},
                              c.version());
        co_return c.problem_for(accepted.error());
    }
    // At once, in this process: the gateway reads the upstream's tools again and tells the
    // clients whose list now holds the tool.
    if (c.options.pin_accepted) c.options.pin_accepted(c.captures[0]);
    co_return c.json_ok(http::status::ok, core::pin_json(*accepted, false));
}

}  // namespace airlock::service::rest_routes
