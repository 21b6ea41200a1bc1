#pragma once
// The decisions of a tools/call, apart from its I/O: which call the request names, whether the
// principal's grants, the gates (taint, protected fields, egress ceiling) and egress let it go,
// and, once the upstream has answered, what the caller is told and what the journal keeps.
// `call` performs what these decide; nothing here suspends or touches a socket.

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/policy.hpp"
#include "core/provenance.hpp"
#include "core/tool.hpp"
#include "mcp/protocol/era.hpp"
#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/messages.hpp"
#include "service/gateway/catalogue_entry.hpp"
#include "service/gateway/principal.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace airlock::service {

// The text every refusal carries to the caller: it must not teach how to get around the policy.
inline constexpr std::string_view not_permitted_text = "not permitted";

// A tools/call's params, read: the name as the caller wrote it and the arguments (an object).
struct call_request {
    std::string name;
    boost::json::value arguments = boost::json::object{};
};
// invalid_params's message when params are malformed.
core::result<call_request> read_call_request(std::optional<boost::json::object> const& params);

// What the gateway knows, before a call is planned, of the upstream the call concerns.
struct upstream_facts {
    std::string name;
    bool refused_by_egress = false;  // its destination is not in egress: it is never contacted
    bool available = true;           // its last tools read did not fail
    core::destination destination;   // where the upstream is
    core::destination tool_destination;  // where a call of the resolved tool goes
};

// The upstream a call concerns: the resolved tool's, else the one its wire name names (if any).
std::optional<std::string> upstream_of_call(std::string const& name, catalogue_entry const* resolved);

// An allowed call: what `call` journals, signs and sends.
struct planned_call {
    std::shared_ptr<catalogue_entry const> entry;
    std::string upstream;
    core::destination destination;
    bool mutates = false;
    core::journal_keep keep = core::journal_keep::full;  // the grant's journal: full, hash or omit
};

// A refused call. denied: journaled as policy_denied, answered not_permitted_text. unreachable:
// answered with `text`, not journaled (the caller may know the tool exists). invalid: answered
// with `error`, before any gate or journal record.
struct call_refusal {
    enum class kind { denied, unreachable, invalid };
    kind what = kind::denied;
    std::string tool;  // denied: as journaled (the tool's URI, or the name asked for)
    std::optional<core::tool_id> id;  // unreachable: the granted tool whose upstream is down
    core::deny_reason reason = core::deny_reason::not_granted;
    std::string detail;
    std::string text;                          // what the caller is told (denied: "" is not_permitted_text)
    std::optional<mcp::error_object> error;    // invalid
};

using call_decision = std::variant<planned_call, call_refusal>;

// The whole plan of a call whose name `resolve` looked up among the principal's grants (an error:
// two upstreams expose it; null: no granted tool has that name). `facts` describes the upstream
// upstream_of_call named, nullopt when no such upstream is configured. `param_headers` are a
// modern HTTP request's Mcp-Param-* headers (nullopt elsewhere).
call_decision plan_call(gateway_principal const& p, call_request const& req,
                        core::result<std::shared_ptr<catalogue_entry const>> const& resolved,
                        std::optional<upstream_facts> const& facts, core::egress_allowlist const& egress,
                        std::optional<mcp::http_headers> const& param_headers);

// The journal record of a refusal: policy_denied {tool, reason, detail}.
core::new_record denial_record(call_refusal const& r);

// The effect_started record, durable before the call leaves.
core::new_record started_record(std::string const& effect_key, planned_call const& plan,
                                boost::json::value const& arguments, core::provenance const& prov,
                                std::string const& request_id, boost::json::object const& caller = {});

// The reply to the caller, the record of the outcome, and the kind the metrics count.
struct finished_call {
    boost::json::object result;
    core::new_record record;
    std::string_view metric_kind;  // "ok", or a tool_error_kind's name (tool_failed for isError)
    // The caller's cancellation cut the call short: the reply is an error, not `result`.
    std::optional<mcp::error_object> error;
};
// `outcome` nullopt: the caller cancelled before the call finished (`cancelled` says whether its
// cancellation reached the call at all).
finished_call finish_call(std::string const& effect_key, core::tool_id const& tool,
                          std::optional<core::tool_result<mcp::call_tool_result>> outcome, bool cancelled,
                          core::journal_keep keep = core::journal_keep::full);

// A result the caller reads as a refusal: one text block, isError.
boost::json::object refusal_result(std::string_view text);

// What the caller reads of a failed call: the kind, whether it may have taken effect, and why.
std::string failure_text(core::tool_error const& e);

// A tool result's _meta as the client gets it: the upstream's, without airlock's own namespace.
std::optional<boost::json::object> relayed_meta(std::optional<boost::json::object> const& meta);

// What effect_done keeps of a result: the result, or its SHA-256 and size when it would not fit.
boost::json::value journaled_output(boost::json::object const& result);

// What the journal keeps of a value under a grant's `journal:`: the value (full); a stand-in
// {"kept": "hash", "sha256", "canonical_bytes"} of its RFC 8785 form (hash, the digest provenance's
// args_sha256 signs for arguments); or {"kept": "omit"}.
boost::json::value kept_value(boost::json::value const& value, core::journal_keep keep);

}  // namespace airlock::service
