#include "service/gateway/call_plan.hpp"

#include "core/canonical_json.hpp"
#include "core/effect_records.hpp"
#include "core/sha256.hpp"
#include "core/tool_id.hpp"

#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

namespace airlock::service {

namespace json = boost::json;

namespace {

call_refusal denied(std::string tool, core::deny_reason reason, std::string detail) {
    call_refusal r;
    r.what = call_refusal::kind::denied;
    r.tool = std::move(tool);
    r.reason = reason;
    r.detail = std::move(detail);
    return r;
}

// No tool of that name is granted and served: the upstream a granted wire name names may be
// refused by egress or down, which the caller is told apart from a policy refusal.
call_refusal unresolved(gateway_principal const& p, std::string const& name, std::optional<upstream_facts> const& facts) {
    if (auto id = core::tool_id::from_wire_name(name); id && p.grants.grant_for(*id) && facts) {
        if (facts->refused_by_egress) {
            // Refused as any call to a destination egress does not name is, before anything is sent.
            auto detail = "upstream " + facts->name + ": its destination " + core::to_string(facts->destination) +
                          " is not in egress; it is never contacted";
            return denied(id->uri(), core::deny_reason::destination_not_allowed, std::move(detail));
        }
        if (!facts->available) {
            // A granted tool of an upstream that is down is not a policy matter: say it is
            // unreachable (the caller was allowed to know the tool exists), journal nothing.
            call_refusal r;
            r.what = call_refusal::kind::unreachable;
            r.tool = id->uri();
            r.id = *id;
            r.text = "unreachable: upstream '" + facts->name + "' is unavailable; retrying";
            return r;
        }
    }
    return denied(name, core::deny_reason::not_granted, "no granted tool is exposed as '" + name + "'");
}

}  // namespace

core::result<call_request> read_call_request(std::optional<json::object> const& params) {
    if (!params) return core::make_error("invalid_params", "tools/call needs params");
    auto const* name_v = params->if_contains("name");
    if (!name_v || !name_v->is_string()) return core::make_error("invalid_params", "tools/call params.name must be a string");
    call_request req;
    req.name = std::string(name_v->get_string());
    if (auto const* a = params->if_contains("arguments"); a && !a->is_null()) {
        if (!a->is_object()) return core::make_error("invalid_params", "tools/call params.arguments must be an object");
        req.arguments = *a;
    }
    return req;
}

std::optional<std::string> upstream_of_call(std::string const& name, catalogue_entry const* resolved) {
    if (resolved) return resolved->id.server();
    if (auto id = core::tool_id::from_wire_name(name)) return id->server();
    return std::nullopt;
}

call_decision plan_call(gateway_principal const& p, call_request const& req,
                        core::result<std::shared_ptr<catalogue_entry const>> const& resolved,
                        std::optional<upstream_facts> const& facts, core::egress_allowlist const& egress,
                        std::optional<mcp::http_headers> const& param_headers) {
    if (!resolved) return denied(req.name, core::deny_reason::not_granted, resolved.error().message);
    auto const& entry = *resolved;
    if (!entry) return unresolved(p, req.name, facts);
    auto const* grant = p.grants.grant_for(entry->id);
    if (!entry->withheld.empty() || !grant || !facts) {
        std::string detail = entry->withheld.empty() ? "tool not served" : "tool withheld: " + entry->withheld;
        return denied(entry->id.uri(), core::deny_reason::not_granted, std::move(detail));
    }
    if (entry->param_headers && param_headers) {
        // 2026-07-28 over HTTP: the Mcp-Param-* headers a proxy may have routed on must say what
        // the arguments say (SEP-2243); a mismatch is refused before any gate or journal record.
        auto checked = mcp::validate_param_headers(*param_headers, std::nullopt, req.arguments.as_object(), entry->spec);
        if (!checked) {
            call_refusal r;
            r.what = call_refusal::kind::invalid;
            r.error = checked.error().body.error;
            return r;
        }
    }
    core::tainted args;
    args.value = req.arguments;
    args.whole = label_of(p);
    auto decision = core::evaluate(p.grants, egress, entry->id, args, facts->tool_destination);
    if (!decision) {
        auto const& refusal = *decision.refusal();
        return denied(entry->id.uri(), refusal.reason, refusal.detail);
    }
    return planned_call{entry, facts->name, facts->tool_destination, grant->mutates, grant->journal};
}

core::new_record denial_record(call_refusal const& r) {
    json::object body{{"tool", r.tool}, {"reason", core::to_string(r.reason)}, {"detail", r.detail}};
    return core::new_record{core::record_kind::policy_denied, std::move(body)};
}

core::new_record started_record(std::string const& effect_key, planned_call const& plan, json::value const& arguments,
                                core::provenance const& prov, std::string const& request_id,
                                json::object const& caller) {
    core::effect_started started;
    started.effect_key = effect_key;
    started.target = core::effect_target::tool;
    started.tool = plan.entry->id.uri();
    started.arguments = kept_value(arguments, plan.keep);
    started.mutates = plan.mutates;
    started.provenance = core::to_json(prov);
    started.request_id = request_id;
    if (!caller.empty()) started.caller = caller;
    return core::new_record{core::record_kind::effect_started, core::to_json(started)};
}

finished_call finish_call(std::string const& effect_key, core::tool_id const& tool,
                          std::optional<core::tool_result<mcp::call_tool_result>> finished, bool cancelled,
                          core::journal_keep keep) {
    core::tool_result<mcp::call_tool_result> outcome =
        finished ? std::move(*finished)
                 : core::tool_result<mcp::call_tool_result>(
                       core::tool_error{core::tool_error_kind::timed_out, tool.uri(), "the client cancelled the call"});
    finished_call out;
    if (outcome) {
        out.result["content"] = outcome->content;
        if (outcome->structured_content) out.result["structuredContent"] = *outcome->structured_content;
        if (outcome->is_error) out.result["isError"] = *outcome->is_error;
        if (auto meta = relayed_meta(outcome->meta)) out.result["_meta"] = std::move(*meta);
        core::effect_done done;
        done.effect_key = effect_key;
        done.output = keep == core::journal_keep::full ? journaled_output(out.result) : kept_value(out.result, keep);
        done.output_label = json::object{{"trust", "untrusted"}, {"sources", json::array{tool.uri()}}};
        out.record = {core::record_kind::effect_done, core::to_json(done)};
    } else {
        auto const& e = outcome.error();
        out.record = {core::record_kind::effect_failed, core::to_json(core::failure_record(effect_key, e, std::nullopt))};
        out.result = refusal_result(failure_text(e));
    }
    // A result with isError is the tool reporting failure: ToolError's tool_failed, as the
    // ToolClient interface reports it.
    out.metric_kind = !outcome                            ? core::to_string(outcome.error().kind)
                      : outcome->is_error.value_or(false) ? core::to_string(core::tool_error_kind::tool_failed)
                                                          : std::string_view("ok");
    // A call the cancellation cut short is an error, not a tool result: an endpoint that cut it off
    // says so to its client, and answers a call that landed (journaled as done) with its result.
    if (!outcome && cancelled)
        out.error = mcp::error_object{mcp::rpc_code::internal_error, "the call was cancelled before it finished", std::nullopt};
    return out;
}

json::object refusal_result(std::string_view text) {
    json::object r;
    r["content"] = json::array{json::object{{"type", "text"}, {"text", text}}};
    r["isError"] = true;
    return r;
}

std::string failure_text(core::tool_error const& e) {
    std::string kind(core::to_string(e.kind));
    switch (core::disposition_of(e.kind)) {
        case core::disposition::did_not_happen: return kind + " (the call was not made): " + e.detail;
        case core::disposition::in_doubt: return kind + " (the call may or may not have taken effect): " + e.detail;
        case core::disposition::landed: break;
    }
    return kind + ": " + e.detail;
}

// A tool result's _meta as the client gets it: the upstream's, unchanged (hosts keep data there, MCP
// Apps their UI's), but for keys in airlock's own namespace (dev.airlock/...), which only airlock
// writes: a client can then trust such a key to come from airlock, never from a tool server.
std::optional<json::object> relayed_meta(std::optional<json::object> const& meta) {
    if (!meta) return std::nullopt;
    json::object out = *meta;
    std::vector<std::string> own;
    for (auto const& kv : out)
        if (kv.key().starts_with("dev.airlock/")) own.emplace_back(kv.key());
    for (auto const& k : own) out.erase(k);
    if (out.empty() && !meta->empty()) return std::nullopt;
    return out;
}

// The effect then still reads as landed, and a copy of the output kept by the caller can be
// matched against the record.
namespace {

// What a journal record keeps in place of a value: why (`key`: `value`), then the SHA-256 and size
// of the value's canonical form, by which a copy kept elsewhere can be matched.
json::object stand_in(std::string_view key, std::string_view value, std::string const& canonical_text) {
    return json::object{{key, value}, {"sha256", core::sha256_hex(canonical_text)}, {"canonical_bytes", canonical_text.size()}};
}

}  // namespace

json::value journaled_output(json::object const& result) {
    constexpr std::size_t room = core::max_record_bytes - 4096;  // the rest of the record: key, label
    json::value output = result;
    if (core::canonical_size_bound(output) <= room) return output;
    auto text = core::canonical(output);
    if (!text || text->size() <= room) return output;
    spdlog::warn("journal: a call's output of {} bytes exceeds the {}-byte record limit; its SHA-256 and size "
                 "are journaled in its place",
                 text->size(), core::max_record_bytes);
    return stand_in("omitted", "larger than a journal record", *text);
}

json::value kept_value(json::value const& value, core::journal_keep keep) {
    if (keep == core::journal_keep::full) return value;
    if (keep == core::journal_keep::omit) return json::object{{"kept", "omit"}};
    auto text = core::canonical(value);
    // A value the door let in always has a canonical form; were it not so, nothing is kept rather than a guess.
    if (!text) return json::object{{"kept", "omit"}, {"why", text.error().message}};
    return stand_in("kept", "hash", *text);
}

}  // namespace airlock::service
