#pragma once
// The journal runs of the gateway: one per legacy session, one per principal for stateless
// requests, and the gateway's own. A run is admitted once (callers that arrive meanwhile wait for
// it), held open while a call in it has not journaled its outcome, and sealed when its session
// ends, when it has lived or counted past its limits (the next call begins the run that continues
// it), when a stateless principal's run idles, after a reload, or when airlock stops. Its own
// lock; nothing in it calls out while holding it.

#include "core/journal.hpp"
#include "core/run_id.hpp"
#include "mcp/server/backend.hpp"
#include "service/gateway/principal.hpp"
#include "service/gateway/waiter.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace airlock::service {

// When a run is sealed and its key's next call begins a new one (journal.session_runs, and
// server.sessions.idle_timeout for principals' runs): no run grows for ever, and every run is sealed
// in time to be pruned.
struct gateway_run_limits {
    std::chrono::milliseconds max_age{std::chrono::hours(1)};    // since admission
    std::size_t max_calls = 10'000;                              // tools/call steps in the run
    std::chrono::milliseconds idle{std::chrono::minutes(30)};    // a stateless principal's run, without a call
};

// A call as the note that marks it in doubt names it: kept while its outcome record is on its way.
struct journaled_call {
    std::string effect_key;
    std::string tool;  // tool://server/name
    bool mutates = true;
};

struct session_runs_options {
    boost::asio::any_io_executor executor;  // seals and deferred outcomes run here; none: they are not run
    std::shared_ptr<core::journal_store> journal;
    std::string instance;  // the instance_lock id written into each admitted run
    std::function<std::chrono::system_clock::time_point()> clock;
    std::function<void(std::uint8_t*, std::size_t)> random;
    gateway_run_limits limits;
};

class session_runs final : public std::enable_shared_from_this<session_runs> {
public:
    static std::shared_ptr<session_runs> make(session_runs_options options);

    // "session:ID" for a legacy session, "principal:NAME" otherwise: a run's key, and a stream's.
    static std::string key_of(std::string const& session_id, std::string const& principal);

    // The run a request of `p` writes to, admitted on first use. Errors: stopping, journal_timeout,
    // run_ended, or the journal's.
    boost::asio::awaitable<core::result<std::string>> async_run_for(mcp::request_context const& ctx,
                                                                    gateway_principal const& p);
    // The gateway's own run, for events no caller owns (an upstream tool's definition changing).
    boost::asio::awaitable<core::result<std::string>> async_gateway_run(std::string version);
    // The admitted run of a session or principal.
    std::optional<std::string> run_of(std::string const& session_id, std::string const& principal) const;

    // Counts a call in `run` until the returned token is released (after its outcome is journaled).
    std::shared_ptr<void> hold(std::string const& run);
    // The next effect's step in `run` (1, 2, ...).
    std::uint32_t next_step(std::string const& run);

    // Journals a note {..., principal} in the run of a request of `p` (who read or got what).
    boost::asio::awaitable<core::result<void>> async_note(mcp::request_context const& ctx, gateway_principal const& p,
                                                          boost::json::object body);
    // Appends `records` now, durable on completion.
    boost::asio::awaitable<core::result<std::vector<core::record>>> async_append(std::string run,
                                                                                 std::vector<core::new_record> records);
    // Appends `rec` now; a failure is logged.
    boost::asio::awaitable<void> async_journal(std::string run, core::new_record rec);
    // Appends a call's outcome after the reply, deferred (journal_store::async_append_deferred);
    // `hold` keeps the run unsealed until it is written. Runs on `exec`. When the journal refuses the
    // record, `call` is in doubt, and the run's seal says so (see seal).
    void journal_outcome(boost::asio::any_io_executor const& exec, std::string run, core::new_record rec,
                         std::shared_ptr<void> hold, journaled_call call);

    // The session's run is sealed once its open calls end.
    void session_closed(std::string const& session_id);
    // Seals the runs past their limits: older than max_age, and principals' runs idle for longer
    // than `idle`. Their next call admits a new run. Returns how many it sealed.
    std::size_t expire();
    // Runs expire() every `every` until close_all.
    void start_upkeep(std::chrono::milliseconds every);
    // Stopping, or replaced by a reload: every admitted run is sealed once its open calls end, with
    // `reason`; no run is admitted from now on: a caller that needs one gets the error `refusal`
    // ("stopping", or "reloaded": another gateway admits the runs now).
    void close_all(std::string reason = "airlock stopped", std::string refusal = "stopping");
    // close_all has run and every run it closed is sealed.
    bool settled() const;
    // Waits until every run being closed is sealed, or `limit` has passed.
    boost::asio::awaitable<void> async_closed(std::chrono::milliseconds limit);

private:
    explicit session_runs(session_runs_options options);

    using time_point = std::chrono::system_clock::time_point;
    struct run_slot {
        std::string run;
        bool admitted = false;  // run_admitted is durable; until then other callers wait
        std::vector<std::shared_ptr<waiter>> waiting;  // woken when admission ends, either way
        time_point admitted_at{}, last_used{};
    };
    // What async_admitted_run does next, decided under the lock.
    struct admission_step {
        std::optional<core::result<std::string>> done;  // answered: the admitted run, or why not
        std::string mine;                              // this caller admits this run
        std::shared_ptr<waiter> wait;                  // another caller is admitting it
        std::string continues;                         // the run `mine` follows, past its limits (sealed by this caller)
        std::string why_continued;                     // the seal's reason of `continues`
    };

    // Admits (once) and returns the run that `key` writes to; concurrent callers share it.
    boost::asio::awaitable<core::result<std::string>> async_admitted_run(std::string key, boost::json::object body);
    admission_step next_admission_step(std::string const& key, boost::asio::any_io_executor const& exec);
    // After run_admitted was appended (or refused): marks the slot and wakes its waiters.
    core::result<std::string> admitted(std::string const& key, std::string const& run, core::result<void> appended);
    void call_ended(std::string const& run);
    void outcome_lost(std::string const& run, journaled_call call);
    // Seals `run` now, or once its open calls end.
    void close_run(std::string const& run, std::string reason);
    void seal(std::string run, std::string reason);  // with mutex_ held
    // Why `slot` may take no more calls ("" when it may), with mutex_ held.
    std::string past_limits(run_slot const& slot, time_point now) const;

    session_runs_options options_;
    mutable std::mutex mutex_;
    std::map<std::string, run_slot> runs_;           // key → its run
    bool stopping_ = false;                          // close_all has begun: no run is admitted
    std::string stop_reason_, stop_refusal_;         // close_all's reason, and its error code
    std::shared_ptr<boost::asio::steady_timer> upkeep_timer_;  // start_upkeep's, cancelled by close_all
    std::map<std::string, std::uint32_t> steps_;     // run id → effects started
    std::map<std::string, std::size_t> open_calls_;  // run id → calls in it whose outcome is not yet journaled
    std::map<std::string, std::string> closing_;     // runs to seal once their open calls end → why
    std::map<std::string, std::vector<journaled_call>> lost_;  // run id → calls whose outcome record the journal refused
    std::size_t sealing_ = 0;                        // seals under way
    std::vector<std::shared_ptr<waiter>> closed_waiting_;  // async_closed's, woken when nothing is left to seal
    core::run_id_generator ids_;
};

}  // namespace airlock::service
