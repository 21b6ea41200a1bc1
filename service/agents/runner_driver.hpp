#pragma once
// The driver of one run: feeds the run's core::agent_loop from its journal and performs what
// core::recovery decides for each action: replays a recorded outcome, performs a call live (its
// effect_started durable before the call leaves, its outcome durable before the loop's next step),
// retries an in-doubt call that is safe to repeat, quarantines one that is not, or stops on a
// divergence. The runner (runner.cpp) reads the journal, builds the loop and hands both over.

#include "core/agent_loop.hpp"
#include "core/journal.hpp"
#include "core/recovery.hpp"
#include "service/agents/runner_slots.hpp"
#include "service/agents/runner.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace airlock::service {

struct runner::drive_result {
    core::run_status status = core::run_status::running;
    std::string reason;
    boost::json::value output;
    core::label output_label;
    std::uint64_t records = 0;  // journal records matched against the loop's actions
    bool parked = false;        // stopped at an approval with no decision yet
};

// Unix milliseconds on the runner's clock.
std::uint64_t unix_ms(runner_options const& options);

class run_driver {
public:
    struct context {
        runner_options const& options;
        agent_entry const& agent;
        std::shared_ptr<runner::run_slot> slot;
        std::function<bool()> stopping;  // the runner is stopping: end before the next effect, unsealed
        bool live = true;                // false: strict replay, the journal alone
    };

    // `records` is the run's whole journal, run_admitted first.
    run_driver(context ctx, std::vector<core::record> records, core::agent_loop loop);
    run_driver(run_driver const&) = delete;
    run_driver& operator=(run_driver const&) = delete;

    // Drives the loop from its start event (at the admission time) until it ends, parks or stops.
    boost::asio::awaitable<core::result<runner::drive_result>> async_run(std::uint64_t admitted_at_ms);

private:
    // The event to feed the loop next, or nullopt: the drive has ended (out_ says how).
    using step = core::result<std::optional<core::loop_event>>;

    boost::asio::awaitable<core::result<bool>> async_stop_if_asked(core::loop_action const& action);
    boost::asio::awaitable<step> async_perform(core::loop_action const& action, core::recovery::decision d);
    boost::asio::awaitable<step> async_call_model(core::call_model_action const& model, core::recovery::retry const* retry);
    boost::asio::awaitable<step> async_call_tool(core::call_tool_action const& call, core::recovery::retry const* retry);
    boost::asio::awaitable<step> async_quarantine(std::string reason);
    boost::asio::awaitable<step> async_finish(core::finish_action const& fin, core::recovery::finish f);
    boost::asio::awaitable<core::result<void>> async_append(std::vector<core::new_record> batch);
    boost::asio::awaitable<core::result<void>> async_seal(std::string status, std::string reason);
    std::nullopt_t ended(core::run_status status, std::string reason);
    std::string nonce();

    context ctx_;
    std::string run_id_;
    std::vector<core::record> records_;
    core::recovery::journal_cursor cursor_;
    core::agent_loop loop_;
    runner::drive_result out_;
};

}  // namespace airlock::service
