#include "service/rest/agent_routes.hpp"

namespace airlock::service::rest_routes {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

json::object agent_json(agent_info const& a) {
    json::object o;
    o["name"] = a.name;
    o["version"] = a.version;
    o["digest"] = a.digest;
    json::array provides;
    for (auto const& p : a.provides) provides.emplace_back(p);
    o["provides"] = std::move(provides);
    o["grants"] = a.grants;
    return o;
}

}  // namespace

asio::awaitable<http_response> async_list_agents(route_context& c) {
    if (auto k = c.unknown_param({})) co_return c.unknown_param_problem(*k);
    json::array agents;
    if (c.options.runs)
        for (auto const& a : c.options.runs->agents()) agents.push_back(agent_json(a));
    json::object o;
    o["agents"] = std::move(agents);
    co_return c.json_ok(http::status::ok, o);
}

asio::awaitable<http_response> async_list_tools(route_context& c) {
    if (auto k = c.unknown_param({})) co_return c.unknown_param_problem(*k);
    json::array tools;
    if (c.options.tools) {
        auto mine = co_await c.options.tools(c.principal);
        for (auto& t : mine) tools.push_back(std::move(t));
    }
    json::object o;
    o["tools"] = std::move(tools);
    co_return c.json_ok(http::status::ok, o);
}

}  // namespace airlock::service::rest_routes
