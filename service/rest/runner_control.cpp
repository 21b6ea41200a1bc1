#include "service/rest/runner_control.hpp"

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

std::optional<core::errc> control_errc(std::string_view runner_code) noexcept {
    using core::errc;
    // Every code service/agents/runner*.cpp returns (a test reads them there): a code missing here
    // would reach the client as a 500.
    static constexpr std::pair<std::string_view, errc> table[] = {
        {"too_many_runs", errc::at_capacity},
        {"stopping", errc::unavailable},
        {"invalid_request", errc::invalid_input},
        {"ambiguous_capability", errc::invalid_input},
        {"unknown_agent", errc::unknown_agent},
        {"unknown_capability", errc::unknown_capability},
        {"unknown_provider", errc::unknown_provider},
        {"unknown_run", errc::unknown_run},
        {"not_cancellable", errc::not_running},
        {"run_busy", errc::not_running},
        {"incomplete", errc::not_running},
        {"not_awaiting_approval", errc::not_pending},
        {"unknown_effect", errc::not_pending},
        {"divergence", errc::divergence},
        {"not_an_agent_run", errc::not_an_agent_run},
        {"invalid_run", errc::invalid_run},
        {"invalid_runner", errc::invalid_runner},
        {"malformed_record", errc::malformed_record},
        {"not_admitted", errc::not_admitted},
    };
    for (auto const& [code, e] : table)
        if (code == runner_code) return e;
    return std::nullopt;
}

core::error to_control_error(core::error e) {
    if (auto c = control_errc(e.code)) e.code = std::string(core::to_string(*c));
    return e;
}

runner_control::runner_control(std::shared_ptr<runner> runs, std::map<std::string, bool> trusted)
    : runs_(std::move(runs)), trusted_(std::move(trusted)) {}

std::vector<agent_info> runner_control::agents() const {
    std::vector<agent_info> out;
    for (auto const& a : runs_->agents()) {
        auto const& m = a.manifest;
        agent_info i{m.name, m.version, m.digest, m.provides, {}};
        for (auto const& g : m.tools)
            i.grants.push_back(json::object{{"tool", g.ref.uri()},
                                            {"mutates", g.mutates},
                                            {"requires_approval", g.requires_approval},
                                            {"idempotent", g.idempotent},
                                            {"description", g.description}});
        out.push_back(std::move(i));
    }
    return out;
}

asio::awaitable<core::result<run_started>> runner_control::async_start(run_start_request request) {
    run_request r;
    r.agent = std::move(request.agent);
    r.capability = std::move(request.capability);
    r.input = std::move(request.input);
    r.idempotency_key = std::move(request.idempotency_key);
    r.principal = request.principal;
    // The input is as trusted as the principal who sent it.
    auto it = trusted_.find(request.principal);
    bool trusted = it != trusted_.end() && it->second;
    r.input_label = core::label{{request.principal.empty() ? std::string("anonymous") : "principal:" + request.principal},
                                trusted ? core::trust::trusted : core::trust::untrusted,
                                core::sensitivity::public_};
    auto started = co_await runs_->async_start(std::move(r));
    if (!started) co_return to_control_error(started.error());
    co_return run_started{started->run_id, started->fresh};
}

asio::awaitable<core::result<void>> runner_control::async_cancel(std::string run_id) {
    auto r = co_await runs_->async_cancel(std::move(run_id));
    if (!r) co_return to_control_error(r.error());
    co_return core::result<void>{};
}

asio::awaitable<core::result<json::object>> runner_control::async_replay(std::string run_id) {
    auto r = co_await runs_->async_replay(std::move(run_id));
    if (!r) co_return to_control_error(r.error());
    json::object o{{"status", core::to_string(r->status)},
                   {"reason", r->reason},
                   {"output", r->output},
                   {"records", r->records},
                   {"model_calls", r->model_calls},
                   {"tool_calls", r->tool_calls}};
    co_return o;
}

asio::awaitable<bool> runner_control::async_wait(std::string run_id, std::chrono::milliseconds up_to) {
    auto v = co_await runs_->async_wait(std::move(run_id), up_to);
    // An unknown run or a journal error: the caller reads the journal next and reports it.
    (void)v;
    co_return true;
}

asio::awaitable<core::result<void>> runner_control::async_decide(std::string run_id, std::string effect_key, bool approve,
                                                                 std::string reason, std::string reviewer) {
    approval_decision d{approve, std::move(reason), std::move(reviewer)};
    auto r = co_await runs_->async_decide(std::move(run_id), std::move(effect_key), std::move(d));
    if (!r) co_return to_control_error(r.error());
    co_return core::result<void>{};
}

}  // namespace airlock::service
