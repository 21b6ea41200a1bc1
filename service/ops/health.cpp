#include "service/ops/health.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace airlock::service {

namespace json = boost::json;

namespace {

std::string_view to_string(readiness_inputs::upstream_state s) {
    switch (s) {
        case readiness_inputs::upstream_state::up: return "up";
        case readiness_inputs::upstream_state::down: return "down";
        case readiness_inputs::upstream_state::refused: return "refused";
        case readiness_inputs::upstream_state::unknown: break;
    }
    return "unknown";
}

// Probes may use HEAD; anything else is a mistake worth a clear answer.
std::optional<http_response> refuse_method(http_request const& req) {
    if (req.method() == http::verb::get || req.method() == http::verb::head) return std::nullopt;
    auto res = json_error(http::status::method_not_allowed, "method_not_allowed", "use GET or HEAD", req.version());
    res.set(http::field::allow, "GET, HEAD");
    return res;
}

http_response answer(http_request const& req, http::status status, std::string body) {
    auto res = json_response(status, std::move(body), req.version());
    if (req.method() == http::verb::head) {
        // The length a GET would have, and no body.
        auto length = res.body().size();
        res.body().clear();
        res.content_length(length);
    }
    return res;
}

}  // namespace

readiness evaluate_readiness(readiness_inputs const& in) {
    readiness out;
    json::object checks;
    auto check = [&](std::string name, bool ok, std::string_view state, bool optional = false) {
        json::object c{{"ok", ok}, {"state", state}};
        if (optional) c["optional"] = true;
        checks[name] = std::move(c);
        if (!ok) out.failed.push_back(std::move(name));
    };
    // A journal that is open but cannot take appends fails every call: not ready, naming why.
    check("journal", in.journal_open && in.journal_fault.empty(),
          !in.journal_open ? "closed" : in.journal_fault.empty() ? "open" : std::string_view(in.journal_fault));
    check("draining", !in.draining, in.draining ? "draining" : "serving");
    for (auto const& u : in.upstreams) {
        bool up = u.state == readiness_inputs::upstream_state::up;
        check("upstream:" + u.name, up || u.optional, to_string(u.state), u.optional);
    }
    for (auto const& i : in.issuers) check("oauth:" + i.issuer, i.state == "keys", i.state);
    out.ready = out.failed.empty();
    json::array failed;
    for (auto const& f : out.failed) failed.emplace_back(f);
    json::object body{{"status", out.ready ? "ready" : "not_ready"}, {"failed", std::move(failed)}, {"checks", std::move(checks)}};
    out.body = json::serialize(body);
    return out;
}

http_response healthz_response(http_request const& req) {
    if (auto refused = refuse_method(req)) return std::move(*refused);
    return answer(req, http::status::ok, R"({"status":"ok"})");
}

http_response readyz_response(http_request const& req, readiness_inputs const& in) {
    if (auto refused = refuse_method(req)) return std::move(*refused);
    auto r = evaluate_readiness(in);
    return answer(req, r.ready ? http::status::ok : http::status::service_unavailable, std::move(r.body));
}

}  // namespace airlock::service
