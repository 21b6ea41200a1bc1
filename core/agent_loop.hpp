#pragma once
// The agent loop: a pure state machine. Given the run's state and the last event (a completion, a
// tool result or error, an append done, an approval decision) it returns the next action
// (`call_model`, `call_tool`, `append`, `await_approval`, `finish`). It performs nothing and reads
// no clock: every event carries the time it happened, so a replay fed the journal's times decides
// exactly what the live run decided. service/runner performs the actions.
//
// What the loop decides, in order, each time it must choose:
// 1. A tool call the model asked for and that is not yet handled comes first (in the order asked):
//    its name is matched byte for byte against the grants' wire names (`server__tool`); an
//    ungranted name, arguments that are not an object, or a refusal by a policy gate become a
//    record (`append`) and a failed call the model is told about ("not permitted"); the run goes on.
//    A granted call needing approval is recorded (`approval_requested`) and waits (`await_approval`);
//    a rejection reaches the model as "a reviewer did not approve this call".
// 2. Otherwise, if the model's last completion asked for nothing, the run succeeds with its text.
// 3. Otherwise the model is asked again, unless `max_turns` model calls were made: then the run fails,
//    since an agent still asking is not done.
// Before every new step and effect the budgets are checked; an exhausted one ends the run
// `exhausted`, naming the limit. A failed model call fails the run. A failed tool call goes back to
// the model as a failed call.
//
// Labels: the run's context label starts as the input's and joins every completion (untrusted,
// source `model://<provider>/<model>`) and every tool result (untrusted, source the tool's URI,
// sensitivity the grant's ceiling). A model-chosen argument bundle carries the context label, so a
// value the model copied from a tool result can never satisfy `require_trusted` or an
// `allowed_sources` list that does not name that tool.

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/label.hpp"
#include "core/manifest.hpp"
#include "core/model.hpp"
#include "core/policy.hpp"
#include "core/run_id.hpp"
#include "core/tool.hpp"
#include "core/tool_id.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace airlock::core {

enum class run_status { running, succeeded, failed, exhausted, awaiting_approval, quarantined, cancelled };
std::string_view to_string(run_status s) noexcept;
std::optional<run_status> parse_run_status(std::string_view s) noexcept;

// What the model is told when a reviewer rejects a call.
inline constexpr std::string_view rejection_text = "a reviewer did not approve this call";

struct agent_loop_options {
    manifest agent;
    std::string provider;  // the provider's name, for the completion label's source
    std::string model;     // sent in every request; the manifest's privileged model when empty
    // Schemas to offer, by wire name. A granted tool without one is offered as {"type":"object"}.
    std::vector<model_tool> tools;
    egress_allowlist egress;
    // Where a call to a tool would go (tool_client::destination_of): a pure lookup, no I/O.
    std::function<destination(tool_id const&)> destination_of;
};

// ---- events ----
struct start_event {};
struct model_done_event {
    completion result;
};
struct model_failed_event {
    model_error error;
};
struct tool_done_event {
    boost::json::value result;
};
struct tool_failed_event {
    tool_error error;
};
struct appended_event {};
struct approval_event {
    bool approved = false;
};

struct loop_event {
    std::variant<start_event, model_done_event, model_failed_event, tool_done_event, tool_failed_event,
                 appended_event, approval_event>
        what;
    std::uint64_t now_ms = 0;  // when it happened (unix ms); 0: no later than the previous event
};

// ---- actions ----
struct call_model_action {
    std::string effect_key;
    completion_request request;
    std::string request_sha256;  // of the canonical {model, system, messages, tools: names}
};
struct call_tool_action {
    std::string effect_key;
    tool_id tool;
    boost::json::value arguments;
    label arguments_label;
    bool mutates = true;
    bool idempotent = false;
    std::string call_id;  // the model's id for the call
};
struct append_action {
    std::vector<new_record> records;
};
struct await_approval_action {
    std::string effect_key;
};
struct finish_action {
    run_status status = run_status::succeeded;
    std::string reason;          // why, naming the limit or the failure; empty on success
    boost::json::value output;   // the final text (a string) on success, null otherwise
    label output_label;
};
using loop_action = std::variant<call_model_action, call_tool_action, append_action, await_approval_action, finish_action>;

std::string_view action_name(loop_action const& a) noexcept;  // "call_model", "call_tool", ...

struct run_input {
    boost::json::value value;
    label input_label;
};

class agent_loop {
public:
    // `started_ms` is the admission time the wall-clock budget counts from.
    agent_loop(agent_loop_options options, run_id run, run_input input, std::uint64_t started_ms);

    // The action after `event`. Feeding an event the current action does not wait for is a bug
    // (std::logic_error). After `finish`, every event returns the same finish.
    loop_action next(loop_event const& event);

    run_status status() const noexcept { return status_; }
    std::uint32_t turns() const noexcept { return turns_; }      // model calls made
    std::uint32_t steps() const noexcept { return steps_; }      // model turns and tool calls proposed
    std::uint64_t effects() const noexcept { return effects_; }  // model and tool calls performed
    std::uint64_t tokens() const noexcept { return tokens_; }    // from the providers' usage
    std::vector<model_message> const& messages() const noexcept { return messages_; }
    label const& context_label() const noexcept { return context_; }

private:
    enum class phase { idle, model, tool, append, approval, done };
    loop_action decide(std::uint64_t now_ms);
    loop_action handle_pending(std::uint64_t now_ms);
    loop_action refuse(model_tool_call const& call, new_record record, std::string model_text);
    loop_action finish(run_status s, std::string reason, boost::json::value output = nullptr);
    std::optional<loop_action> over_budget(std::uint64_t now_ms, bool new_step, bool new_effect);
    std::string next_key(effect_key::kind k);
    void tool_message(std::string call_id, std::string text, bool is_error);
    completion_request request() const;

    agent_loop_options options_;
    run_id run_;
    std::uint64_t started_ms_;
    std::uint64_t last_ms_;
    phase phase_ = phase::idle;
    run_status status_ = run_status::running;
    std::optional<finish_action> finished_;
    std::vector<model_message> messages_;
    std::deque<model_tool_call> pending_;    // tool calls of the last completion not yet handled
    bool last_completion_final_ = false;     // the last completion asked for no tool
    std::optional<call_tool_action> in_flight_;  // the call being made or waiting for approval
    std::string last_text_;
    label context_;
    label model_label_;
    std::uint32_t turns_ = 0;
    std::uint32_t steps_ = 0;
    std::uint64_t effects_ = 0;
    std::uint64_t tokens_ = 0;
};

// The text a model is shown for a tool's result: the text blocks of an MCP {content:[…]} result
// joined by newlines, a string as itself, anything else as compact JSON.
std::string tool_result_text(boost::json::value const& result);

}  // namespace airlock::core
