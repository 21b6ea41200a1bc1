#include "service/rest/approval_routes.hpp"

#include <map>

namespace airlock::service {

namespace json = boost::json;
using rest_routes::string_field;

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

}  // namespace airlock::service

namespace airlock::service::rest_routes {

namespace asio = boost::asio;
using core::errc;

namespace {

struct decision_request {
    std::string decision;  // "approve" or "reject"
    std::string reason;
};

std::variant<decision_request, field_errors> decision_of(json::object const& body) {
    field_errors errors;
    for (auto const& [k, v] : body)
        if (k != "decision" && k != "reason") errors.emplace_back(std::string(k), "unknown field");
    decision_request d;
    d.decision = string_field(body, "decision");
    if (d.decision != "approve" && d.decision != "reject") errors.emplace_back("decision", "must be \"approve\" or \"reject\"");
    if (auto const* r = body.if_contains("reason")) {
        if (!r->is_string() || r->get_string().size() > 4096)
            errors.emplace_back("reason", "must be a string of at most 4096 characters");
        else
            d.reason = r->get_string();
    }
    if (!errors.empty()) return errors;
    return d;
}

}  // namespace

asio::awaitable<http_response> async_list_approvals(route_context& c) {
    if (auto k = c.unknown_param({"status"})) co_return c.unknown_param_problem(*k);
    auto head = co_await c.async_run_head(c.captures[0]);
    if (!head) co_return c.problem_for(head.error());
    auto records = co_await c.options.journal->async_read(c.captures[0]);
    if (!records) co_return c.problem_for(records.error());
    auto all = approvals_of(*records);
    auto want = c.q.get("status");
    if (want && *want != "pending" && *want != "approved" && *want != "rejected" && *want != "withdrawn")
        co_return problem(http::status::bad_request, errc::invalid_field,
                          "status must be pending, approved, rejected or withdrawn", {{"status", "unknown approval status"}},
                          c.version());
    json::array out;
    for (auto& a : all)
        if (!want || a.as_object().at("status").as_string() == *want) out.push_back(std::move(a));
    json::object o;
    o["run_id"] = c.captures[0];
    o["approvals"] = std::move(out);
    co_return c.json_ok(http::status::ok, o);
}

asio::awaitable<http_response> async_decide_approval(route_context& c) {
    if (auto k = c.unknown_param({})) co_return c.unknown_param_problem(*k);
    if (auto bad = c.need_runtime()) co_return std::move(*bad);
    // The approval gate is a second pair of eyes: the principal that started a run must not wave
    // its own calls through, so only an operator decides.
    if (!c.is_operator) co_return c.forbidden("only operators may decide approvals");
    auto body = c.body_object();
    if (!body) co_return c.body_problem(body.error());
    auto request = decision_of(*body);
    if (auto* errors = std::get_if<field_errors>(&request))
        co_return problem(errc::invalid_field, "the decision is not valid", std::move(*errors), c.version());
    auto const& d = std::get<decision_request>(request);
    auto head = co_await c.async_run_head(c.captures[0]);
    if (!head) co_return c.problem_for(head.error());
    auto r = co_await c.options.runs->async_decide(c.captures[0], c.captures[1], d.decision == "approve", d.reason,
                                                   c.principal);
    if (!r) co_return c.problem_for(r.error());
    json::object o;
    o["run_id"] = c.captures[0];
    o["effect_key"] = c.captures[1];
    o["decision"] = d.decision;
    co_return c.json_ok(http::status::ok, o);
}

}  // namespace airlock::service::rest_routes
