#include "service/rest/rest_api.hpp"

#include "service/ops/request_observer.hpp"
#include "service/rest/agent_routes.hpp"
#include "service/rest/approval_routes.hpp"
#include "service/rest/pin_routes.hpp"
#include "service/rest/route_context.hpp"
#include "service/rest/run_routes.hpp"

#include <boost/url/parse.hpp>

#include <spdlog/spdlog.h>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;
using core::errc;

namespace {

asio::awaitable<http_response> async_openapi(rest_routes::route_context& c) {
    co_return c.json_ok(http::status::ok, rest_api::openapi());
}

struct route {
    http::verb method;
    std::string_view path;  // segments; "{x}" captures one
    rest_routes::route_handler handler;
    // false: served without a token (the door still judges Host and Origin). Only what discloses
    // nothing about runs, agents or tools may be: today the OpenAPI document alone.
    bool needs_token = true;
};

// The one table of routes: the dispatcher and the OpenAPI check both read it.
constexpr route route_table[] = {
    {http::verb::get, "/v1/openapi.json", async_openapi, false},
    {http::verb::get, "/v1/runs", rest_routes::async_list_runs},
    {http::verb::post, "/v1/runs", rest_routes::async_start_run},
    {http::verb::get, "/v1/runs/{id}", rest_routes::async_get_run},
    {http::verb::get, "/v1/runs/{id}/journal", rest_routes::async_run_journal},
    {http::verb::post, "/v1/runs/{id}/cancel", rest_routes::async_cancel_run},
    {http::verb::post, "/v1/runs/{id}/replay", rest_routes::async_replay_run},
    {http::verb::get, "/v1/runs/{id}/verify", rest_routes::async_verify_run},
    {http::verb::get, "/v1/runs/{id}/approvals", rest_routes::async_list_approvals},
    {http::verb::post, "/v1/runs/{id}/approvals/{effect}", rest_routes::async_decide_approval},
    {http::verb::get, "/v1/agents", rest_routes::async_list_agents},
    {http::verb::get, "/v1/tools", rest_routes::async_list_tools},
    {http::verb::get, "/v1/pins", rest_routes::async_list_pins},
    {http::verb::get, "/v1/pins/{server}/{tool}", rest_routes::async_get_pin},
    {http::verb::post, "/v1/pins/{server}/{tool}/accept", rest_routes::async_accept_pin},
};

std::vector<std::string_view> split_template(std::string_view path) {
    std::vector<std::string_view> out;
    std::size_t i = 1;
    while (i <= path.size()) {
        auto j = path.find('/', i);
        if (j == std::string_view::npos) j = path.size();
        out.push_back(path.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

// Whether `segments` fit route `r`'s path, and what its "{x}" segments capture.
std::optional<std::vector<std::string>> fit(route const& r, std::vector<std::string> const& segments) {
    auto tpl = split_template(r.path);
    if (tpl.size() != segments.size()) return std::nullopt;
    std::vector<std::string> caps;
    for (std::size_t i = 0; i < tpl.size(); ++i) {
        if (tpl[i].starts_with('{')) {
            if (segments[i].empty()) return std::nullopt;
            caps.push_back(segments[i]);
        } else if (tpl[i] != segments[i]) {
            return std::nullopt;
        }
    }
    return caps;
}

struct matched {
    route const* r = nullptr;
    std::vector<std::string> captures;
    bool path_known = false;  // some route has this path, maybe with another method
};

matched match(http::verb method, std::vector<std::string> const& segments) {
    matched m;
    for (auto const& r : route_table) {
        auto caps = fit(r, segments);
        if (!caps) continue;
        m.path_known = true;
        if (r.method == method || (method == http::verb::head && r.method == http::verb::get)) {
            m.r = &r;
            m.captures = std::move(*caps);
            return m;
        }
    }
    return m;
}

std::string allowed_methods(std::vector<std::string> const& segments) {
    std::string out;
    for (auto const& r : route_table) {
        if (!fit(r, segments)) continue;
        if (!out.empty()) out += ", ";
        out += std::string(http::to_string(r.method));
    }
    return out;
}

// (method, path template) of the routes, or of those served without a token.
std::vector<std::pair<std::string, std::string>> listed_routes(bool open_only) {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto const& r : route_table)
        if (!open_only || !r.needs_token)
            out.emplace_back(std::string(http::to_string(r.method)), std::string(r.path));
    return out;
}

// The door's refusal as a problem document. The words are /v1's own where they always were.
http_response refusal_problem(door_refusal const& r, unsigned version) {
    bool const host = r.kind == door_refusal_kind::host_missing || r.kind == door_refusal_kind::host_not_allowed;
    auto res = problem(static_cast<http::status>(r.status), r.code, host ? "this Host is not served here" : r.detail, {},
                       version);
    if (!r.www_authenticate.empty()) res.set(http::field::www_authenticate, r.www_authenticate);
    return res;
}

}  // namespace

rest_api::rest_api(rest_api_options options) : options_(std::move(options)) {
    door_ = make_door_policy(options_.allowed_hosts, options_.allowed_origins, options_.authenticate,
                             options_.allow_anonymous, false);
    apply_oauth(door_, options_.oauth);
}

void rest_api::set_door(std::vector<std::string> allowed_hosts, std::vector<std::string> allowed_origins) {
    if (options_.allowed_hosts.empty()) options_.allowed_hosts = std::move(allowed_hosts);
    if (options_.allowed_origins.empty()) options_.allowed_origins = std::move(allowed_origins);
    door_ = make_door_policy(options_.allowed_hosts, options_.allowed_origins, options_.authenticate,
                             options_.allow_anonymous, false);
    apply_oauth(door_, options_.oauth);
}

bool rest_api::owns(std::string_view path) noexcept { return path == "/v1" || path.starts_with("/v1/"); }

std::vector<std::pair<std::string, std::string>> rest_api::routes() { return listed_routes(false); }

std::vector<std::pair<std::string, std::string>> rest_api::open_routes() { return listed_routes(true); }

asio::awaitable<http_response> rest_api::async_handle(http_request& req) {
    auto res = co_await async_route(req);
    // A request with a foreign Origin is refused, the same one without it is served: a cache in
    // front must not answer one with the other's reply.
    res.set(http::field::vary, "Origin");
    co_return res;
}

// The principal the request is served as, or the refusal to answer. /v1 has no CORS preflight: an
// OPTIONS request is one more method its routes do not take.
asio::awaitable<std::variant<std::string, http_response>> rest_api::async_pass_door(http_request& req) {
    auto verdict = co_await service::async_pass_door(door_, read_door_request(req));
    if (auto* refused = std::get_if<door_refusal>(&verdict)) co_return refuse(*refused, req.version());
    auto const& admitted = std::get<door_admitted>(verdict);  // a policy without preflights never answers one
    if (admitted.anonymous) co_return options_.anonymous_principal ? options_.anonymous_principal() : std::string();
    note_principal(req, admitted.principal);
    co_return admitted.principal;
}

// A route served without a token: Host and Origin as for any other (a page elsewhere has no more
// business reading it than the rest), and a token in the URL is refused all the same, since it has
// leaked into logs whatever this route does with it. A token in the header is not looked at.
std::variant<std::string, http_response> rest_api::pass_open_door(http_request const& req) {
    auto const door_req = read_door_request(req);
    auto refused = check_host_origin(door_, door_req);
    if (!refused && door_req.token_in_query) refused = std::get<door_refusal>(check_credentials(door_, door_req));
    if (!refused) return std::string();
    return refuse(*refused, req.version());
}

// Logged (throttled per client address) when it is a refusal a client can repeat in a loop.
http_response rest_api::refuse(door_refusal const& r, unsigned version) {
    if (r.log)
        if (auto more = door_log_.admit(r.log_key)) spdlog::warn("rest: {}{}", r.log_message, *more);
    return refusal_problem(r, version);
}

asio::awaitable<http_response> rest_api::async_route(http_request& req) {
    auto const version = req.version();

    // The route is found before the door answers, so a request the door turns away is still logged
    // and counted under the route it asked for.
    auto parsed = boost::urls::parse_origin_form(req.target());
    std::vector<std::string> segments;
    if (parsed) {
        for (auto seg : parsed->segments()) segments.push_back(seg);
        if (!segments.empty() && segments.back().empty()) segments.pop_back();  // a trailing slash
    }
    auto m = parsed ? match(req.method(), segments) : matched{};
    if (m.r) note_route(req, m.r->path);  // the template, so metrics and logs name the route, not the path

    // The door answers first: Host, Origin, then the bearer token where the route needs one, by the
    // same rules as at /mcp.
    std::variant<std::string, http_response> who;
    if (m.r && !m.r->needs_token)
        who = pass_open_door(req);
    else
        who = co_await async_pass_door(req);
    if (auto* refused = std::get_if<http_response>(&who)) co_return std::move(*refused);

    if (!parsed) co_return problem(errc::bad_request, "the request target is not a valid path", {}, version);
    rest_routes::query q;
    for (auto p : parsed->params()) {
        if (q.get(p.key)) {
            auto key = std::string(p.key);
            co_return problem(errc::bad_request, "query parameter '" + key + "' is repeated", {{key, "given more than once"}},
                              version);
        }
        q.params.emplace_back(p.key, p.has_value ? std::string(p.value) : std::string());
    }

    if (!m.r) {
        if (m.path_known) {
            auto res = problem(errc::method_not_allowed, "this path does not take " + std::string(req.method_string()), {},
                               version);
            res.set(http::field::allow, allowed_methods(segments));
            co_return res;
        }
        co_return problem(errc::not_found, "no route for " + std::string(parsed->path()), {}, version);
    }

    auto principal = std::get<std::string>(std::move(who));
    bool const is_operator = !principal.empty() && options_.is_operator && options_.is_operator(principal);
    rest_routes::route_context c{req, options_, std::move(m.captures), std::move(q), std::move(principal), is_operator};
    co_return co_await m.r->handler(c);
}

}  // namespace airlock::service
