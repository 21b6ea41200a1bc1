#include "core/recovery.hpp"

#include "core/record_body.hpp"
#include "core/canonical_json.hpp"
#include "core/effect_records.hpp"
#include "core/label.hpp"
#include "core/model_json.hpp"

#include <string_view>
#include <utility>

namespace airlock::core::recovery {

namespace json = boost::json;

journal_cursor::journal_cursor(std::string run_id, std::vector<record> const& records)
    : run_id_(std::move(run_id)), records_(&records) {}

namespace {

bool is_annotation(record const& r) {
    // Records the driver writes for people, not for the loop: they match no action.
    if (r.kind != record_kind::note) return false;
    auto event = body_string(r.body, "event");
    return event == "effect_retried" || event == "resumed";
}

bool same_json(json::value const& a, json::value const& b) {
    auto ca = canonical(a);
    auto cb = canonical(b);
    return ca && cb ? *ca == *cb : a == b;
}

// What a record is, in a divergence message: kind and effect key, never the arguments.
std::string describe(record const& r) {
    std::string s = std::string(to_string(r.kind));
    if (auto key = body_string(r.body, "effect_key"); !key.empty()) s += " " + key;
    if (auto tool = body_string(r.body, "tool"); !tool.empty()) s += " (" + tool + ")";
    return s;
}

refuse divergence(record const& r, std::string const& expected) {
    return {make_error(core::errc::divergence, "seq " + std::to_string(r.seq) + ": the current manifest and code would " + expected +
                                         ", the journal has " + describe(r))};
}

refuse incomplete(std::string message) { return {make_error("incomplete", std::move(message))}; }

std::string seq_of(record const& r) { return "seq " + std::to_string(r.seq); }

// The recorded outcome of an effect whose start matched, or what to make of its absence. `in_doubt`
// decides an outcome missing in a live run; `failure_tool` names the tool in a failure's error.
template <class Done, class InDoubt>
decision outcome_of(record const& started, std::string const& key, journal_cursor& cursor, mode m,
                    std::string_view what, std::string const& failure_tool, Done done, InDoubt in_doubt) {
    auto const* outcome = cursor.peek();
    if (!outcome) {
        if (m == mode::replay)
            return incomplete(seq_of(started) + ": " + std::string(what) + " " + key + " has no outcome");
        return in_doubt();
    }
    if (body_string(outcome->body, "effect_key") != key) return divergence(*outcome, "see the outcome of " + key);
    if (outcome->kind == record_kind::effect_done) {
        auto d = parse_effect_done(outcome->body);
        if (!d) return refuse{make_error(core::errc::malformed_record, seq_of(*outcome) + ": " + d.error().message)};
        auto event = done(*d, *outcome);
        if (auto* r = std::get_if<refuse>(&event)) return *r;
        cursor.take();
        return event;
    }
    if (outcome->kind == record_kind::effect_failed) {
        auto f = parse_effect_failed(outcome->body);
        if (!f) return refuse{make_error(core::errc::malformed_record, seq_of(*outcome) + ": " + f.error().message)};
        cursor.take();
        return replay_event{loop_event{tool_failed_event{to_tool_error(*f, failure_tool)}, body_u64(outcome->body, "at_ms")}};
    }
    return divergence(*outcome, "see the outcome of " + key);
}

decision next_model(call_model_action const& model, journal_cursor& cursor, mode m) {
    auto const* rec = cursor.peek();
    if (!rec) return perform{};
    auto s = rec->kind == record_kind::effect_started ? parse_effect_started(rec->body)
                                                       : result<effect_started>(make_error(core::errc::divergence, ""));
    if (!s || s->effect_key != model.effect_key || s->target != effect_target::model ||
        s->request_sha256.value_or("") != model.request_sha256)
        return divergence(*rec, "call the model as " + model.effect_key);
    cursor.take();
    auto done = [](effect_done const& d, record const& outcome) -> decision {
        auto c = d.output ? completion_from_json(*d.output)
                          : result<completion>(make_error(core::errc::malformed_record, "output is missing"));
        if (!c) return refuse{make_error(core::errc::malformed_record, seq_of(outcome) + ": " + c.error().message)};
        return replay_event{loop_event{model_done_event{std::move(*c)}, d.at_ms.value_or(0)}};
    };
    // A model call changes nothing in the world: asking again is always safe.
    auto in_doubt = [&]() -> decision {
        json::object note{{"event", "effect_retried"}, {"effect_key", model.effect_key}, {"attempt", 2}};
        return retry{{record_kind::note, std::move(note)}};
    };
    auto d = outcome_of(*rec, model.effect_key, cursor, m, "model call", "", done, in_doubt);
    // A model call's failure is the same error (model_error is tool_error), fed as another event.
    if (auto* r = std::get_if<replay_event>(&d); r && std::holds_alternative<tool_failed_event>(r->event.what))
        r->event.what = model_failed_event{std::get<tool_failed_event>(r->event.what).error};
    return d;
}

decision next_tool(call_tool_action const& call, journal_cursor& cursor, mode m) {
    auto const* rec = cursor.peek();
    if (!rec) return perform{};
    auto s = rec->kind == record_kind::effect_started ? parse_effect_started(rec->body)
                                                       : result<effect_started>(make_error(core::errc::divergence, ""));
    if (!s || s->effect_key != call.effect_key || s->target != effect_target::tool || s->tool.value_or("") != call.tool.uri() ||
        !s->arguments || !same_json(*s->arguments, call.arguments))
        return divergence(*rec, "call " + call.tool.uri() + " as " + call.effect_key);
    cursor.take();
    auto done = [](effect_done const& d, record const&) -> decision {
        return replay_event{loop_event{tool_done_event{d.output.value_or(json::value())}, d.at_ms.value_or(0)}};
    };
    // Whether the call may be made again is the current grant's say, not the record's.
    auto in_doubt = [&]() -> decision {
        if (call.mutates && !call.idempotent)
            return quarantine{"effect " + call.effect_key + " (" + call.tool.uri() +
                              ") was started and its outcome is unknown; it mutates and is not idempotent, "
                              "so it is not performed again"};
        json::object note{{"event", "effect_retried"},
                          {"effect_key", call.effect_key},
                          {"attempt", 2},
                          {"why", call.mutates ? "the grant is idempotent" : "the grant does not mutate"}};
        return retry{{record_kind::note, std::move(note)}};
    };
    return outcome_of(*rec, call.effect_key, cursor, m, "tool call", call.tool.uri(), done, in_doubt);
}

decision next_append(append_action const& add, journal_cursor& cursor) {
    write w;
    for (auto const& nr : add.records) {
        auto const* r = cursor.peek();
        if (!r) {
            w.records.push_back(nr);
            continue;
        }
        if (r->kind != nr.kind || !same_json(r->body, nr.body))
            return divergence(*r, "write " + std::string(to_string(nr.kind)) + " " + body_string(nr.body, "effect_key"));
        cursor.take();
    }
    return w;
}

decision next_approval(await_approval_action const& wait, journal_cursor& cursor) {
    auto const* rec = cursor.peek();
    if (!rec) return park{};
    if (rec->kind != record_kind::approval_decided || body_string(rec->body, "effect_key") != wait.effect_key)
        return divergence(*rec, "wait for a decision on " + wait.effect_key);
    bool approved = false;
    if (auto const* a = rec->body.if_contains("approved"); a && a->is_bool()) approved = a->get_bool();
    loop_event event{approval_event{approved}, body_u64(rec->body, "at_ms")};
    cursor.take();
    return replay_event{std::move(event)};
}

decision next_finish(finish_action const& fin, journal_cursor& cursor, mode m) {
    std::string status(to_string(fin.status));
    finish f;
    auto const* rec = cursor.peek();
    if (!rec) {
        f.write_output = true;
    } else if (rec->kind == record_kind::note && body_string(rec->body, "event") == "run_output") {
        auto const* o = rec->body.if_contains("output");
        if (body_string(rec->body, "status") != status || !o || !same_json(*o, fin.output)) return divergence(*rec, "finish " + status);
        cursor.take();
        rec = cursor.peek();
    }
    if (rec) {
        if (rec->kind != record_kind::run_sealed || body_string(rec->body, "status") != status)
            return divergence(*rec, "finish " + status);
        cursor.take();
        return f;
    }
    if (m == mode::replay)
        return incomplete("the journal of run " + cursor.run_id() + " ends before its seal (" + status + ")");
    f.write_seal = true;
    return f;
}

}  // namespace

record const* journal_cursor::peek() {
    auto const& records = *records_;
    while (pos_ < records.size() && is_annotation(records[pos_])) ++pos_;
    return pos_ < records.size() ? &records[pos_] : nullptr;
}

void journal_cursor::take() {
    ++pos_;
    ++matched_;
}

std::uint64_t journal_cursor::last_seq() const noexcept { return records_->empty() ? 0 : records_->back().seq; }

decision next(loop_action const& action, journal_cursor& cursor, mode m) {
    auto const* rec = cursor.peek();
    bool const finishing = std::holds_alternative<finish_action>(action);
    // A seal where the loop expected to go on: the run was ended from outside (cancelled,
    // quarantined, failed by a bug) and stays as recorded. A cancel is an outside decision even
    // where the loop would now finish: a model call cancelled mid-way is journaled as failed,
    // and the run sealed cancelled right after, before the loop could take that failure in.
    if (rec && rec->kind == record_kind::run_sealed && (!finishing || body_string(rec->body, "status") == "cancelled")) {
        cursor.take();
        return sealed{parse_run_status(body_string(rec->body, "status")).value_or(run_status::failed), body_string(rec->body, "reason")};
    }
    if (!rec && m == mode::replay && !std::holds_alternative<await_approval_action>(action))
        return incomplete("the journal of run " + cursor.run_id() + " ends at seq " + std::to_string(cursor.last_seq()) +
                          " before the run finished (next: " + std::string(action_name(action)) + ")");
    if (auto const* model = std::get_if<call_model_action>(&action)) return next_model(*model, cursor, m);
    if (auto const* call = std::get_if<call_tool_action>(&action)) return next_tool(*call, cursor, m);
    if (auto const* add = std::get_if<append_action>(&action)) return next_append(*add, cursor);
    if (auto const* wait = std::get_if<await_approval_action>(&action)) return next_approval(*wait, cursor);
    return next_finish(std::get<finish_action>(action), cursor, m);
}

new_record output_note(finish_action const& fin) {
    json::object note{{"event", "run_output"},
                      {"status", to_string(fin.status)},
                      {"reason", fin.reason},
                      {"output", fin.output},
                      {"output_label", to_json(fin.output_label)}};
    return {record_kind::note, std::move(note)};
}

}  // namespace airlock::core::recovery
