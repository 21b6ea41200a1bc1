#include "service/rest/rest_api.hpp"
#include "service/ops/request_observer.hpp"
#include "core/rfc3339.hpp"

#include "core/canonical_json.hpp"
#include "core/journal_rules.hpp"
#include "core/secrets.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <map>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr std::string_view problem_type_base = "https://airlock.dev/problems/";

std::string lowered(std::string_view s) {
    std::string out(s);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        auto x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

// The one table of routes: the dispatcher and the OpenAPI check both read it.
enum class route_id {
    openapi,
    list_runs,
    start_run,
    get_run,
    run_journal,
    cancel_run,
    replay_run,
    verify_run,
    list_approvals,
    decide_approval,
    list_agents,
    list_tools,
};

struct route {
    route_id id;
    http::verb method;
    std::string_view path;  // segments; "{x}" captures one
};

constexpr route route_table[] = {
    {route_id::openapi, http::verb::get, "/v1/openapi.json"},
    {route_id::list_runs, http::verb::get, "/v1/runs"},
    {route_id::start_run, http::verb::post, "/v1/runs"},
    {route_id::get_run, http::verb::get, "/v1/runs/{id}"},
    {route_id::run_journal, http::verb::get, "/v1/runs/{id}/journal"},
    {route_id::cancel_run, http::verb::post, "/v1/runs/{id}/cancel"},
    {route_id::replay_run, http::verb::post, "/v1/runs/{id}/replay"},
    {route_id::verify_run, http::verb::get, "/v1/runs/{id}/verify"},
    {route_id::list_approvals, http::verb::get, "/v1/runs/{id}/approvals"},
    {route_id::decide_approval, http::verb::post, "/v1/runs/{id}/approvals/{effect}"},
    {route_id::list_agents, http::verb::get, "/v1/agents"},
    {route_id::list_tools, http::verb::get, "/v1/tools"},
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

struct matched {
    route const* r = nullptr;
    std::vector<std::string> captures;
    bool path_known = false;  // some route has this path, maybe with another method
};

matched match(http::verb method, std::vector<std::string> const& segments) {
    matched m;
    for (auto const& r : route_table) {
        auto tpl = split_template(r.path);
        if (tpl.size() != segments.size()) continue;
        std::vector<std::string> caps;
        bool ok = true;
        for (std::size_t i = 0; i < tpl.size() && ok; ++i) {
            if (tpl[i].starts_with('{')) {
                if (segments[i].empty()) ok = false;
                else caps.push_back(segments[i]);
            } else {
                ok = tpl[i] == segments[i];
            }
        }
        if (!ok) continue;
        m.path_known = true;
        if (r.method == method || (method == http::verb::head && r.method == http::verb::get)) {
            m.r = &r;
            m.captures = std::move(caps);
            return m;
        }
    }
    return m;
}

std::string allowed_methods(std::vector<std::string> const& segments) {
    std::string out;
    for (auto const& r : route_table) {
        auto tpl = split_template(r.path);
        if (tpl.size() != segments.size()) continue;
        bool ok = true;
        for (std::size_t i = 0; i < tpl.size() && ok; ++i)
            ok = tpl[i].starts_with('{') ? !segments[i].empty() : tpl[i] == segments[i];
        if (!ok) continue;
        if (!out.empty()) out += ", ";
        out += std::string(http::to_string(r.method));
    }
    return out;
}

// Every JSON body the API answers with passes here or through problem(): a run's input and
// output, a tool list, an error's detail; none may show a configured secret.
http_response json_ok(http::status status, json::value body, unsigned version) {
    core::secrets::redact(body);
    return json_response(status, json::serialize(body), version);
}

using field_errors = std::vector<std::pair<std::string, std::string>>;

http_response problem_for(core::error const& e, unsigned version, std::string_view field = {}) {
    auto status = problem_status(e.code);
    field_errors fields;
    if (!field.empty()) fields.emplace_back(std::string(field), e.message);
    return problem(status, e.code, e.message, std::move(fields), version);
}

// A query parameter's value; nullopt when absent. Later duplicates are refused by the caller.
struct query {
    std::vector<std::pair<std::string, std::string>> params;
    std::optional<std::string> get(std::string_view key) const {
        for (auto const& [k, v] : params)
            if (k == key) return v;
        return std::nullopt;
    }
};

std::optional<std::uint64_t> parse_uint(std::string_view s) {
    std::uint64_t n = 0;
    if (s.empty()) return std::nullopt;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return n;
}

// What is wrong with a query parameter that must be a whole number within a range: that it is not
// one at all ("1.5", "-1", "ten") is worth saying apart from its being out of range.
std::string range_fault(std::optional<std::uint64_t> const& parsed, std::string_view what) {
    return parsed ? "out of range" : "must be " + std::string(what);
}

json::string_view string_field(json::object const& o, std::string_view key) {
    auto const* v = o.if_contains(key);
    if (!v || !v->is_string()) return {};
    return v->get_string();
}

// The MCP-style result text of an effect's output, for a completion: {"text": ...} or a string.
std::optional<json::value> completion_text(json::object const& output) {
    if (auto const* t = output.if_contains("text")) return *t;
    return std::nullopt;
}

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

http::status problem_status(std::string_view code) noexcept {
    if (code == "unknown_run") return http::status::not_found;
    if (code == "unknown_agent" || code == "unknown_capability" || code == "invalid_input" ||
        code == "invalid_field")
        return http::status::unprocessable_entity;
    if (code == "at_capacity") return http::status::too_many_requests;
    if (code == "not_running" || code == "sealed" || code == "not_pending" || code == "divergence" ||
        code == "conflict")
        return http::status::conflict;
    if (code == "unavailable" || code == "closed") return http::status::service_unavailable;
    if (code == "bad_request") return http::status::bad_request;
    return http::status::internal_server_error;
}

http_response problem(http::status status, std::string_view title, std::string_view detail,
                      std::vector<std::pair<std::string, std::string>> field_errors_, unsigned version) {
    json::object o;
    o["type"] = std::string(problem_type_base) + std::string(title);
    o["title"] = title;
    o["status"] = static_cast<unsigned>(status);
    o["detail"] = detail;
    if (!field_errors_.empty()) {
        json::array errors;
        for (auto& [field, message] : field_errors_) {
            json::object e;
            e["field"] = field;
            e["message"] = message;
            errors.push_back(std::move(e));
        }
        o["errors"] = std::move(errors);
    }
    core::secrets::redact(o);
    auto res = json_response(status, json::serialize(o), version);
    res.set(http::field::content_type, "application/problem+json");
    return res;
}

json::array approvals_of(std::vector<core::record> const& records) {
    json::array out;
    std::map<std::string, std::size_t> index;  // effect key → position in out
    for (auto const& r : records) {
        if (r.kind == core::record_kind::approval_requested) {
            json::object a;
            auto key = std::string(string_field(r.body, "effect_key"));
            a["effect_key"] = key;
            if (auto const* t = r.body.if_contains("tool")) a["tool"] = *t;
            if (auto const* args = r.body.if_contains("arguments")) a["arguments"] = *args;
            a["status"] = "pending";
            a["requested_seq"] = r.seq;
            index[key] = out.size();
            out.push_back(std::move(a));
        } else if (r.kind == core::record_kind::approval_decided) {
            auto key = std::string(string_field(r.body, "effect_key"));
            auto it = index.find(key);
            if (it == index.end()) continue;
            auto& a = out[it->second].as_object();
            auto const* approved = r.body.if_contains("approved");
            a["status"] = approved && approved->is_bool() && approved->get_bool() ? "approved" : "rejected";
            if (auto const* c = r.body.if_contains("comment")) a["reason"] = *c;
            if (auto const* c = r.body.if_contains("reason")) a["reason"] = *c;
            if (auto const* who = r.body.if_contains("reviewer")) a["reviewer"] = *who;
            a["decided_seq"] = r.seq;
        } else if (r.kind == core::record_kind::run_sealed) {
            // A sealed run takes no more decisions (a run awaiting approval is sealed when it is
            // cancelled): what still waited can never be decided, so it must leave the queue.
            for (auto& v : out)
                if (auto& a = v.as_object(); a.at("status") == "pending") {
                    a["status"] = "withdrawn";
                    a["withdrawn_seq"] = r.seq;
                }
        }
    }
    return out;
}

json::object describe_run(core::run_summary const& s, std::vector<core::record> const& records) {
    json::object o = core::to_json(s);  // the summary's fields first
    std::optional<json::value> output;
    std::size_t effects = 0, denials = 0;
    for (auto const& r : records) {
        switch (r.kind) {
        case core::record_kind::run_admitted:
            if (auto const* a = r.body.if_contains("agent")) o["agent_info"] = *a;
            if (auto const* in = r.body.if_contains("input")) o["input"] = *in;
            if (auto const* k = r.body.if_contains("idempotency_key")) o["idempotency_key"] = *k;
            break;
        case core::record_kind::effect_started: ++effects; break;
        case core::record_kind::effect_done:
            // The answer of a run is its last model output, unless the seal states one.
            if (auto const* out = r.body.if_contains("output"); out && out->is_object())
                if (auto t = completion_text(out->get_object()); t && string_field(r.body, "effect_key").ends_with("/model"))
                    output = *t;
            break;
        case core::record_kind::policy_denied: ++denials; break;
        case core::record_kind::run_sealed:
            if (auto const* reason = r.body.if_contains("reason")) o["reason"] = *reason;
            if (auto const* out = r.body.if_contains("output")) output = *out;
            break;
        default: break;
        }
    }
    if (output) o["output"] = *output;
    o["effects"] = effects;
    o["policy_denials"] = denials;
    std::size_t pending = 0;
    for (auto const& a : approvals_of(records))
        if (a.as_object().at("status") == "pending") ++pending;
    o["pending_approvals"] = pending;
    return o;
}

rest_api::rest_api(rest_api_options options) : options_(std::move(options)) {
    for (auto& h : options_.allowed_hosts) h = lowered(h);
    for (auto& o : options_.allowed_origins) o = lowered(o);
}

void rest_api::set_door(std::vector<std::string> allowed_hosts, std::vector<std::string> allowed_origins) {
    if (options_.allowed_hosts.empty())
        for (auto& h : allowed_hosts) options_.allowed_hosts.push_back(lowered(h));
    if (options_.allowed_origins.empty())
        for (auto& o : allowed_origins) options_.allowed_origins.push_back(lowered(o));
}

bool rest_api::owns(std::string_view path) noexcept { return path == "/v1" || path.starts_with("/v1/"); }

std::vector<std::pair<std::string, std::string>> rest_api::routes() {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto const& r : route_table) out.emplace_back(std::string(http::to_string(r.method)), std::string(r.path));
    return out;
}

asio::awaitable<http_response> rest_api::async_handle(http_request& req) {
    auto res = co_await async_route(req);
    // A request with a foreign Origin is refused, the same one without it is served: a cache in
    // front must not answer one with the other's reply.
    res.set(http::field::vary, "Origin");
    co_return res;
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

    // The door answers first: Host, Origin, then the bearer token, exactly as at /mcp.
    if (!options_.allowed_hosts.empty()) {
        auto host = req[http::field::host];
        if (std::find(options_.allowed_hosts.begin(), options_.allowed_hosts.end(), lowered(host)) ==
            options_.allowed_hosts.end())
            co_return problem(http::status::forbidden, "forbidden_host", "this Host is not served here", {}, version);
    }
    if (auto origin = req[http::field::origin]; !origin.empty()) {
        if (std::find(options_.allowed_origins.begin(), options_.allowed_origins.end(), lowered(origin)) ==
            options_.allowed_origins.end())
            co_return problem(http::status::forbidden, "forbidden_origin", "this Origin is not allowed", {}, version);
    }
    std::string principal;
    {
        auto auth = req[http::field::authorization];
        auto unauthorized = [&](std::string_view detail) {
            auto res = problem(http::status::unauthorized, "unauthorized", detail, {}, version);
            res.set(http::field::www_authenticate, R"(Bearer realm="airlock")");
            return res;
        };
        if (auth.empty()) {
            if (!options_.allow_anonymous) co_return unauthorized("a bearer token is required");
            if (options_.anonymous_principal) principal = options_.anonymous_principal();
        } else {
            if (auth.size() < 7 || !iequals(auth.substr(0, 7), "bearer "))
                co_return unauthorized("the Authorization header must be 'Bearer <token>'");
            auto token = auth.substr(7);
            std::optional<std::string> who;
            if (options_.authenticate) who = options_.authenticate(token);
            if (!who) co_return unauthorized("the bearer token is not valid");
            principal = *who;
            note_principal(req, principal);
        }
    }

    if (!parsed) co_return problem(http::status::bad_request, "bad_request", "the request target is not a valid path", {}, version);
    query q;
    for (auto p : parsed->params()) {
        if (q.get(p.key)) {
            auto key = std::string(p.key);
            co_return problem(http::status::bad_request, "bad_request", "query parameter '" + key + "' is repeated",
                              {{key, "given more than once"}}, version);
        }
        q.params.emplace_back(p.key, p.has_value ? std::string(p.value) : std::string());
    }

    if (!m.r) {
        if (m.path_known) {
            auto res = problem(http::status::method_not_allowed, "method_not_allowed",
                               "this path does not take " + std::string(req.method_string()), {}, version);
            res.set(http::field::allow, allowed_methods(segments));
            co_return res;
        }
        co_return problem(http::status::not_found, "not_found", "no route for " + std::string(parsed->path()), {},
                          version);
    }

    auto const known_params = [&](std::initializer_list<std::string_view> allowed) -> std::optional<std::string> {
        for (auto const& [k, v] : q.params)
            if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) return k;
        return std::nullopt;
    };
    auto unknown_param = [&](std::string const& key) {
        return problem(http::status::bad_request, "bad_request", "unknown query parameter '" + key + "'",
                       {{key, "not a parameter of this route"}}, version);
    };
    // The body of a POST: a JSON object, parsed strictly (duplicate keys refused). An empty body is
    // not JSON: read as {}, it would be blamed on fields the caller never sent.
    auto body_object = [&]() -> core::result<json::object> {
        if (req.body().empty()) return core::make_error("bad_request", "the body is empty: it must be a JSON object");
        auto ct = req[http::field::content_type];
        auto base = lowered(ct.substr(0, ct.find(';')));
        while (!base.empty() && base.back() == ' ') base.pop_back();
        if (base != "application/json")
            return core::make_error("unsupported_media_type", "the body must be application/json");
        auto v = core::parse_ijson(req.body());
        if (!v && v.error().code == "too_deep")
            return core::make_error("too_deep", "the body nests deeper than " + std::to_string(core::max_json_depth) +
                                                    " levels, the most airlock accepts");
        if (!v) return core::make_error("bad_request", "the body is not valid JSON: " + v.error().message);
        if (!v->is_object()) return core::make_error("bad_request", "the body must be a JSON object");
        return std::move(v->get_object());
    };
    auto body_problem = [&](core::error const& e) {
        auto status = e.code == "unsupported_media_type" ? http::status::unsupported_media_type
                      : e.code == "too_deep"             ? http::status::unprocessable_entity
                                                          : http::status::bad_request;
        return problem(status, e.code, e.message, {}, version);
    };
    auto need_runtime = [&]() -> std::optional<http_response> {
        if (options_.runs) return std::nullopt;
        return problem(http::status::service_unavailable, "unavailable", "no agent runtime is configured", {}, version);
    };
    // Deny by default: an operator sees every run, anyone else the runs they own, and a run owned by
    // nobody (internal, or indexed before runs had owners) is an operator's alone.
    bool const is_operator = !principal.empty() && options_.is_operator && options_.is_operator(principal);
    auto const sees = [&](core::run_summary const& s) {
        return is_operator || (!s.principal.empty() && s.principal == principal);
    };
    auto const forbidden = [&](std::string_view detail) {
        return problem(http::status::forbidden, "forbidden", detail, {}, version);
    };
    // Every per-run route finds its run here. A run the caller may not see is answered exactly as one
    // that does not exist, so its id reveals nothing.
    auto run_head = [&](std::string const& id) -> asio::awaitable<core::result<core::run_summary>> {
        if (auto bad = core::check_run_id(id); !bad) co_return core::make_error("unknown_run", "no run " + id);
        auto head = co_await options_.journal->async_head(id);
        if (!head) co_return head.error();
        if (!*head || !sees(**head)) co_return core::make_error("unknown_run", "no run " + id);
        co_return std::move(**head);
    };

    switch (m.r->id) {
    case route_id::openapi:
        co_return json_ok(http::status::ok, openapi(), version);

    case route_id::list_runs: {
        if (auto k = known_params({"status", "agent", "since", "cursor", "limit", "principal"})) co_return unknown_param(*k);
        core::run_filter f;
        if (auto p = q.get("principal")) {
            if (!is_operator) co_return forbidden("only operators may list the runs of a principal (?principal=)");
            if (p->empty())
                co_return problem(http::status::bad_request, "invalid_field", "principal must name a principal",
                                  {{"principal", "empty"}}, version);
            f.principal = *p;
        } else if (!is_operator) {
            f.principal = principal;  // "" (a tokenless request served as nobody) matches no run
        }
        if (auto s = q.get("status")) {
            if (std::find(std::begin(core::run_statuses), std::end(core::run_statuses), *s) == std::end(core::run_statuses))
                co_return problem(http::status::bad_request, "invalid_field", "status '" + *s + "' is not a run status",
                                  {{"status", "one of running, succeeded, failed, exhausted, awaiting_approval, "
                                              "quarantined, cancelled"}},
                                  version);
            f.status = *s;
        }
        if (auto a = q.get("agent")) f.agent = *a;
        if (auto s = q.get("since")) {
            auto bound = since_bound(*s);
            if (!bound)
                co_return problem(http::status::bad_request, "invalid_field", "since must be an RFC 3339 time",
                                  {{"since", "e.g. 2026-11-30T10:00:00Z or 2026-11-30T11:00:00+01:00"}}, version);
            f.since = std::move(*bound);
        }
        if (auto c = q.get("cursor")) {
            // A next_cursor is the last run of a page the caller saw, so it names a run the caller
            // sees; anything else would silently start the listing somewhere arbitrary.
            auto last = co_await run_head(*c);
            if (!last && last.error().code != "unknown_run") co_return problem_for(last.error(), version);
            if (!last)
                co_return problem(http::status::bad_request, "invalid_field", "cursor is not one this API returned",
                                  {{"cursor", "use next_cursor from the previous page"}}, version);
            f.cursor = *c;
        }
        f.limit = 50;
        if (auto l = q.get("limit")) {
            auto n = parse_uint(*l);
            if (!n || *n == 0 || *n > options_.max_page)
                co_return problem(http::status::bad_request, "invalid_field", "limit must be a whole number from 1 to " +
                                  std::to_string(options_.max_page), {{"limit", range_fault(n, "a whole number")}}, version);
            f.limit = static_cast<std::size_t>(*n);
        }
        auto page = co_await options_.journal->async_runs(f);
        if (!page) co_return problem_for(page.error(), version);
        json::object o;
        json::array runs;
        for (auto const& s : page->runs) runs.push_back(core::to_json(s));
        o["runs"] = std::move(runs);
        o["next_cursor"] = page->next_cursor ? json::value(*page->next_cursor) : json::value(nullptr);
        co_return json_ok(http::status::ok, o, version);
    }

    case route_id::start_run: {
        if (auto k = known_params({"wait"})) co_return unknown_param(*k);
        if (auto bad = need_runtime()) co_return std::move(*bad);
        std::optional<std::chrono::seconds> wait;
        if (auto w = q.get("wait")) {
            auto n = parse_uint(*w);
            if (!n || *n > static_cast<std::uint64_t>(options_.max_wait.count()))
                co_return problem(http::status::bad_request, "invalid_field",
                                  "wait must be a whole number of seconds from 0 to " + std::to_string(options_.max_wait.count()),
                                  {{"wait", range_fault(n, "a whole number of seconds")}}, version);
            wait = std::chrono::seconds(*n);
        }
        auto body = body_object();
        if (!body) co_return body_problem(body.error());
        run_start_request start;
        start.principal = principal;
        field_errors errors;
        for (auto const& [k, v] : *body)
            if (k != "agent" && k != "capability" && k != "input" && k != "idempotency_key")
                errors.emplace_back(std::string(k), "unknown field");
        auto text_field = [&](std::string_view key, std::string& out) {
            auto const* v = body->if_contains(key);
            if (!v) return;
            if (!v->is_string() || v->get_string().empty())
                errors.emplace_back(std::string(key), "must be a non-empty string");
            else
                out = v->get_string();
        };
        text_field("agent", start.agent);
        text_field("capability", start.capability);
        if (body->contains("agent") == body->contains("capability"))
            errors.emplace_back("agent", "give exactly one of agent and capability");
        if (auto const* in = body->if_contains("input")) start.input = *in;
        else errors.emplace_back("input", "required");
        if (auto const* k = body->if_contains("idempotency_key")) {
            if (!k->is_string() || k->get_string().empty() || k->get_string().size() > 200)
                errors.emplace_back("idempotency_key", "must be a string of 1 to 200 characters");
            else
                start.idempotency_key = std::string(k->get_string());
        }
        if (!errors.empty())
            co_return problem(http::status::unprocessable_entity, "invalid_field", "the run request is not valid",
                              std::move(errors), version);
        auto field = start.agent.empty() ? "capability" : "agent";
        auto started = co_await options_.runs->async_start(std::move(start));
        if (!started) {
            auto res = problem_for(started.error(), version,
                                   started.error().code.starts_with("unknown_") ? field : std::string_view{});
            // Both pass: the runtime is full for now, or airlock is stopping and will be back (or
            // another instance takes the retry).
            if (started.error().code == "at_capacity" || started.error().code == "unavailable")
                res.set(http::field::retry_after, std::to_string(options_.runs->retry_after().count()));
            co_return res;
        }
        auto id = started->run_id;
        if (!started->fresh) {
            // An idempotency key names the caller's earlier run; should it name a run the caller may
            // not see (claimed before keys were kept per principal), its contents stay hidden.
            auto earlier = co_await run_head(id);
            if (!earlier)
                co_return problem(http::status::conflict, "conflict", "this idempotency_key was used for another run",
                                  {{"idempotency_key", "already used"}}, version);
        }
        bool waited = false;
        if (wait && wait->count() > 0) {
            auto up_to = std::chrono::duration_cast<std::chrono::milliseconds>(*wait);
            waited = co_await options_.runs->async_wait(id, up_to);
        }
        if (wait && wait->count() > 0 && !waited) {
            // Poll the head: a run's progress is in the journal, and a poll every few tens of
            // milliseconds costs one index read.
            auto deadline = std::chrono::steady_clock::now() + *wait;
            auto timer = asio::steady_timer(co_await asio::this_coro::executor);
            auto pause = std::chrono::milliseconds(5);
            for (;;) {
                auto head = co_await options_.journal->async_head(id);
                if (head && *head && ((*head)->sealed || (*head)->status == "awaiting_approval")) break;
                if (std::chrono::steady_clock::now() >= deadline) break;
                timer.expires_after(pause);
                auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
                if (ec) break;
                pause = std::min(pause * 2, std::chrono::milliseconds(100));
            }
        }
        auto head = co_await run_head(id);
        auto records = co_await options_.journal->async_read(id);
        json::object o;
        if (head && records) o = describe_run(*head, *records);
        o["run_id"] = id;
        o["fresh"] = started->fresh;
        bool done = head && (head->sealed || head->status == "awaiting_approval");
        auto res = json_ok(done && wait ? http::status::ok : http::status::accepted, o, version);
        res.set(http::field::location, "/v1/runs/" + id);
        co_return res;
    }

    case route_id::get_run: {
        if (auto k = known_params({})) co_return unknown_param(*k);
        auto head = co_await run_head(m.captures[0]);
        if (!head) co_return problem_for(head.error(), version);
        auto records = co_await options_.journal->async_read(m.captures[0]);
        if (!records) co_return problem_for(records.error(), version);
        co_return json_ok(http::status::ok, describe_run(*head, *records), version);
    }

    case route_id::run_journal: {
        if (auto k = known_params({"from_seq"})) co_return unknown_param(*k);
        std::uint64_t from = 1;
        if (auto f = q.get("from_seq")) {
            auto n = parse_uint(*f);
            if (!n || *n == 0)
                co_return problem(http::status::bad_request, "invalid_field", "from_seq must be a whole number from 1",
                                  {{"from_seq", range_fault(n, "a whole number")}}, version);
            from = *n;
        }
        auto head = co_await run_head(m.captures[0]);
        if (!head) co_return problem_for(head.error(), version);
        auto records = co_await options_.journal->async_read(m.captures[0], from);
        if (!records) co_return problem_for(records.error(), version);
        std::string lines;
        for (auto const& r : *records) {
            lines += core::serialize_record(r);
            lines += '\n';
        }
        auto res = json_response(http::status::ok, std::move(lines), version);
        res.set(http::field::content_type, "application/jsonl");
        co_return res;
    }

    case route_id::cancel_run: {
        if (auto k = known_params({})) co_return unknown_param(*k);
        if (auto bad = need_runtime()) co_return std::move(*bad);
        auto head = co_await run_head(m.captures[0]);
        if (!head) co_return problem_for(head.error(), version);
        if (head->sealed)
            co_return problem(http::status::conflict, "sealed", "run " + head->run_id + " has ended (" + head->status + ")",
                              {}, version);
        auto r = co_await options_.runs->async_cancel(m.captures[0]);
        if (!r) co_return problem_for(r.error(), version);
        json::object o;
        o["run_id"] = m.captures[0];
        o["cancel_requested"] = true;
        co_return json_ok(http::status::accepted, o, version);
    }

    case route_id::replay_run: {
        if (auto k = known_params({})) co_return unknown_param(*k);
        if (auto bad = need_runtime()) co_return std::move(*bad);
        auto head = co_await run_head(m.captures[0]);
        if (!head) co_return problem_for(head.error(), version);
        auto r = co_await options_.runs->async_replay(m.captures[0]);
        if (!r) co_return problem_for(r.error(), version);
        co_return json_ok(http::status::ok, *r, version);
    }

    case route_id::verify_run: {
        if (auto k = known_params({})) co_return unknown_param(*k);
        auto head = co_await run_head(m.captures[0]);
        if (!head) co_return problem_for(head.error(), version);
        auto fault = co_await options_.journal->async_verify(m.captures[0]);
        if (!fault) co_return problem_for(fault.error(), version);
        json::object o;
        o["run_id"] = m.captures[0];
        o["verified"] = !fault->has_value();
        o["records"] = head->head_seq;
        o["head"] = core::to_json(*head).at("head_hash");
        if (*fault) {
            json::object f;
            f["seq"] = (*fault)->seq;
            f["reason"] = (*fault)->reason;
            o["fault"] = std::move(f);
        }
        co_return json_ok(http::status::ok, o, version);
    }

    case route_id::list_approvals: {
        if (auto k = known_params({"status"})) co_return unknown_param(*k);
        auto head = co_await run_head(m.captures[0]);
        if (!head) co_return problem_for(head.error(), version);
        auto records = co_await options_.journal->async_read(m.captures[0]);
        if (!records) co_return problem_for(records.error(), version);
        auto all = approvals_of(*records);
        auto want = q.get("status");
        if (want && *want != "pending" && *want != "approved" && *want != "rejected" && *want != "withdrawn")
            co_return problem(http::status::bad_request, "invalid_field",
                              "status must be pending, approved, rejected or withdrawn",
                              {{"status", "unknown approval status"}}, version);
        json::array out;
        for (auto& a : all)
            if (!want || a.as_object().at("status").as_string() == *want) out.push_back(std::move(a));
        json::object o;
        o["run_id"] = m.captures[0];
        o["approvals"] = std::move(out);
        co_return json_ok(http::status::ok, o, version);
    }

    case route_id::decide_approval: {
        if (auto k = known_params({})) co_return unknown_param(*k);
        if (auto bad = need_runtime()) co_return std::move(*bad);
        // The approval gate is a second pair of eyes: the principal that started a run must not
        // wave its own calls through, so only an operator decides.
        if (!is_operator) co_return forbidden("only operators may decide approvals");
        auto body = body_object();
        if (!body) co_return body_problem(body.error());
        field_errors errors;
        for (auto const& [k, v] : *body)
            if (k != "decision" && k != "reason") errors.emplace_back(std::string(k), "unknown field");
        auto decision = string_field(*body, "decision");
        if (decision != "approve" && decision != "reject")
            errors.emplace_back("decision", "must be \"approve\" or \"reject\"");
        std::string reason;
        if (auto const* r = body->if_contains("reason")) {
            if (!r->is_string() || r->get_string().size() > 4096)
                errors.emplace_back("reason", "must be a string of at most 4096 characters");
            else
                reason = r->get_string();
        }
        if (!errors.empty())
            co_return problem(http::status::unprocessable_entity, "invalid_field", "the decision is not valid",
                              std::move(errors), version);
        auto head = co_await run_head(m.captures[0]);
        if (!head) co_return problem_for(head.error(), version);
        auto r = co_await options_.runs->async_decide(m.captures[0], m.captures[1], decision == "approve", reason,
                                                      principal);
        if (!r) co_return problem_for(r.error(), version);
        json::object o;
        o["run_id"] = m.captures[0];
        o["effect_key"] = m.captures[1];
        o["decision"] = decision;
        co_return json_ok(http::status::ok, o, version);
    }

    case route_id::list_agents: {
        if (auto k = known_params({})) co_return unknown_param(*k);
        json::array agents;
        if (options_.runs)
            for (auto const& a : options_.runs->agents()) agents.push_back(agent_json(a));
        json::object o;
        o["agents"] = std::move(agents);
        co_return json_ok(http::status::ok, o, version);
    }

    case route_id::list_tools: {
        if (auto k = known_params({})) co_return unknown_param(*k);
        json::array tools;
        if (options_.tools) {
            auto mine = co_await options_.tools(principal);
            for (auto& t : mine) tools.push_back(std::move(t));
        }
        json::object o;
        o["tools"] = std::move(tools);
        co_return json_ok(http::status::ok, o, version);
    }
    }
    co_return problem(http::status::internal_server_error, "internal", "unrouted", {}, version);
}

}  // namespace airlock::service
