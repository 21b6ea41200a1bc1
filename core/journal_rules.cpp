#include "core/journal_rules.hpp"

#include "core/canonical_json.hpp"

#include <algorithm>
#include <set>

namespace airlock::core {

namespace {

std::string string_at(boost::json::object const& o, std::string_view key) {
    if (auto const* v = o.if_contains(key); v && v->is_string()) return std::string(v->get_string());
    return {};
}

std::string agent_name(boost::json::object const& admitted_body) {
    if (auto const* a = admitted_body.if_contains("agent"); a && a->is_object()) return string_at(a->get_object(), "name");
    return {};
}

}  // namespace

std::string run_kind_of(boost::json::object const& admitted_body) {
    if (string_at(admitted_body, "mode") == "agent") return "agent";
    auto agent = agent_name(admitted_body);
    if (agent == "airlock-gateway" || agent == "airlock-journal") return "airlock";
    return "session";
}

// An agent run's input is whatever its caller sent, so a "principal" inside it claims nothing: only
// a gateway session's admission names its principal in the input.
std::string run_owner_of(boost::json::object const& admitted_body) {
    if (auto who = string_at(admitted_body, "principal"); !who.empty()) return who;
    if (run_kind_of(admitted_body) != "session") return {};
    if (auto const* in = admitted_body.if_contains("input"); in && in->is_object()) return string_at(in->get_object(), "principal");
    return {};
}

result<void> check_run_id(std::string_view run_id) {
    // UTF-8 because a record's hash covers its run id as a JSON string (canonical JSON is I-JSON):
    // an id that is not UTF-8 could never be chained, so it is refused here, by its name.
    if (run_id.empty() || run_id.size() > max_run_id_bytes || run_id.find('\0') != std::string_view::npos ||
        !is_valid_utf8(run_id))
        return make_error("invalid_run_id", "run id must be 1 to 128 bytes of UTF-8 without NUL");
    return {};
}

result<append_plan> plan_append(std::string_view run_id, std::optional<run_summary> const& current,
                                std::vector<new_record> const& batch,
                                std::function<bool(std::string_view)> const& effect_started_before) {
    if (batch.empty()) return make_error("empty_append", "an append needs at least one record");
    append_plan plan;
    std::optional<record> prev;
    if (current) {
        plan.summary = *current;
        // Only the head's seq and hash matter for chaining the next record.
        record head;
        head.run_id = std::string(run_id);
        head.seq = current->head_seq;
        head.hash = current->head_hash;
        prev = std::move(head);
    } else {
        plan.summary.run_id = std::string(run_id);
    }
    std::set<std::string> started_here;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        auto const& nr = batch[i];
        auto where = "record " + std::to_string(i + 1) + " of the append";
        if (plan.summary.sealed)
            return make_error(core::errc::sealed, "run " + std::string(run_id) + " is sealed (" + plan.summary.status +
                                            "); " + where + " is refused");
        bool admitted = prev.has_value();
        if (nr.kind == record_kind::run_admitted) {
            if (admitted) return make_error(core::errc::not_admitted, "run " + std::string(run_id) + " is already admitted");
        } else if (!admitted) {
            return make_error(core::errc::not_admitted, "run " + std::string(run_id) + " must start with run_admitted, not " +
                                                  std::string(to_string(nr.kind)));
        }
        if (nr.kind == record_kind::effect_started) {
            auto key = string_at(nr.body, "effect_key");
            if (key.empty())
                return make_error("invalid_record", where + ": effect_started needs a string effect_key");
            // Exactly-once lives here, where the data is: a second start of one effect is refused
            // whether it comes in a later append or in the same one.
            if (started_here.contains(key) || effect_started_before(key))
                return make_error("duplicate_effect", "effect " + key + " of run " + std::string(run_id) +
                                                          " was already started");
            started_here.insert(key);
            plan.new_effects.push_back(key);
        }
        auto rec = chain_next(run_id, prev, nr);
        if (!rec) return rec.error();
        switch (nr.kind) {
            case record_kind::run_admitted:
                plan.summary.agent = agent_name(nr.body);
                plan.summary.admitted_at = string_at(nr.body, "admitted_at");
                plan.summary.principal = run_owner_of(nr.body);
                plan.summary.kind = run_kind_of(nr.body);
                plan.summary.status = "running";
                break;
            case record_kind::approval_requested: plan.summary.status = "awaiting_approval"; break;
            case record_kind::approval_decided: plan.summary.status = "running"; break;
            case record_kind::run_sealed: {
                auto status = string_at(nr.body, "status");
                if (!is_terminal_status(status))
                    return make_error("invalid_record", where + ": run_sealed needs a terminal status, got '" +
                                                            status + "'");
                plan.summary.status = status;
                plan.summary.sealed = true;
                break;
            }
            default: break;
        }
        plan.summary.head_seq = rec->seq;
        plan.summary.head_hash = rec->hash;
        // The next record chains to this one's seq and hash only: the body is not copied.
        record head;
        head.run_id = rec->run_id;
        head.seq = rec->seq;
        head.hash = rec->hash;
        plan.records.push_back(std::move(*rec));
        prev = std::move(head);
    }
    return plan;
}

result<new_record> make_seal(run_summary const& current, std::string_view status, std::string_view reason,
                             std::string_view sealed_at) {
    if (!is_terminal_status(status))
        return make_error("invalid_status", "'" + std::string(status) + "' is not a terminal run status");
    if (current.sealed) return make_error(core::errc::sealed, "run " + current.run_id + " is already sealed (" + current.status + ")");
    boost::json::object body;
    body["status"] = status;
    body["reason"] = reason;
    body["chain_head"] = to_hex(current.head_hash);
    body["sealed_at"] = sealed_at;
    return new_record{record_kind::run_sealed, std::move(body)};
}

boost::json::object to_json(run_summary const& s) {
    boost::json::value principal = s.principal.empty() ? boost::json::value(nullptr) : boost::json::value(s.principal);
    return {{"run_id", s.run_id},   {"agent", s.agent},       {"kind", s.kind}, {"status", s.status},
            {"admitted_at", s.admitted_at}, {"principal", std::move(principal)}, {"head_seq", s.head_seq},
            {"head_hash", to_hex(s.head_hash)}, {"sealed", s.sealed}};
}

result<run_summary> run_summary_from_json(boost::json::value const& v) {
    auto const* o = v.if_object();
    if (!o) return make_error("corrupt", "run index entry is not an object");
    run_summary s;
    auto str = [&](char const* k, std::string& out) -> bool {
        auto const* f = o->if_contains(k);
        if (!f || !f->is_string()) return false;
        out = f->get_string();
        return true;
    };
    std::string hash_hex;
    if (!str("run_id", s.run_id) || !str("agent", s.agent) || !str("status", s.status) ||
        !str("admitted_at", s.admitted_at) || !str("head_hash", hash_hex))
        return make_error("corrupt", "run index entry is missing a field");
    // Entries written before kinds were kept have none (the LMDB store fills it in when it opens).
    if (auto const* k = o->if_contains("kind")) {
        if (!k->is_string()) return make_error("corrupt", "run index entry has a malformed kind");
        s.kind = k->get_string();
    }
    // Entries written before runs had owners have no principal: they belong to nobody.
    if (auto const* p = o->if_contains("principal"); p && !p->is_null()) {
        if (!p->is_string()) return make_error("corrupt", "run index entry has a malformed principal");
        s.principal = p->get_string();
    }
    auto const* seq = o->if_contains("head_seq");
    auto const* sealed = o->if_contains("sealed");
    if (!seq || !(seq->is_uint64() || seq->is_int64()) || !sealed || !sealed->is_bool() || hash_hex.size() != 64)
        return make_error("corrupt", "run index entry has a malformed field");
    s.head_seq = seq->is_uint64() ? seq->get_uint64() : static_cast<std::uint64_t>(seq->get_int64());
    s.sealed = sealed->get_bool();
    for (std::size_t i = 0; i < 32; ++i) {
        auto nib = [](char c) -> int {
            if (c >= '0' && c <= '9') return c - '0';
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            return -1;
        };
        int hi = nib(hash_hex[2 * i]), lo = nib(hash_hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return make_error("corrupt", "run index entry has a malformed head_hash");
        s.head_hash[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    }
    return s;
}

bool matches(run_filter const& f, run_summary const& s) {
    if (f.status && s.status != *f.status) return false;
    if (f.agent && s.agent != *f.agent) return false;
    if (f.since && s.admitted_at < *f.since) return false;
    if (f.principal && (f.principal->empty() || s.principal != *f.principal)) return false;
    if (f.kind && s.kind != *f.kind) return false;
    return true;
}

}  // namespace airlock::core
