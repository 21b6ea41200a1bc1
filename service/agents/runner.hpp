#pragma once
// The run driver: admits agent runs, drives each one's core::agent_loop with coroutines on its own
// strand, and journals every step. This is the interface the REST API (`/v1/runs…`) and the CLI
// (`airlock replay`) are built on.
//
// The effect protocol, per model or tool call: `effect_started` is durable before the call leaves,
// the outcome (`effect_done` / `effect_failed`) is durable before the loop takes its next step. Tool
// calls carry a signed provenance block (run, effect key, agent name + manifest digest, tool,
// arguments digest) through the tool client, in-process tools included; the journal keeps the block
// in the `effect_started` record.
//
// One driver (runner_driver.cpp, performing core/recovery's decisions) does three jobs. It always
// starts from the run's journal and feeds the loop the recorded outcomes first, checking that every
// action the loop takes now matches what was recorded:
// - live: past the end of the journal it performs the actions (a new run, a resumed one, a run
//   continuing after an approval decision);
// - resume after a crash: an effect with a start and no outcome is performed again, with the same
//   effect key, only when its grant is `mutates: false` or `idempotent: true`; otherwise the run is
//   sealed `quarantined`, naming the effect;
// - strict replay: the journal alone, zero model calls and zero tool calls; a difference between what
//   the current manifest and code would do and what was recorded is a `divergence` error naming the seq.
//
// Error codes the methods return (the REST layer maps them to statuses in one place):
//   invalid_request (422, the message names the field), unknown_agent / unknown_capability (404),
//   ambiguous_capability (409), too_many_runs (429 + Retry-After: retry_after()), stopping (503 + Retry-After),
//   unknown_run (404), not_awaiting_approval / unknown_effect / run_busy (409), not_cancellable (409),
//   divergence and incomplete (replay: 409), journal errors (the store's codes: 500/503).

#include "core/agent_loop.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/label.hpp"
#include "core/manifest.hpp"
#include "core/model.hpp"
#include "core/policy.hpp"
#include "core/provenance.hpp"
#include "core/run_id.hpp"
#include "core/tool.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace airlock::service {

// One agent the runner can run: its reviewed manifest and the model provider it uses.
struct agent_entry {
    core::manifest manifest;
    std::string provider_name;  // as configured; journaled with each run
    std::shared_ptr<core::model_provider> provider;
};

struct runner_options {
    boost::asio::any_io_executor executor;
    std::vector<agent_entry> agents;  // names unique
    // Every tool call goes through this client: a mcp::tool_router over the upstreams and any
    // in-process ToolBox, each routed by server name.
    std::shared_ptr<core::tool_client> tools;
    core::egress_allowlist egress;  // tools and model providers alike
    std::shared_ptr<core::journal_store> journal;
    std::shared_ptr<core::provenance_signer const> signer;  // absent: calls carry an unsigned block
    std::chrono::seconds provenance_lifetime{300};
    std::size_t max_concurrent_runs = 64;  // runs being driven; runs awaiting approval do not count
    std::chrono::seconds retry_after{1};   // the hint given with too_many_runs
    std::size_t max_input_bytes = 256 * 1024;  // canonical JSON of a run's input
    // The schemas a model is shown for an agent's tools (e.g. from the upstreams' tools/list). Not
    // called by replay: a request's digest covers tool names, not schemas. Absent: {"type":"object"}.
    std::function<boost::asio::awaitable<std::vector<core::model_tool>>(core::manifest const&)> catalogue;
    std::function<std::chrono::system_clock::time_point()> clock = [] { return std::chrono::system_clock::now(); };
    std::function<void(std::uint8_t*, std::size_t)> random;  // CSPRNG; RAND_bytes when empty
};

struct run_request {
    std::string agent;       // an agent's name, or
    std::string capability;  // a capability exactly one agent provides
    boost::json::value input;
    // How far the input is to be trusted: the caller decides (a REST principal's `trusted` flag).
    core::label input_label{{"input"}, core::trust::untrusted, core::sensitivity::public_};
    std::optional<std::string> idempotency_key;  // the same key returns the same run
    std::string principal;  // who asked, journaled with the admission ("" when anonymous or internal)
};

struct run_ticket {
    std::string run_id;
    bool fresh = true;  // false: the idempotency key named an earlier run, returned as it is
};

// A run as the REST API shows it.
struct run_view {
    core::run_summary summary;  // run_id, agent, status, admitted_at, head_seq, sealed
    std::string reason;         // from the seal: the limit or failure that ended it
    boost::json::value output;  // the final answer when it succeeded, else null
    core::label output_label;
};

struct pending_approval {
    std::string run_id;
    std::string effect_key;
    std::string tool;  // tool://server/name
    boost::json::value arguments;
    std::uint64_t seq = 0;  // of the approval_requested record
};

struct approval_decision {
    bool approved = false;
    std::string reason;    // journaled as the comment; never shown to the model
    std::string reviewer;  // who decided (a principal name)
};

// What a strict replay reassembled. It made no calls: model_calls and tool_calls are always 0 and
// are there so a caller can print the claim it checked.
struct replay_report {
    core::run_status status = core::run_status::running;
    std::string reason;
    boost::json::value output;
    std::uint64_t records = 0;  // journal records matched
    std::uint64_t model_calls = 0;
    std::uint64_t tool_calls = 0;
};

class runner : public std::enable_shared_from_this<runner> {
public:
    // Refuses duplicate agent names, an agent without a provider, and a missing journal or tool client.
    static core::result<std::shared_ptr<runner>> make(runner_options options);
    ~runner();

    // Admits a run and starts driving it; returns once run_admitted is durable. The same
    // idempotency key returns the earlier run (fresh = false) whatever the other fields say.
    boost::asio::awaitable<core::result<run_ticket>> async_start(run_request request);
    boost::asio::awaitable<core::result<run_view>> async_get(std::string run_id);
    // The run once it is no longer running (terminal or awaiting approval), or as it is after `up_to`.
    // Woken when the run's driver lets go of it, so thousands of waiters cost no polling.
    boost::asio::awaitable<core::result<run_view>> async_wait(std::string run_id, std::chrono::milliseconds up_to);
    // Every journaled run matching the filter (gateway session runs included), cursor-paginated.
    boost::asio::awaitable<core::result<core::run_page>> async_list(core::run_filter filter);
    boost::asio::awaitable<core::result<std::vector<core::record>>> async_journal(std::string run_id,
                                                                                  std::uint64_t from_seq = 1);
    // A run being driven stops at its next step; a run awaiting approval is sealed now.
    boost::asio::awaitable<core::result<void>> async_cancel(std::string run_id);
    boost::asio::awaitable<core::result<replay_report>> async_replay(std::string run_id);
    boost::asio::awaitable<core::result<std::optional<core::chain_fault>>> async_verify(std::string run_id);
    boost::asio::awaitable<core::result<std::vector<pending_approval>>> async_approvals(std::string run_id);
    // Journals the decision and continues the run.
    boost::asio::awaitable<core::result<void>> async_decide(std::string run_id, std::string effect_key,
                                                            approval_decision decision);

    // At start-up: every agent run admitted and not sealed is driven again from its journal.
    // Returns how many were resumed (runs awaiting approval keep waiting and are not counted). At
    // most max_concurrent_runs are driven at once; the rest wait in a queue and start, in admission
    // order, as slots free up, ahead of new admissions.
    boost::asio::awaitable<core::result<std::size_t>> async_resume_all();

    // No more admissions; runs being driven stop before their next effect, unsealed, to be resumed
    // at the next start.
    void stop();
    // Runs being driven now.
    std::size_t active_runs() const;
    std::vector<agent_entry> const& agents() const noexcept { return options_.agents; }
    std::chrono::seconds retry_after() const noexcept { return options_.retry_after; }

    struct run_slot;
    struct drive_result;
    struct waiter;

private:
    explicit runner(runner_options options);
    agent_entry const* agent(std::string const& name) const;
    boost::asio::awaitable<core::result<drive_result>> async_drive(std::shared_ptr<run_slot> slot, bool live);
    void spawn(std::shared_ptr<run_slot> slot);
    std::shared_ptr<run_slot> claim_slot(std::string const& run_id, bool count_against_limit, core::error& why);
    std::shared_ptr<run_slot> insert_slot_locked(std::string const& run_id, bool counted);
    // Frees the slot, wakes the run's waiters and gives the room to the next queued resume.
    void release_slot(std::string const& run_id);
    void forget_waiter(std::string const& run_id, std::shared_ptr<waiter> const& w);
    std::uint64_t now_ms() const;

    runner_options options_;
    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<run_slot>> active_;  // run id → the run being driven
    std::size_t reserved_ = 0;                                 // admissions under way
    // Resumed runs waiting for a slot. Run ids are ULIDs, so the first is the one admitted first.
    std::set<std::string> resume_queue_;
    std::multimap<std::string, std::shared_ptr<waiter>> waiters_;  // run id → async_wait callers
    bool stopping_ = false;
    core::run_id_generator ids_;
};

// The body of the run_admitted record a runner writes; `mode: "agent"` tells runner runs apart
// from gateway session runs in the same journal.
boost::json::object admitted_body(agent_entry const& agent, run_request const& request, std::string const& admitted_at,
                                  std::uint64_t admitted_at_ms);

}  // namespace airlock::service
