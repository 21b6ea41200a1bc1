#include "service/rest/run_routes.hpp"

#include "core/journal_rules.hpp"
#include "core/rfc3339.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <variant>

namespace airlock::service::rest_routes {

namespace asio = boost::asio;
namespace json = boost::json;
using core::errc;

namespace {

// ?status=, ?agent=, ?kind=, ?since=, ?cursor=, ?limit=, ?principal= as a filter, or the problem to answer.
asio::awaitable<std::variant<core::run_filter, http_response>> async_run_filter(route_context& c) {
    auto const v = c.version();
    core::run_filter f;
    if (auto p = c.q.get("principal")) {
        if (!c.is_operator) co_return c.forbidden("only operators may list the runs of a principal (?principal=)");
        if (p->empty())
            co_return problem(http::status::bad_request, errc::invalid_field, "principal must name a principal",
                              {{"principal", "empty"}}, v);
        f.principal = *p;
    } else if (!c.is_operator) {
        f.principal = c.principal;  // "" (a tokenless request served as nobody) matches no run
    }
    if (auto s = c.q.get("status")) {
        if (std::find(std::begin(core::run_statuses), std::end(core::run_statuses), *s) == std::end(core::run_statuses))
            co_return problem(http::status::bad_request, errc::invalid_field, "status '" + *s + "' is not a run status",
                              {{"status", "one of running, succeeded, failed, exhausted, awaiting_approval, "
                                          "quarantined, cancelled"}},
                              v);
        f.status = *s;
    }
    if (auto a = c.q.get("agent")) f.agent = *a;
    // Agent runs unless asked: a gateway's sessions would otherwise bury them.
    f.kind = "agent";
    if (auto k = c.q.get("kind")) {
        if (*k == "all") f.kind.reset();
        else if (std::find_if(std::begin(core::run_kinds), std::end(core::run_kinds), [&](char const* n) { return *k == n; }) !=
                 std::end(core::run_kinds))
            f.kind = *k;
        else
            co_return problem(http::status::bad_request, errc::invalid_field, "kind '" + *k + "' is not a run kind",
                              {{"kind", "one of agent, session, airlock, all"}}, v);
    }
    if (auto s = c.q.get("since")) {
        auto bound = core::since_bound(*s);
        if (!bound)
            co_return problem(http::status::bad_request, errc::invalid_field, "since must be an RFC 3339 time",
                              {{"since", "e.g. 2026-11-30T10:00:00Z or 2026-11-30T11:00:00+01:00"}}, v);
        f.since = std::move(*bound);
    }
    if (auto cur = c.q.get("cursor")) {
        // A next_cursor is the last run of a page the caller saw, so it names a run the caller
        // sees; anything else would silently start the listing somewhere arbitrary.
        auto last = co_await c.async_run_head(*cur);
        if (!last && last.error().code != "unknown_run") co_return c.problem_for(last.error());
        if (!last)
            co_return problem(http::status::bad_request, errc::invalid_field, "cursor is not one this API returned",
                              {{"cursor", "use next_cursor from the previous page"}}, v);
        f.cursor = *cur;
    }
    f.limit = 50;
    if (auto l = c.q.get("limit")) {
        auto n = parse_uint(*l);
        if (!n || *n == 0 || *n > c.options.max_page)
            co_return problem(http::status::bad_request, errc::invalid_field,
                              "limit must be a whole number from 1 to " + std::to_string(c.options.max_page),
                              {{"limit", range_fault(n, "a whole number")}}, v);
        f.limit = static_cast<std::size_t>(*n);
    }
    co_return f;
}

// The body of POST /v1/runs as a start request, or the field errors it has.
std::variant<run_start_request, field_errors> start_request_of(json::object const& body, std::string const& principal) {
    run_start_request start;
    start.principal = principal;
    field_errors errors;
    for (auto const& [k, v] : body)
        if (k != "agent" && k != "capability" && k != "input" && k != "idempotency_key")
            errors.emplace_back(std::string(k), "unknown field");
    auto text_field = [&](std::string_view key, std::string& out) {
        auto const* v = body.if_contains(key);
        if (!v) return;
        if (!v->is_string() || v->get_string().empty())
            errors.emplace_back(std::string(key), "must be a non-empty string");
        else
            out = v->get_string();
    };
    text_field("agent", start.agent);
    text_field("capability", start.capability);
    if (body.contains("agent") == body.contains("capability"))
        errors.emplace_back("agent", "give exactly one of agent and capability");
    if (auto const* in = body.if_contains("input")) start.input = *in;
    else errors.emplace_back("input", "required");
    if (auto const* k = body.if_contains("idempotency_key")) {
        if (!k->is_string() || k->get_string().empty() || k->get_string().size() > 200)
            errors.emplace_back("idempotency_key", "must be a string of 1 to 200 characters");
        else
            start.idempotency_key = std::string(k->get_string());
    }
    if (!errors.empty()) return errors;
    return start;
}

bool settled(core::run_summary const& head) { return head.sealed || head.status == "awaiting_approval"; }

// Waits up to `wait` for a run to settle (end, or await approval): the runtime says so when it can;
// otherwise the journal's head is polled, a poll every few tens of milliseconds costing one index read.
asio::awaitable<void> async_wait_for(route_context& c, std::string const& id, std::chrono::seconds wait) {
    auto up_to = std::chrono::duration_cast<std::chrono::milliseconds>(wait);
    if (co_await c.options.runs->async_wait(id, up_to)) co_return;
    auto deadline = std::chrono::steady_clock::now() + wait;
    auto timer = asio::steady_timer(co_await asio::this_coro::executor);
    auto pause = std::chrono::milliseconds(5);
    for (;;) {
        auto head = co_await c.options.journal->async_head(id);
        if (head && *head && settled(**head)) break;
        if (std::chrono::steady_clock::now() >= deadline) break;
        timer.expires_after(pause);
        auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (ec) break;
        pause = std::min(pause * 2, std::chrono::milliseconds(100));
    }
}

// The problem for a start the runtime refused: an unknown agent or capability names the field that
// named it; a full or stopping runtime says when to retry. Both pass: the runtime is full for now,
// or airlock is stopping and will be back (or another instance takes the retry).
http_response start_refused(route_context& c, core::error const& e, std::string_view field) {
    auto res = c.problem_for(e, e.code.starts_with("unknown_") ? field : std::string_view{});
    if (e.code == core::to_string(errc::at_capacity) || e.code == core::to_string(errc::unavailable))
        res.set(http::field::retry_after, std::to_string(c.options.runs->retry_after().count()));
    return res;
}

}  // namespace

asio::awaitable<http_response> async_list_runs(route_context& c) {
    if (auto k = c.unknown_param({"status", "agent", "since", "cursor", "limit", "principal", "kind"}))
        co_return c.unknown_param_problem(*k);
    auto filter = co_await async_run_filter(c);
    if (auto* refused = std::get_if<http_response>(&filter)) co_return std::move(*refused);
    auto page = co_await c.options.journal->async_runs(std::get<core::run_filter>(filter));
    if (!page) co_return c.problem_for(page.error());
    json::object o;
    json::array runs;
    for (auto const& s : page->runs) runs.push_back(core::to_json(s));
    o["runs"] = std::move(runs);
    o["next_cursor"] = page->next_cursor ? json::value(*page->next_cursor) : json::value(nullptr);
    co_return c.json_ok(http::status::ok, o);
}

asio::awaitable<http_response> async_start_run(route_context& c) {
    auto const v = c.version();
    if (auto k = c.unknown_param({"wait"})) co_return c.unknown_param_problem(*k);
    if (auto bad = c.need_runtime()) co_return std::move(*bad);
    std::optional<std::chrono::seconds> wait;
    if (auto w = c.q.get("wait")) {
        auto n = parse_uint(*w);
        if (!n || *n > static_cast<std::uint64_t>(c.options.max_wait.count()))
            co_return problem(http::status::bad_request, errc::invalid_field,
                              "wait must be a whole number of seconds from 0 to " + std::to_string(c.options.max_wait.count()),
                              {{"wait", range_fault(n, "a whole number of seconds")}}, v);
        wait = std::chrono::seconds(*n);
    }
    auto body = c.body_object();
    if (!body) co_return c.body_problem(body.error());
    auto request = start_request_of(*body, c.principal);
    if (auto* errors = std::get_if<field_errors>(&request))
        co_return problem(errc::invalid_field, "the run request is not valid", std::move(*errors), v);
    auto& start = std::get<run_start_request>(request);
    auto field = start.agent.empty() ? "capability" : "agent";
    auto started = co_await c.options.runs->async_start(std::move(start));
    if (!started) co_return start_refused(c, started.error(), field);
    auto id = started->run_id;
    if (!started->fresh) {
        // An idempotency key names the caller's earlier run; should it name a run the caller may
        // not see (claimed before keys were kept per principal), its contents stay hidden.
        auto earlier = co_await c.async_run_head(id);
        if (!earlier)
            co_return problem(errc::conflict, "this idempotency_key was used for another run",
                              {{"idempotency_key", "already used"}}, v);
    }
    if (wait && wait->count() > 0) co_await async_wait_for(c, id, *wait);
    auto head = co_await c.async_run_head(id);
    auto records = co_await c.options.journal->async_read(id);
    json::object o;
    if (head && records) o = describe_run(*head, *records);
    o["run_id"] = id;
    o["fresh"] = started->fresh;
    bool done = head && settled(*head);
    auto res = c.json_ok(done && wait ? http::status::ok : http::status::accepted, o);
    res.set(http::field::location, "/v1/runs/" + id);
    co_return res;
}

asio::awaitable<http_response> async_get_run(route_context& c) {
    if (auto k = c.unknown_param({})) co_return c.unknown_param_problem(*k);
    auto head = co_await c.async_run_head(c.captures[0]);
    if (!head) co_return c.problem_for(head.error());
    auto records = co_await c.options.journal->async_read(c.captures[0]);
    if (!records) co_return c.problem_for(records.error());
    co_return c.json_ok(http::status::ok, describe_run(*head, *records));
}

asio::awaitable<http_response> async_run_journal(route_context& c) {
    if (auto k = c.unknown_param({"from_seq"})) co_return c.unknown_param_problem(*k);
    std::uint64_t from = 1;
    if (auto f = c.q.get("from_seq")) {
        auto n = parse_uint(*f);
        if (!n || *n == 0)
            co_return problem(http::status::bad_request, errc::invalid_field, "from_seq must be a whole number from 1",
                              {{"from_seq", range_fault(n, "a whole number")}}, c.version());
        from = *n;
    }
    auto head = co_await c.async_run_head(c.captures[0]);
    if (!head) co_return c.problem_for(head.error());
    auto records = co_await c.options.journal->async_read(c.captures[0], from);
    if (!records) co_return c.problem_for(records.error());
    std::string lines;
    for (auto const& r : *records) {
        lines += core::serialize_record(r);
        lines += '\n';
    }
    auto res = json_response(http::status::ok, std::move(lines), c.version());
    res.set(http::field::content_type, "application/jsonl");
    co_return res;
}

asio::awaitable<http_response> async_cancel_run(route_context& c) {
    if (auto k = c.unknown_param({})) co_return c.unknown_param_problem(*k);
    if (auto bad = c.need_runtime()) co_return std::move(*bad);
    auto head = co_await c.async_run_head(c.captures[0]);
    if (!head) co_return c.problem_for(head.error());
    if (head->sealed)
        co_return problem(errc::sealed, "run " + head->run_id + " has ended (" + head->status + ")", {}, c.version());
    auto r = co_await c.options.runs->async_cancel(c.captures[0]);
    if (!r) co_return c.problem_for(r.error());
    json::object o;
    o["run_id"] = c.captures[0];
    o["cancel_requested"] = true;
    co_return c.json_ok(http::status::accepted, o);
}

asio::awaitable<http_response> async_replay_run(route_context& c) {
    if (auto k = c.unknown_param({})) co_return c.unknown_param_problem(*k);
    if (auto bad = c.need_runtime()) co_return std::move(*bad);
    auto head = co_await c.async_run_head(c.captures[0]);
    if (!head) co_return c.problem_for(head.error());
    auto r = co_await c.options.runs->async_replay(c.captures[0]);
    if (!r) co_return c.problem_for(r.error());
    co_return c.json_ok(http::status::ok, *r);
}

asio::awaitable<http_response> async_verify_run(route_context& c) {
    if (auto k = c.unknown_param({})) co_return c.unknown_param_problem(*k);
    auto head = co_await c.async_run_head(c.captures[0]);
    if (!head) co_return c.problem_for(head.error());
    auto fault = co_await c.options.journal->async_verify(c.captures[0]);
    if (!fault) co_return c.problem_for(fault.error());
    json::object o;
    o["run_id"] = c.captures[0];
    o["verified"] = !fault->has_value();
    o["records"] = head->head_seq;
    o["head"] = core::to_json(*head).at("head_hash");
    if (*fault) {
        json::object f;
        f["seq"] = (*fault)->seq;
        f["reason"] = (*fault)->reason;
        o["fault"] = std::move(f);
    }
    co_return c.json_ok(http::status::ok, o);
}

}  // namespace airlock::service::rest_routes

namespace airlock::service {

namespace {

// The MCP-style result text of an effect's output, for a completion: {"text": ...} or a string.
std::optional<boost::json::value> completion_text(boost::json::object const& output) {
    if (auto const* t = output.if_contains("text")) return *t;
    return std::nullopt;
}

}  // namespace

boost::json::object describe_run(core::run_summary const& s, std::vector<core::record> const& records) {
    using rest_routes::string_field;
    boost::json::object o = core::to_json(s);  // the summary's fields first
    std::optional<boost::json::value> output;
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

}  // namespace airlock::service
