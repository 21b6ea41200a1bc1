#include "service/rest/route_context.hpp"

#include "core/ascii.hpp"
#include "core/canonical_json.hpp"
#include "core/journal_rules.hpp"
#include "core/secrets.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <charconv>

namespace airlock::service::rest_routes {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

}  // namespace

std::optional<std::string> query::get(std::string_view key) const {
    for (auto const& [k, v] : params)
        if (k == key) return v;
    return std::nullopt;
}

std::optional<std::string> route_context::unknown_param(std::initializer_list<std::string_view> allowed) const {
    for (auto const& [k, v] : q.params)
        if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) return k;
    return std::nullopt;
}

http_response route_context::unknown_param_problem(std::string const& key) const {
    return problem(core::errc::bad_request, "unknown query parameter '" + key + "'", {{key, "not a parameter of this route"}},
                   version());
}

// An empty body is not JSON: read as {}, it would be blamed on fields the caller never sent.
core::result<json::object> route_context::body_object() const {
    if (req.body().empty()) return core::make_error(core::errc::bad_request, "the body is empty: it must be a JSON object");
    auto ct = req[http::field::content_type];
    auto base = core::ascii_lowercase(ct.substr(0, ct.find(';')));
    while (!base.empty() && base.back() == ' ') base.pop_back();
    if (base != "application/json") return core::make_error(core::errc::unsupported_media_type, "the body must be application/json");
    auto v = core::parse_ijson(req.body());
    if (!v && v.error().code == "too_deep")
        return core::make_error(core::errc::too_deep, "the body nests deeper than " + std::to_string(core::max_json_depth) +
                                                " levels, the most airlock accepts");
    if (!v) return core::make_error(core::errc::bad_request, "the body is not valid JSON: " + v.error().message);
    if (!v->is_object()) return core::make_error(core::errc::bad_request, "the body must be a JSON object");
    return std::move(v->get_object());
}

// body_object's codes are all errc spellings: unsupported_media_type (415), too_deep (422), bad_request.
http_response route_context::body_problem(core::error const& e) const {
    auto code = core::errc_from_string(e.code);
    return problem(code ? http_status(*code) : http::status::bad_request, e.code, e.message, {}, version());
}

std::optional<http_response> route_context::need_runtime() const {
    if (options.runs) return std::nullopt;
    return problem(core::errc::unavailable, "no agent runtime is configured", {}, version());
}

bool route_context::sees(core::run_summary const& s) const {
    return is_operator || (!s.principal.empty() && s.principal == principal);
}

http_response route_context::forbidden(std::string_view detail) const {
    return problem(core::errc::forbidden, detail, {}, version());
}

// A run the caller may not see is answered exactly as one that does not exist, so its id reveals
// nothing.
asio::awaitable<core::result<core::run_summary>> route_context::async_run_head(std::string id) const {
    if (auto bad = core::check_run_id(id); !bad) co_return core::make_error(core::errc::unknown_run, "no run " + id);
    auto head = co_await options.journal->async_head(id);
    if (!head) co_return head.error();
    if (!*head || !sees(**head)) co_return core::make_error(core::errc::unknown_run, "no run " + id);
    co_return std::move(**head);
}

http_response route_context::problem_for(core::error const& e, std::string_view field) const {
    return service::problem_for(e, version(), field);
}

http_response route_context::json_ok(http::status status, json::value body) const {
    core::secrets::redact(body);
    return json_response(status, json::serialize(body), version());
}

std::optional<std::uint64_t> parse_uint(std::string_view s) {
    std::uint64_t n = 0;
    if (s.empty()) return std::nullopt;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return n;
}

std::string range_fault(std::optional<std::uint64_t> const& parsed, std::string_view what) {
    return parsed ? "out of range" : "must be " + std::string(what);
}

json::string_view string_field(json::object const& o, std::string_view key) {
    auto const* v = o.if_contains(key);
    if (!v || !v->is_string()) return {};
    return v->get_string();
}

}  // namespace airlock::service::rest_routes
