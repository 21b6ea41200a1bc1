#pragma once
// The runner as the REST API drives it: run_control (service/rest/rest_api.hpp) over service::runner,
// translating requests, results and error codes between the two.

#include "service/rest/rest_api.hpp"
#include "service/agents/runner.hpp"

#include <map>
#include <memory>
#include <string>

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

// The run_control code for a runner error code (too_many_runs → at_capacity, ...).
core::error to_control_error(core::error e);

}  // namespace airlock::service
