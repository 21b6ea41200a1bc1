#include "service/agents/runner_driver.hpp"

#include "core/effect_records.hpp"
#include "core/label.hpp"
#include "core/model_json.hpp"
#include "core/provenance.hpp"
#include "core/sha256.hpp"
#include "mcp/client/spawn_logged.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <utility>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;
namespace recovery = core::recovery;

std::uint64_t unix_ms(runner_options const& options) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(options.clock().time_since_epoch()).count());
}

namespace {

// A model call raced against its run's cancellation: the call runs in a coroutine of its own, so
// a cancel need not wait for a provider that is slow to answer (a model may think for minutes).
struct model_race {
    explicit model_race(asio::any_io_executor ex) : done(std::move(ex), 1) {}
    std::optional<core::model_result<core::completion>> result;  // written before `done` is rung
    cancel_channel done;
};

asio::awaitable<void> async_complete_into(std::shared_ptr<core::model_provider> provider, core::completion_request request,
                                          std::shared_ptr<model_race> race) {
    core::model_result<core::completion> r = core::model_error{core::tool_error_kind::unreachable, "", ""};
    try {
        r = co_await provider->async_complete(std::move(request));
    } catch (std::exception const& e) {
        r = core::model_error{core::tool_error_kind::unreachable, "", std::string("the provider failed: ") + e.what()};
    }
    race->result = std::move(r);
    race->done.try_send(boost::system::error_code{});
}

// The completion, or nullopt when the run was cancelled first (the answer, if one comes, is dropped).
asio::awaitable<std::optional<core::model_result<core::completion>>> async_complete_unless_cancelled(
    std::shared_ptr<core::model_provider> provider, core::completion_request request, std::shared_ptr<cancel_channel> cancelled) {
    if (!cancelled) co_return co_await provider->async_complete(std::move(request));
    auto exec = co_await asio::this_coro::executor;
    auto race = std::make_shared<model_race>(exec);
    mcp::spawn_logged(exec, async_complete_into(std::move(provider), std::move(request), race), "agent model call");
    using namespace asio::experimental::awaitable_operators;
    auto answered = race->done.async_receive(asio::as_tuple(asio::use_awaitable));
    auto stopped = cancelled->async_receive(asio::as_tuple(asio::use_awaitable));
    auto first = co_await (std::move(answered) || std::move(stopped));
    if (first.index() == 1) co_return std::nullopt;
    co_return std::move(*race->result);
}

}  // namespace

run_driver::run_driver(context ctx, std::vector<core::record> records, core::agent_loop loop)
    : ctx_(std::move(ctx)),
      run_id_(ctx_.slot->run_id),
      records_(std::move(records)),
      cursor_(run_id_, records_),
      loop_(std::move(loop)) {}

std::nullopt_t run_driver::ended(core::run_status status, std::string reason) {
    out_.status = status;
    out_.reason = std::move(reason);
    out_.records = cursor_.matched();
    return std::nullopt;
}

std::string run_driver::nonce() {
    std::uint8_t b[16];
    ctx_.options.random(b, sizeof b);
    return core::to_hex(b, sizeof b);
}

asio::awaitable<core::result<void>> run_driver::async_append(std::vector<core::new_record> batch) {
    auto r = co_await ctx_.options.journal->async_append(run_id_, std::move(batch));
    if (!r) co_return r.error();
    co_return core::result<void>{};
}

asio::awaitable<core::result<void>> run_driver::async_seal(std::string status, std::string reason) {
    auto r = co_await ctx_.options.journal->async_seal(run_id_, status, reason);
    if (!r) co_return r.error();
    co_return core::result<void>{};
}

asio::awaitable<core::result<runner::drive_result>> run_driver::async_run(std::uint64_t admitted_at_ms) {
    auto action = loop_.next(core::loop_event{core::start_event{}, admitted_at_ms});
    auto const mode = ctx_.live ? recovery::mode::live : recovery::mode::replay;
    for (;;) {
        if (ctx_.live && cursor_.at_end()) {
            auto stopped = co_await async_stop_if_asked(action);
            if (!stopped) co_return stopped.error();
            if (*stopped) co_return out_;
        }
        auto next = co_await async_perform(action, recovery::next(action, cursor_, mode));
        if (!next) co_return next.error();
        if (!*next) co_return out_;
        action = loop_.next(**next);
    }
}

// Past the end of the journal, before anything new is done: a stopping service or a cancel.
asio::awaitable<core::result<bool>> run_driver::async_stop_if_asked(core::loop_action const& action) {
    if (ctx_.stopping()) {
        ended(core::run_status::running, "stopped with the service; resumed at its next start");
        co_return true;
    }
    if (ctx_.slot->cancel.load() && !std::holds_alternative<core::finish_action>(action)) {
        std::string reason = "cancelled by request";
        if (auto r = co_await async_seal("cancelled", reason); !r) co_return r.error();
        ended(core::run_status::cancelled, std::move(reason));
        co_return true;
    }
    co_return false;
}

asio::awaitable<run_driver::step> run_driver::async_perform(core::loop_action const& action, recovery::decision d) {
    if (auto* r = std::get_if<recovery::refuse>(&d)) co_return r->why;
    if (auto* s = std::get_if<recovery::sealed>(&d)) co_return ended(s->status, std::move(s->reason));
    if (auto* r = std::get_if<recovery::replay_event>(&d)) co_return std::move(r->event);
    if (std::holds_alternative<recovery::park>(d)) {
        out_.parked = true;
        co_return ended(core::run_status::awaiting_approval,
                        "awaiting approval of " + std::get<core::await_approval_action>(action).effect_key);
    }
    if (auto* w = std::get_if<recovery::write>(&d)) {
        if (!w->records.empty())
            if (auto r = co_await async_append(std::move(w->records)); !r) co_return r.error();
        co_return core::loop_event{core::appended_event{}, 0};
    }
    if (auto* f = std::get_if<recovery::finish>(&d)) co_return co_await async_finish(std::get<core::finish_action>(action), *f);
    if (auto* q = std::get_if<recovery::quarantine>(&d)) co_return co_await async_quarantine(std::move(q->reason));
    auto const* retry = std::get_if<recovery::retry>(&d);
    if (auto const* model = std::get_if<core::call_model_action>(&action)) co_return co_await async_call_model(*model, retry);
    co_return co_await async_call_tool(std::get<core::call_tool_action>(action), retry);
}

asio::awaitable<run_driver::step> run_driver::async_call_model(core::call_model_action const& model,
                                                               recovery::retry const* retry) {
    auto const& entry = ctx_.agent;
    if (retry) {
        if (auto r = co_await async_append(core::one_record(retry->note)); !r) co_return r.error();
    } else {
        core::effect_started started;
        started.effect_key = model.effect_key;
        started.target = core::effect_target::model;
        started.provider = entry.provider_name;
        started.model = model.request.model;
        started.request_sha256 = model.request_sha256;
        started.mutates = false;
        started.at_ms = unix_ms(ctx_.options);
        if (auto r = co_await async_append(core::one_record(core::record_kind::effect_started, core::to_json(started))); !r)
            co_return r.error();
    }
    auto dest = entry.provider->destination_of();
    bool cancelled_mid_call = false;
    core::model_result<core::completion> result = core::model_error{core::tool_error_kind::unreachable, "", ""};
    if (!ctx_.options.egress.permits(dest)) {
        result = core::model_error{core::tool_error_kind::unreachable, "model://" + entry.provider_name,
                                   "egress_denied: " + core::to_string(dest) + " is not in the egress allowlist; nothing was sent"};
    } else {
        auto request = model.request;
        auto raced = co_await async_complete_unless_cancelled(entry.provider, std::move(request), ctx_.slot->cancelled);
        if (raced) {
            result = std::move(*raced);
        } else {
            cancelled_mid_call = true;
            result = core::model_error{core::tool_error_kind::timed_out, "model://" + entry.provider_name,
                                       "cancelled by request before the model answered; a late answer is dropped"};
        }
    }
    auto at = unix_ms(ctx_.options);
    core::new_record after;
    core::loop_event event;
    if (result) {
        core::effect_done done;
        done.effect_key = model.effect_key;
        done.output = core::to_json(*result);
        done.output_label = json::object{
            {"trust", "untrusted"}, {"sources", json::array{"model://" + entry.provider->kind() + "/" + model.request.model}}};
        done.usage = core::to_json(result->usage);
        done.at_ms = at;
        after = {core::record_kind::effect_done, core::to_json(done)};
        event = core::loop_event{core::model_done_event{std::move(*result)}, at};
    } else {
        after = {core::record_kind::effect_failed, core::to_json(core::failure_record(model.effect_key, result.error(), at))};
        event = core::loop_event{core::model_failed_event{result.error()}, at};
    }
    if (auto r = co_await async_append(core::one_record(std::move(after))); !r) co_return r.error();
    if (cancelled_mid_call) {
        std::string reason = "cancelled by request during a model call";
        if (auto r = co_await async_seal("cancelled", reason); !r) co_return r.error();
        co_return ended(core::run_status::cancelled, std::move(reason));
    }
    co_return event;
}

asio::awaitable<run_driver::step> run_driver::async_call_tool(core::call_tool_action const& call, recovery::retry const* retry) {
    auto const& entry = ctx_.agent;
    auto const& options = ctx_.options;
    if (retry)
        if (auto r = co_await async_append(core::one_record(retry->note)); !r) co_return r.error();
    auto issued = std::chrono::floor<std::chrono::seconds>(options.clock());
    auto prov = core::make_provenance(run_id_, call.effect_key, entry.manifest.name, entry.manifest.digest, call.tool,
                                      call.arguments, issued, options.provenance_lifetime, nonce());
    if (!prov) co_return prov.error();
    if (options.signer)
        if (auto s = options.signer->sign(*prov); !s) co_return s.error();
    core::new_record record;
    if (!retry) {
        core::effect_started started;
        started.effect_key = call.effect_key;
        started.target = core::effect_target::tool;
        started.tool = call.tool.uri();
        started.arguments = call.arguments;
        started.arguments_label = core::to_json(call.arguments_label);
        started.mutates = call.mutates;
        started.idempotent = call.idempotent;
        started.call_id = call.call_id;
        started.provenance = core::to_json(*prov);
        started.at_ms = unix_ms(options);
        record = {core::record_kind::effect_started, core::to_json(started)};
    } else {
        // The store takes one effect_started per key; a retry's block is kept in a note.
        record = {core::record_kind::note, json::object{{"event", "effect_retried"},
                                                        {"effect_key", call.effect_key},
                                                        {"attempt", 2},
                                                        {"provenance", core::to_json(*prov)}}};
    }
    if (auto r = co_await async_append(core::one_record(std::move(record))); !r) co_return r.error();
    auto tool = call.tool;
    auto arguments = call.arguments;
    std::optional<core::provenance> block = std::move(*prov);
    auto result = co_await options.tools->async_call(std::move(tool), std::move(arguments), std::move(block));
    auto at = unix_ms(options);
    core::new_record after;
    core::loop_event event;
    if (result) {
        auto const* grant = entry.manifest.grant_for(call.tool);
        core::label out_label{{call.tool.uri()}, core::trust::untrusted,
                              grant && grant->max_sensitivity ? *grant->max_sensitivity : core::sensitivity::public_};
        core::effect_done done;
        done.effect_key = call.effect_key;
        done.output = *result;
        done.output_label = core::to_json(out_label);
        done.at_ms = at;
        after = {core::record_kind::effect_done, core::to_json(done)};
        event = core::loop_event{core::tool_done_event{std::move(*result)}, at};
    } else {
        after = {core::record_kind::effect_failed, core::to_json(core::failure_record(call.effect_key, result.error(), at))};
        event = core::loop_event{core::tool_failed_event{result.error()}, at};
    }
    if (auto r = co_await async_append(core::one_record(std::move(after))); !r) co_return r.error();
    co_return event;
}

asio::awaitable<run_driver::step> run_driver::async_quarantine(std::string reason) {
    if (auto r = co_await async_seal("quarantined", reason); !r) co_return r.error();
    spdlog::warn("run {}: quarantined: {}", run_id_, reason);
    co_return ended(core::run_status::quarantined, std::move(reason));
}

asio::awaitable<run_driver::step> run_driver::async_finish(core::finish_action const& fin, recovery::finish f) {
    out_.output = fin.output;
    out_.output_label = fin.output_label;
    if (f.write_output)
        if (auto r = co_await async_append(core::one_record(recovery::output_note(fin))); !r) co_return r.error();
    if (f.write_seal)
        if (auto r = co_await async_seal(std::string(core::to_string(fin.status)), fin.reason); !r) co_return r.error();
    co_return ended(fin.status, fin.reason);
}

}  // namespace airlock::service
