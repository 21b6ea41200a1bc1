#include "service/gateway/call.hpp"

#include "core/run_id.hpp"
#include "core/sha256.hpp"
#include "mcp/client/spawn_logged.hpp"
#include "service/gateway/cancellable.hpp"
#include "service/gateway/notify.hpp"
#include "service/gateway/replies.hpp"
#include "service/ops/metrics.hpp"

#include <boost/asio/this_coro.hpp>

#include <spdlog/spdlog.h>

#include <variant>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// The upstream's progress, passed on under the caller's own token.
std::function<void(mcp::progress_params const&)> progress_relay(mcp::request_context const& ctx,
                                                                asio::any_io_executor exec) {
    if (!ctx.progress || !ctx.notify) return {};
    auto token = *ctx.progress;
    auto notify = ctx.notify;
    return [token, notify, exec](mcp::progress_params const& pp) {
        json::object params{{"progressToken", mcp::to_json(token)}, {"progress", pp.progress}};
        if (pp.total) params["total"] = *pp.total;
        if (pp.message) params["message"] = *pp.message;
        mcp::notification n{"notifications/progress", std::move(params)};
        mcp::spawn_logged(exec, async_send_holding(notify, std::move(n)), "gateway progress relay");
    };
}

}  // namespace

call::call(call_options options, std::shared_ptr<roster const> who, std::shared_ptr<catalogue> tools,
           std::shared_ptr<session_runs> runs, std::shared_ptr<relays> streams)
    : options_(std::move(options)), roster_(std::move(who)), tools_(std::move(tools)), runs_(std::move(runs)),
      streams_(std::move(streams)) {}

std::string call::nonce() {
    std::uint8_t b[16];
    options_.random(b, sizeof b);
    return core::to_hex(b, sizeof b);
}

std::optional<upstream_facts> call::facts_of(std::string const& name, catalogue_entry const* resolved) const {
    auto server = upstream_of_call(name, resolved);
    if (!server) return std::nullopt;
    auto const* up = roster_->upstream(*server);
    if (!up) return std::nullopt;
    upstream_facts f;
    f.name = up->name;
    f.refused_by_egress = roster_->refused_by_egress(up->name);
    f.available = tools_->available(up->name);
    f.destination = up->client->destination();
    f.tool_destination = resolved ? up->client->destination_of(resolved->id) : f.destination;
    return f;
}

asio::awaitable<mcp::handler_result> call::async_run(mcp::request const& req, mcp::request_context& ctx) {
    auto request = read_call_request(req.params);
    if (!request) co_return invalid_params(request.error().message);
    auto const caller = roster_->caller(ctx);
    auto const* p = caller.get();
    if (!p) co_return refusal_result(not_permitted_text);

    auto run = co_await runs_->async_run_for(ctx, *p);
    if (!run) co_return no_run(run.error(), "call");
    auto hold = runs_->hold(*run);

    auto resolved = co_await tools_->async_resolve(*p, request->name);
    auto facts = facts_of(request->name, resolved ? resolved->get() : nullptr);
    auto decision = plan_call(*p, *request, resolved, facts, roster_->egress(), ctx.param_headers);
    if (auto* refusal = std::get_if<call_refusal>(&decision)) {
        co_await async_explain_scope(*refusal, ctx, *p, request->name);
        co_return co_await async_refuse(*refusal, *run, *p);
    }
    auto plan = std::get<planned_call>(std::move(decision));
    co_return co_await async_send(plan, std::move(request->arguments), *run, *p, ctx, std::move(hold));
}

asio::awaitable<void> call::async_explain_scope(call_refusal& refusal, mcp::request_context const& ctx,
                                               gateway_principal const& narrowed, std::string const& name) {
    if (refusal.what != call_refusal::kind::denied || refusal.reason != core::deny_reason::not_granted) co_return;
    auto const* configured = roster_->principal(ctx.principal);
    if (!configured || configured == &narrowed) co_return;
    auto full = co_await tools_->async_resolve(*configured, name);
    if (!full || !*full) co_return;
    auto const& id = (*full)->id;
    auto scope = roster_->scope_of(id.server());
    if (!scope) co_return;
    refusal.tool = id.uri();
    refusal.detail = "the access token lacks the scope '" + *scope + "' that upstream " + id.server() + " needs";
    refusal.text = "not permitted: this tool needs the OAuth scope '" + *scope + "', which the access token was not granted";
}

asio::awaitable<mcp::handler_result> call::async_refuse(call_refusal const& refusal, std::string const& run,
                                                        gateway_principal const& p) {
    switch (refusal.what) {
        case call_refusal::kind::invalid: co_return *refusal.error;
        case call_refusal::kind::unreachable: {
            auto const& id = *refusal.id;
            spdlog::info("call to {} by {}: upstream {} is unavailable", id.uri(), p.name, id.server());
            // Refused locally, nothing sent: counted, but it has no upstream latency to observe.
            if (options_.metrics) options_.metrics->tool_calls.with({id.server(), id.name(), "unreachable"}).inc();
            co_return refusal_result(refusal.text);
        }
        case call_refusal::kind::denied: break;
    }
    if (options_.metrics) options_.metrics->policy_denials.with({core::to_string(refusal.reason)}).inc();
    co_await runs_->async_journal(run, denial_record(refusal));
    spdlog::info("denied: principal {} tool {}: {} ({})", p.name, refusal.tool, core::to_string(refusal.reason),
                 refusal.detail);
    co_return refusal_result(refusal.text.empty() ? not_permitted_text : std::string_view(refusal.text));
}

asio::awaitable<boost::system::result<call::started, mcp::error_object>> call::async_start(
    planned_call const& plan, json::value const& arguments, std::string const& run, gateway_principal const& p,
    mcp::request_context const& ctx) {
    auto const& tool = plan.entry->id;
    auto step = runs_->next_step(run);
    auto run_id = core::run_id::parse(run);
    auto key = run_id ? core::effect_key::make(*run_id, step, core::effect_key::kind::tool).str()
                      : run + "/" + std::to_string(step) + "/tool";
    auto now = std::chrono::floor<std::chrono::seconds>(options_.clock());
    auto prov = core::make_provenance(run, key, p.grants.name, p.grants.digest, tool, arguments, now,
                                      options_.provenance_lifetime, nonce());
    if (!prov) co_return invalid_params(prov.error().message);
    if (options_.signer) {
        if (auto s = options_.signer->sign(*prov); !s) {
            spdlog::error("provenance signing failed: {}", s.error().message);
            co_return mcp::error_object{mcp::rpc_code::internal_error, "provenance signing failed", std::nullopt};
        }
    }
    // The start record is durable before the call leaves: a crash after this line reads as in doubt.
    auto start_batch = core::one_record(started_record(key, plan, arguments, *prov, ctx.request_id_text, ctx.authentication));
    if (auto s = co_await runs_->async_append(run, std::move(start_batch)); !s) {
        if (s.error().code == "record_too_large" || s.error().code == "too_deep") {
            // Every call is journaled with its arguments before it leaves; these do not fit.
            spdlog::warn("call {} by {} not made: its arguments are too large to journal", tool.uri(), p.name);
            co_return invalid_params("the call was not made: its arguments cannot be journaled (" + s.error().message + ")");
        }
        spdlog::error("journal: effect_started refused, call not made: {}", s.error().message);
        co_return mcp::error_object{mcp::rpc_code::internal_error, "the journal is unavailable", std::nullopt};
    }
    co_return started{std::move(key), std::move(*prov)};
}

asio::awaitable<mcp::handler_result> call::async_send(planned_call const& plan, json::value arguments, std::string run,
                                                      gateway_principal const& p, mcp::request_context& ctx,
                                                      std::shared_ptr<void> hold) {
    auto begun = co_await async_start(plan, arguments, run, p, ctx);
    if (!begun) co_return begun.error();
    auto const* up = roster_->upstream(plan.upstream);
    auto tool = plan.entry->id;
    std::optional<core::provenance> block = std::move(begun->provenance);
    std::optional<std::chrono::milliseconds> deadline = options_.call_deadline;
    auto call_exec = co_await asio::this_coro::executor;
    auto on_progress = progress_relay(ctx, call_exec);
    // Log messages on the call's own stream (HTTP upstreams) go to the caller as they are.
    auto on_notification = relays::relay_to(ctx, call_exec);
    relays::inflight_guard in_flight(*streams_, up->name, ctx, call_exec);
    auto on_server_request = relays::ask_caller(up->name, ctx);
    auto sent = up->client->async_call_tool(tool, arguments, block, on_progress, deadline, on_notification,
                                            on_server_request);
    auto call_started = std::chrono::steady_clock::now();
    // Whether the caller's cancellation reached the call: a call it cut short fails with an error,
    // not a tool result, whether the cancellation ended the wait here or in the transport.
    auto cancelled = std::make_shared<cancellation_seen>();
    if (ctx.cancelled.is_connected())
        ctx.cancelled.assign([cancelled](asio::cancellation_type t) {
            cancelled->seen = true;
            cancelled->inner.emit(t);
        });
    auto finished = co_await async_cancellable(cancelled->inner.slot(), std::move(sent));
    if (ctx.cancelled.is_connected()) ctx.cancelled.clear();
    auto call_took = std::chrono::steady_clock::now() - call_started;
    bool const answered = finished && *finished;
    bool const is_error = answered && (*finished)->is_error.value_or(false);
    auto failed_kind = finished && !*finished ? std::optional(finished->error().kind) : std::nullopt;
    auto done = finish_call(begun->effect_key, tool, std::move(finished), cancelled->seen, plan.keep);
    if (options_.metrics) options_.metrics->tool_call(tool.server(), tool.name(), done.metric_kind, call_took);
    // Never the arguments or the result: they may carry what the caller considers secret.
    spdlog::debug("call {} by {}: {} after {} ms", tool.uri(), p.name,
                  answered ? (is_error ? "isError" : "ok")
                           : core::to_string(failed_kind.value_or(core::tool_error_kind::timed_out)),
                  std::chrono::duration_cast<std::chrono::milliseconds>(call_took).count());
    // The outcome record need not delay the reply: lost in a crash, the effect reads as in doubt,
    // which is the truth.
    runs_->journal_outcome(call_exec, std::move(run), std::move(done.record), std::move(hold),
                           {begun->effect_key, tool.uri(), plan.mutates});
    if (done.error) co_return std::move(*done.error);
    co_return std::move(done.result);
}

}  // namespace airlock::service
