#include "service/http/door.hpp"

#include "core/ascii.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <utility>

namespace airlock::service {

bool is_loopback_host(std::string_view host) noexcept {
    if (core::iequals(host, "localhost")) return true;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    boost::system::error_code ec;
    auto a = boost::asio::ip::make_address(std::string(host), ec);
    return !ec && a.is_loopback();
}

std::vector<std::string> default_allowed_hosts(std::string_view listen_host, std::uint16_t port) {
    if (!is_loopback_host(listen_host)) return {};
    auto p = ":" + std::to_string(port);
    std::vector<std::string> out{"127.0.0.1" + p, "localhost" + p, "[::1]" + p};
    // Another loopback address (127.0.0.2) is reachable by that name too.
    std::string h = core::ascii_lowercase(listen_host);
    if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";
    if (std::find(out.begin(), out.end(), h + p) == out.end()) out.push_back(h + p);
    return out;
}

std::vector<std::string> default_allowed_origins(std::string_view listen_host, std::uint16_t port) {
    std::vector<std::string> out;
    for (auto const& h : default_allowed_hosts(listen_host, port)) {
        out.push_back("http://" + h);
        out.push_back("https://" + h);
    }
    return out;
}

void allow_origin(http::response_header<>& h, std::string_view origin, cors_rules const& rules) {
    h.set(http::field::access_control_allow_origin, origin);
    h.set(http::field::access_control_expose_headers, rules.expose);
}

http_response preflight_response(http_request const& req, std::string_view origin, cors_rules const& rules) {
    http_response res{http::status::no_content, req.version()};
    res.set(http::field::allow, rules.allow);
    // The headers allowed are the ones the browser asked for: the answer depends on those too.
    res.set(http::field::vary, "Origin, Access-Control-Request-Headers");
    if (!origin.empty()) {
        allow_origin(res.base(), origin, rules);
        res.set(http::field::access_control_allow_methods, rules.methods);
        // The headers a request may carry include ones named after a tool's arguments
        // (Mcp-Param-*): the browser's own list of what it will send is the one to allow.
        auto const asked_field = req[http::field::access_control_request_headers];
        std::string_view const asked(asked_field.data(), asked_field.size());
        res.set(http::field::access_control_allow_headers, !asked.empty() ? asked : rules.default_headers);
        res.set(http::field::access_control_max_age, "600");
    }
    res.prepare_payload();
    return res;
}

namespace {

// Header values are trimmed of the spaces and tabs RFC 9110 lets a sender put around them.
bool listed(std::vector<std::string> const& allowed, std::string const& value) {
    return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

door_refusal forbidden(door_refusal_kind kind, core::errc code, std::string detail) {
    return {kind, 403, code, std::move(detail), {}, false, {}, {}};
}

// A 401 says how to authenticate; once a token was presented, also that it was not a valid one
// (RFC 6750 §3.1), so a client knows to get another rather than to add one.
door_refusal unauthorized(door_policy const& policy, door_refusal_kind kind, std::string detail, bool token_given) {
    return {kind, 401, core::errc::unauthorized, std::move(detail), bearer_challenge(policy, token_given), false, {}, {}};
}

door_refusal logged(door_refusal r, std::string_view event, std::string_view client, std::string message) {
    r.log = true;
    r.log_key = std::string(event) + " " + std::string(client);
    r.log_message = std::move(message);
    return r;
}

bool query_has_access_token(std::string_view target) {
    auto q = target.find('?');
    if (q == std::string_view::npos) return false;
    auto query = target.substr(q + 1);
    while (!query.empty()) {
        auto amp = query.find('&');
        auto pair = query.substr(0, amp);
        if (pair.substr(0, pair.find('=')) == "access_token") return true;
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    }
    return false;
}

}  // namespace

void apply_oauth(door_policy& policy, door_oauth const& oauth) {
    policy.oauth = oauth.verify;
    policy.introspect = oauth.introspect;
    policy.challenge = oauth.challenge;
}

boost::json::object journal_identity(door_admitted const& a) {
    if (!a.identity) return {};
    boost::json::array scopes;
    for (auto const& s : a.identity->scopes) scopes.emplace_back(s);
    return {{"method", "oauth"},           {"issuer", a.identity->issuer}, {"subject", a.identity->subject},
            {"token_id", a.identity->token_id}, {"scopes", std::move(scopes)}};
}

std::string refusal_words(unsigned status) {
    switch (status) {
        case 400: return "Bad request: ";
        case 401: return "Unauthorized: ";
        default: return "Forbidden: ";
    }
}

std::string bearer_challenge(door_policy const& policy, bool token_given) {
    std::string c = R"(Bearer realm="airlock")";
    if (token_given) c += R"(, error="invalid_token")";
    if (!policy.challenge.empty()) c += ", " + policy.challenge;
    return c;
}

door_request read_door_request(http_request const& req) {
    auto header = [&](http::field f) -> std::optional<std::string_view> {
        auto it = req.find(f);
        if (it == req.end()) return std::nullopt;
        return std::string_view(it->value().data(), it->value().size());
    };
    door_request d;
    d.host = header(http::field::host);
    d.origin = header(http::field::origin);
    d.authorization = header(http::field::authorization);
    d.is_options = req.method() == http::verb::options;
    d.token_in_query = query_has_access_token(std::string_view(req.target().data(), req.target().size()));
    d.client = client_address(req);
    return d;
}

door_policy make_door_policy(std::vector<std::string> hosts, std::vector<std::string> origins,
                             token_lookup authenticate, bool allow_anonymous, bool answers_preflight) {
    door_policy p;
    for (auto const& h : hosts) p.hosts.push_back(core::ascii_lowercase(h));
    for (auto const& o : origins) p.origins.push_back(core::ascii_lowercase(o));
    p.authenticate = std::move(authenticate);
    p.allow_anonymous = allow_anonymous;
    p.answers_preflight = answers_preflight;
    return p;
}

std::optional<door_refusal> check_host_origin(door_policy const& policy, door_request const& req) {
    if (!policy.hosts.empty()) {
        if (!req.host) return forbidden(door_refusal_kind::host_missing, core::errc::forbidden_host, "a Host header is required");
        auto h = core::ascii_lowercase(core::trim_ows(*req.host));
        if (!listed(policy.hosts, h))
            return logged(forbidden(door_refusal_kind::host_not_allowed, core::errc::forbidden_host, "this Host is not allowed"),
                          "host", req.client, "refused a request for Host '" + h + "' (DNS rebinding protection)");
    }
    if (req.origin) {
        auto o = core::ascii_lowercase(core::trim_ows(*req.origin));
        if (!listed(policy.origins, o))
            return logged(forbidden(door_refusal_kind::origin_not_allowed, core::errc::forbidden_origin,
                                    "this Origin is not allowed"),
                          "origin", req.client, "refused a request from Origin '" + o + "'");
    }
    return std::nullopt;
}

std::variant<door_admitted, door_refusal> check_credentials(door_policy const& policy, door_request const& req) {
    // A token in the URL ends up in logs, histories and Referer headers: it is refused whatever it is
    // (MCP authorization forbids it), before anything else is looked at.
    if (req.token_in_query) {
        door_refusal r{door_refusal_kind::token_in_query,
                       400,
                       core::errc::bad_request,
                       "an access token is accepted only in the Authorization header, never in the URL",
                       R"(Bearer realm="airlock", error="invalid_request")",
                       false,
                       {},
                       {}};
        return logged(std::move(r), "query", req.client,
                      "refused a request from " + std::string(req.client) + " with an access_token in its URL");
    }
    if (!policy.authenticate && !policy.oauth) {
        if (policy.allow_anonymous) return door_admitted{{}, true, {}};
        return unauthorized(policy, door_refusal_kind::no_tokens_configured, "no bearer tokens are configured", false);
    }
    if (!req.authorization) {
        if (policy.allow_anonymous) return door_admitted{{}, true, {}};
        return unauthorized(policy, door_refusal_kind::token_required, "a bearer token is required", false);
    }
    // "Bearer", any case, then spaces or tabs, then the token: RFC 9110 §11.4 allows a tab as well
    // as a space, and clients that build the header by hand send either, or two.
    auto value = core::trim_ows(*req.authorization);
    constexpr std::string_view scheme = "bearer";
    if (value.size() <= scheme.size() || !core::iequals(value.substr(0, scheme.size()), scheme) ||
        (value[scheme.size()] != ' ' && value[scheme.size()] != '\t'))
        return logged(unauthorized(policy, door_refusal_kind::not_bearer,
                                   "the Authorization header must be 'Bearer <token>'", true),
                      "scheme", req.client,
                      "refused a request from " + std::string(req.client) + " with a non-bearer Authorization header");
    auto const token = core::trim_ows(value.substr(scheme.size()));
    // The static tokens first: they are exact strings, and a JWT is never one of them.
    if (policy.authenticate)
        if (auto principal = policy.authenticate(token)) return door_admitted{std::move(*principal), false, {}};
    if (policy.introspect && std::count(token.begin(), token.end(), '.') != 2) {
        // Not a JWT: only the authorization server can tell (async_pass_door asks it). Refused here,
        // for a caller that cannot wait.
        auto r = unauthorized(policy, door_refusal_kind::opaque_token, "the access token is not valid", true);
        return r;
    }
    if (policy.oauth) return policy.oauth(token, req.client);
    return logged(unauthorized(policy, door_refusal_kind::unknown_token, "the bearer token is not valid", true), "token",
                  req.client, "refused a request from " + std::string(req.client) + " with an unknown bearer token");
}

door_verdict pass_door(door_policy const& policy, door_request const& req) {
    if (auto refused = check_host_origin(policy, req)) return std::move(*refused);
    if (policy.answers_preflight && req.is_options) return door_preflight{};
    auto who = check_credentials(policy, req);
    if (auto* refused = std::get_if<door_refusal>(&who)) return std::move(*refused);
    return std::get<door_admitted>(std::move(who));
}

boost::asio::awaitable<door_verdict> async_pass_door(door_policy const& policy, door_request req) {
    auto verdict = pass_door(policy, req);
    auto const* refused = std::get_if<door_refusal>(&verdict);
    if (!refused || refused->kind != door_refusal_kind::opaque_token || !policy.introspect) co_return verdict;
    auto value = core::trim_ows(*req.authorization);
    std::string token(core::trim_ows(value.substr(6)));  // past "Bearer", as check_credentials read it
    std::string client(req.client);
    auto asked = co_await policy.introspect(std::move(token), std::move(client));
    if (auto* r = std::get_if<door_refusal>(&asked)) co_return std::move(*r);
    co_return std::get<door_admitted>(std::move(asked));
}

}  // namespace airlock::service
