#pragma once
// The runner as the REST API drives it: run_control (service/rest/rest_api.hpp) over service::runner,
// translating requests, results and error codes between the two.

#include "core/errc.hpp"
#include "service/agents/runner.hpp"
#include "service/rest/rest_api.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::service {

class runner_control final : public run_control {
public:
    // `trusted`: principal name → whether its input counts as trusted (principals[].trusted).
    runner_control(std::shared_ptr<runner> runs, std::map<std::string, bool> trusted);

    std::vector<agent_info> agents() const override;
    boost::asio::awaitable<core::result<run_started>> async_start(run_start_request request) override;
    boost::asio::awaitable<core::result<void>> async_cancel(std::string run_id) override;
    boost::asio::awaitable<core::result<boost::json::object>> async_replay(std::string run_id) override;
    boost::asio::awaitable<core::result<void>> async_decide(std::string run_id, std::string effect_key, bool approve,
                                                            std::string reason, std::string reviewer) override;
    std::chrono::seconds retry_after() const override { return runs_->retry_after(); }
    // The runner wakes the waiter when the run's driver lets go of it: nothing is polled.
    boost::asio::awaitable<bool> async_wait(std::string run_id, std::chrono::milliseconds up_to) override;

private:
    std::shared_ptr<runner> runs_;
    std::map<std::string, bool> trusted_;
};

// The errc a runner error code answers with (too_many_runs → at_capacity, ...): the one table from
// the runner's string codes. nullopt for a code that is not the runner's own (a journal error passing
// through keeps its code).
std::optional<core::errc> control_errc(std::string_view runner_code) noexcept;
// The run_control error for a runner error: its code the errc's spelling, its message unchanged.
core::error to_control_error(core::error e);

}  // namespace airlock::service
