#pragma once
// The journal records of one call, model or tool, whoever makes it (the agent runner or the
// gateway): `effect_started` before the call leaves, then `effect_done` or `effect_failed`.
//
// One schema, written two ways today and read one way. The runner's bodies and the gateway's are
// both this struct with different members present; a member that is absent (nullopt) is not
// written. to_json writes the members in one fixed order, which is the order both writers already
// used, so a body built here has the same bytes as the body written before this schema existed (the
// hash chain covers canonical bodies, the stores keep them as written: neither may change).
//
// The readers (parse_*) take every body either writer ever wrote: the gateway's effect_started has
// no arguments_label, idempotent, call_id or at_ms and carries request_id; its outcomes have no
// at_ms. What a reader cannot read (no effect_key, a member of the wrong type) is refused, naming it.

#include "core/error.hpp"
#include "core/tool.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::core {

// What a call is made to: "tool" (tool://server/name) or "model" (a provider).
enum class effect_target { tool, model };
std::string_view to_string(effect_target t) noexcept;
std::optional<effect_target> parse_effect_target(std::string_view s) noexcept;

// effect_started. A tool call: tool, arguments, mutates, provenance (the signed block sent with it);
// the runner adds arguments_label, idempotent, call_id and at_ms, the gateway request_id. A model
// call (runner only): provider, model, request_sha256, mutates false, at_ms.
struct effect_started {
    std::string effect_key;
    effect_target target = effect_target::tool;
    std::optional<std::string> tool;            // tool://server/name
    std::optional<std::string> provider;        // the provider's configured name
    std::optional<std::string> model;
    std::optional<std::string> request_sha256;  // of the canonical model request
    std::optional<boost::json::value> arguments;
    std::optional<boost::json::object> arguments_label;
    std::optional<bool> mutates;  // both writers always write it; a reader picks its own default
    std::optional<bool> idempotent;
    std::uint32_t attempt = 1;
    std::optional<std::string> call_id;     // the model's id for the tool call
    std::optional<boost::json::object> provenance;
    std::optional<std::string> request_id;  // the JSON-RPC id of the gateway call, as text
    std::optional<std::uint64_t> at_ms;
    // The gateway, when an OAuth access token admitted the caller: {"method": "oauth", "issuer",
    // "subject", "token_id"} - never the token. Written last, and only then.
    std::optional<boost::json::object> caller;
};

// effect_done: the call's output and the label it carries into the run; usage for a model call.
struct effect_done {
    std::string effect_key;
    std::optional<boost::json::value> output;  // always written; a reader says what its absence means
    std::optional<boost::json::object> output_label;
    std::optional<boost::json::object> usage;
    std::optional<std::uint64_t> at_ms;
};

// effect_failed: how the call failed, as a tool_error (kind, disposition derived from it, detail).
struct effect_failed {
    std::string effect_key;
    std::string error_kind;   // core::to_string(tool_error_kind), kept as written
    std::string disposition;  // core::to_string(disposition_of(kind)), kept as written
    std::string detail;
    std::optional<std::uint64_t> at_ms;
};

boost::json::object to_json(effect_started const& s);
boost::json::object to_json(effect_done const& d);
boost::json::object to_json(effect_failed const& f);

result<effect_started> parse_effect_started(boost::json::object const& body);
result<effect_done> parse_effect_done(boost::json::object const& body);
result<effect_failed> parse_effect_failed(boost::json::object const& body);

// The failure record of a call that failed with `e` (`at_ms` absent: the gateway's shape).
effect_failed failure_record(std::string effect_key, tool_error const& e, std::optional<std::uint64_t> at_ms);
// The tool_error a failure record describes; an error kind this build does not know reads as
// tool_failed. `tool` names the tool in the error ("" for a model call).
tool_error to_tool_error(effect_failed const& f, std::string tool);

// The body of the note that marks a call in doubt: it was started and its outcome is not in the
// journal, so it may or may not have taken effect, and nothing repeats it. `why` says how the
// outcome was lost. {"event": "effect_in_doubt", effect_key, tool, mutates, why}
boost::json::object in_doubt_note(std::string const& effect_key, std::string const& tool, bool mutates,
                                  std::string_view why);

}  // namespace airlock::core
