#include "core/agent_loop.hpp"

#include "core/canonical_json.hpp"
#include "core/model_json.hpp"
#include "core/sha256.hpp"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <stdexcept>

namespace airlock::core {

namespace json = boost::json;

std::string_view to_string(run_status s) noexcept {
    switch (s) {
        case run_status::running: return "running";
        case run_status::succeeded: return "succeeded";
        case run_status::failed: return "failed";
        case run_status::exhausted: return "exhausted";
        case run_status::awaiting_approval: return "awaiting_approval";
        case run_status::quarantined: return "quarantined";
        case run_status::cancelled: return "cancelled";
    }
    return "running";
}

std::optional<run_status> parse_run_status(std::string_view s) noexcept {
    for (auto st : {run_status::running, run_status::succeeded, run_status::failed, run_status::exhausted,
                    run_status::awaiting_approval, run_status::quarantined, run_status::cancelled})
        if (to_string(st) == s) return st;
    return std::nullopt;
}

std::string_view action_name(loop_action const& a) noexcept {
    switch (a.index()) {
        case 0: return "call_model";
        case 1: return "call_tool";
        case 2: return "append";
        case 3: return "await_approval";
        default: return "finish";
    }
}

std::string tool_result_text(json::value const& result) {
    if (auto const* s = result.if_string()) return std::string(*s);
    if (auto const* o = result.if_object(); o && o->size() == 1) {
        if (auto const* content = o->if_contains("content"); content && content->is_array()) {
            std::string text;
            bool all_text = true;
            for (auto const& block : content->get_array()) {
                auto const* b = block.if_object();
                auto const* t = b ? b->if_contains("text") : nullptr;
                auto const* type = b ? b->if_contains("type") : nullptr;
                if (!t || !t->is_string() || !type || *type != "text") {
                    all_text = false;
                    break;
                }
                if (!text.empty()) text += "\n";
                text += t->get_string();
            }
            if (all_text) return text;
        }
    }
    return json::serialize(result);
}

namespace {

std::string input_text(json::value const& input) {
    if (auto const* s = input.if_string()) return std::string(*s);
    return json::serialize(input);
}

std::string system_prompt(manifest const& m) {
    if (!m.identity) return {};
    std::string s = m.identity->role;
    for (auto const& c : m.identity->constraints) {
        if (!s.empty()) s += "\n";
        s += c;
    }
    return s;
}

execution_kind kind_of(manifest const& m) { return m.execution ? m.execution->kind : execution_kind::completion; }
std::uint32_t max_turns_of(manifest const& m) { return m.execution ? m.execution->max_turns : 8; }

}  // namespace

agent_loop::agent_loop(agent_loop_options options, run_id run, run_input input, std::uint64_t started_ms)
    : options_(std::move(options)), run_(std::move(run)), started_ms_(started_ms), last_ms_(started_ms) {
    if (options_.model.empty() && options_.agent.privileged_model) options_.model = options_.agent.privileged_model->model;
    if (options_.provider.empty() && options_.agent.privileged_model)
        options_.provider = options_.agent.privileged_model->provider;
    context_ = input.input_label;
    model_label_.sources = {"model://" + options_.provider + "/" + options_.model};
    model_label_.trust = trust::untrusted;
    model_message first;
    first.role = message_role::user;
    first.text = input_text(input.value);
    messages_.push_back(std::move(first));
}

std::string agent_loop::next_key(effect_key::kind k) {
    ++steps_;
    return effect_key::make(run_, steps_, k).str();
}

void agent_loop::tool_message(std::string call_id, std::string text, bool is_error) {
    model_message m;
    m.role = message_role::tool;
    m.tool_call_id = std::move(call_id);
    m.text = std::move(text);
    m.is_error = is_error;
    messages_.push_back(std::move(m));
}

completion_request agent_loop::request() const {
    completion_request r;
    r.model = options_.model;
    r.system = system_prompt(options_.agent);
    r.messages = messages_;
    if (kind_of(options_.agent) == execution_kind::tool_calling) {
        for (auto const& g : options_.agent.tools) {
            model_tool t;
            t.name = g.ref.wire_name();
            t.description = g.description;
            t.input_schema = json::object{{"type", "object"}};
            for (auto const& offered : options_.tools) {
                if (offered.name != t.name) continue;
                t.input_schema = offered.input_schema;
                if (t.description.empty()) t.description = offered.description;
            }
            r.tools.push_back(std::move(t));
        }
    }
    std::optional<std::uint64_t> cap;
    if (options_.agent.privileged_model) cap = options_.agent.privileged_model->max_tokens;
    // Never ask for more than the token budget has left: the budget caps spending, not only turns.
    if (auto budget = options_.agent.limits.max_tokens) {
        auto left = *budget > tokens_ ? *budget - tokens_ : 0;
        cap = cap ? std::min(*cap, left) : left;
    }
    r.max_tokens = cap;
    return r;
}

loop_action agent_loop::finish(run_status s, std::string reason, json::value output) {
    status_ = s;
    phase_ = phase::done;
    finish_action f;
    f.status = s;
    f.reason = std::move(reason);
    f.output = std::move(output);
    f.output_label = context_;
    finished_ = f;
    return f;
}

std::optional<loop_action> agent_loop::over_budget(std::uint64_t now_ms, bool new_step, bool new_effect) {
    auto const& b = options_.agent.limits;
    auto spent = [&](char const* name, std::uint64_t limit) {
        return finish(run_status::exhausted, std::string("budget ") + name + " (" + std::to_string(limit) + ") is spent");
    };
    if (b.max_wallclock_secs && now_ms > started_ms_ && (now_ms - started_ms_) > *b.max_wallclock_secs * 1000)
        return spent("max_wallclock_secs", *b.max_wallclock_secs);
    if (new_step && b.max_steps && steps_ + 1 > *b.max_steps) return spent("max_steps", *b.max_steps);
    if (new_effect && b.max_effects && effects_ + 1 > *b.max_effects) return spent("max_effects", *b.max_effects);
    return std::nullopt;
}

loop_action agent_loop::refuse(model_tool_call const& call, new_record record, std::string model_text) {
    tool_message(call.id, std::move(model_text), true);
    phase_ = phase::append;
    append_action a;
    a.records.push_back(std::move(record));
    return a;
}

loop_action agent_loop::handle_pending(std::uint64_t now_ms) {
    auto call = std::move(pending_.front());
    pending_.pop_front();
    if (auto over = over_budget(now_ms, true, false)) return *over;
    auto key = next_key(effect_key::kind::tool);

    // Byte for byte against the wire names of the grants: a near miss is a different tool.
    tool_grant const* grant = nullptr;
    for (auto const& g : options_.agent.tools)
        if (g.ref.wire_name() == call.name) grant = &g;
    if (!grant) {
        json::object body{{"effect_key", key},
                          {"tool", call.name},
                          {"reason", to_string(deny_reason::not_granted)},
                          {"detail", "no granted tool is named '" + call.name + "'"},
                          {"call_id", call.id}};
        return refuse(call, new_record{record_kind::policy_denied, std::move(body)}, std::string(refusal_text));
    }
    json::value arguments = call.arguments.is_null() ? json::value(json::object{}) : call.arguments;
    if (!arguments.is_object()) {
        auto detail = std::string("arguments must be a JSON object, got ") + std::string(json_kind_name(arguments));
        json::object body{{"event", "tool_call_malformed"}, {"effect_key", key}, {"tool", grant->ref.uri()},
                          {"detail", detail},               {"call_id", call.id}};
        return refuse(call, new_record{record_kind::note, std::move(body)}, detail);
    }
    tainted labelled{arguments, context_, {}};
    auto dest = options_.destination_of ? options_.destination_of(grant->ref) : destination{local_destination{}};
    auto verdict = evaluate(options_.agent, options_.egress, grant->ref, labelled, dest);
    if (!verdict) {
        auto const& r = *verdict.refusal();
        json::object body{{"effect_key", key},
                          {"tool", grant->ref.uri()},
                          {"reason", to_string(r.reason)},
                          {"detail", r.detail},
                          {"call_id", call.id}};
        return refuse(call, new_record{record_kind::policy_denied, std::move(body)}, std::string(refusal_text));
    }
    if (auto over = over_budget(now_ms, false, true)) return *over;

    call_tool_action action{key, grant->ref, arguments, {}, true, false, {}};
    action.arguments_label = context_;
    action.mutates = grant->mutates;
    action.idempotent = grant->idempotent;
    action.call_id = call.id;
    in_flight_ = action;
    if (grant->requires_approval) {
        // The gates ran first: a reviewer is never asked about a call policy would refuse anyway.
        phase_ = phase::append;
        status_ = run_status::awaiting_approval;
        json::object body{{"effect_key", key}, {"tool", grant->ref.uri()}, {"arguments", arguments}, {"call_id", call.id}};
        append_action a;
        a.records.push_back(new_record{record_kind::approval_requested, std::move(body)});
        return a;
    }
    ++effects_;
    phase_ = phase::tool;
    return action;
}

loop_action agent_loop::decide(std::uint64_t now_ms) {
    if (!pending_.empty()) return handle_pending(now_ms);
    if (turns_ > 0 && last_completion_final_) return finish(run_status::succeeded, "", json::value(last_text_));
    if (turns_ >= max_turns_of(options_.agent))
        return finish(run_status::failed, "max_turns (" + std::to_string(max_turns_of(options_.agent)) +
                                              ") reached while the model was still asking for tools");
    if (auto over = over_budget(now_ms, true, true)) return *over;
    if (auto budget = options_.agent.limits.max_tokens; budget && tokens_ >= *budget)
        return finish(run_status::exhausted, "budget max_tokens (" + std::to_string(*budget) + ") is spent");
    call_model_action a;
    a.effect_key = next_key(effect_key::kind::model);
    a.request = request();
    json::array messages, tools;
    for (auto const& m : a.request.messages) messages.push_back(to_json(m));
    for (auto const& t : a.request.tools) tools.push_back(json::value(t.name));
    json::object digested{{"model", a.request.model},
                          {"system", a.request.system},
                          {"messages", std::move(messages)},
                          {"tools", std::move(tools)}};
    if (a.request.max_tokens) digested["max_tokens"] = *a.request.max_tokens;
    auto text = canonical(digested);
    a.request_sha256 = sha256_hex(text ? *text : json::serialize(digested));
    ++turns_;
    ++effects_;
    phase_ = phase::model;
    return a;
}

loop_action agent_loop::next(loop_event const& event) {
    if (phase_ == phase::done) return *finished_;
    if (event.now_ms > last_ms_) last_ms_ = event.now_ms;
    auto now = last_ms_;
    auto expect = [&](phase p, char const* what) {
        if (phase_ != p) throw std::logic_error(std::string("agent loop: unexpected event ") + what);
    };
    return std::visit(
        [&](auto const& e) -> loop_action {
            using E = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<E, start_event>) {
                expect(phase::idle, "start");
                return decide(now);
            } else if constexpr (std::is_same_v<E, model_done_event>) {
                expect(phase::model, "model_done");
                auto const& c = e.result;
                tokens_ += c.usage.input_tokens + c.usage.output_tokens;
                context_ = context_.join(model_label_);
                if (kind_of(options_.agent) == execution_kind::completion) {
                    if (c.text.empty())
                        return finish(run_status::failed, "the model answered a completion agent without text");
                    return finish(run_status::succeeded, "", json::value(c.text));
                }
                model_message m;
                m.role = message_role::assistant;
                m.text = c.text;
                m.tool_calls = c.tool_calls;
                messages_.push_back(std::move(m));
                pending_.assign(c.tool_calls.begin(), c.tool_calls.end());
                last_completion_final_ = c.tool_calls.empty();
                last_text_ = c.text;
                return decide(now);
            } else if constexpr (std::is_same_v<E, model_failed_event>) {
                expect(phase::model, "model_failed");
                return finish(run_status::failed, "model call failed (" + std::string(to_string(e.error.kind)) +
                                                      "): " + e.error.detail);
            } else if constexpr (std::is_same_v<E, tool_done_event>) {
                expect(phase::tool, "tool_done");
                auto const& grant = *options_.agent.grant_for(in_flight_->tool);
                label result_label{{in_flight_->tool.uri()}, trust::untrusted,
                                   grant.max_sensitivity.value_or(sensitivity::public_)};
                context_ = context_.join(result_label);
                tool_message(in_flight_->call_id, tool_result_text(e.result), false);
                in_flight_.reset();
                return decide(now);
            } else if constexpr (std::is_same_v<E, tool_failed_event>) {
                expect(phase::tool, "tool_failed");
                // The error text comes from the far side: it is as untrusted as a result.
                label result_label{{in_flight_->tool.uri()}, trust::untrusted, sensitivity::public_};
                context_ = context_.join(result_label);
                tool_message(in_flight_->call_id,
                             std::string(to_string(e.error.kind)) + ": " + e.error.detail, true);
                in_flight_.reset();
                return decide(now);
            } else if constexpr (std::is_same_v<E, appended_event>) {
                expect(phase::append, "appended");
                if (status_ == run_status::awaiting_approval) {
                    phase_ = phase::approval;
                    return await_approval_action{in_flight_->effect_key};
                }
                return decide(now);
            } else {
                expect(phase::approval, "approval");
                status_ = run_status::running;
                if (!e.approved) {
                    tool_message(in_flight_->call_id, std::string(rejection_text), true);
                    in_flight_.reset();
                    return decide(now);
                }
                if (auto over = over_budget(now, false, true)) return *over;
                ++effects_;
                phase_ = phase::tool;
                return *in_flight_;
            }
        },
        event.what);
}

}  // namespace airlock::core
