#include "core/effect_records.hpp"

#include <cstdint>

namespace airlock::core {

namespace json = boost::json;

std::string_view to_string(effect_target t) noexcept { return t == effect_target::model ? "model" : "tool"; }

std::optional<effect_target> parse_effect_target(std::string_view s) noexcept {
    if (s == "tool") return effect_target::tool;
    if (s == "model") return effect_target::model;
    return std::nullopt;
}

// The members in this order, each only when present. The order is the one the runner and the
// gateway wrote before this schema; a body reordered would be stored with other bytes.
json::object to_json(effect_started const& s) {
    json::object o;
    o["effect_key"] = s.effect_key;
    o["target"] = to_string(s.target);
    if (s.tool) o["tool"] = *s.tool;
    if (s.provider) o["provider"] = *s.provider;
    if (s.model) o["model"] = *s.model;
    if (s.request_sha256) o["request_sha256"] = *s.request_sha256;
    if (s.arguments) o["arguments"] = *s.arguments;
    if (s.arguments_label) o["arguments_label"] = *s.arguments_label;
    if (s.mutates) o["mutates"] = *s.mutates;
    if (s.idempotent) o["idempotent"] = *s.idempotent;
    o["attempt"] = static_cast<std::int64_t>(s.attempt);  // as both writers wrote it: a signed integer
    if (s.call_id) o["call_id"] = *s.call_id;
    if (s.provenance) o["provenance"] = *s.provenance;
    if (s.request_id) o["request_id"] = *s.request_id;
    if (s.at_ms) o["at_ms"] = *s.at_ms;
    if (s.caller) o["caller"] = *s.caller;
    return o;
}

json::object to_json(effect_done const& d) {
    json::object o;
    o["effect_key"] = d.effect_key;
    if (d.output) o["output"] = *d.output;
    if (d.output_label) o["output_label"] = *d.output_label;
    if (d.usage) o["usage"] = *d.usage;
    if (d.at_ms) o["at_ms"] = *d.at_ms;
    return o;
}

json::object to_json(effect_failed const& f) {
    json::object o;
    o["effect_key"] = f.effect_key;
    o["error_kind"] = f.error_kind;
    o["disposition"] = f.disposition;
    o["detail"] = f.detail;
    if (f.at_ms) o["at_ms"] = *f.at_ms;
    return o;
}

namespace {

// Reads the members of one body: an absent member is nullopt (the caller picks the default), one of
// the wrong type is nullopt too and the first such fault is kept, naming the record and the member.
class member_reader {
public:
    member_reader(json::object const& body, std::string_view record) : body_(body), record_(record) {}

    std::optional<std::string> string(std::string_view key) {
        auto const* v = find(key, &json::value::is_string, "a string");
        return v ? std::optional<std::string>(std::string(v->get_string())) : std::nullopt;
    }
    std::optional<bool> boolean(std::string_view key) {
        auto const* v = find(key, &json::value::is_bool, "true or false");
        return v ? std::optional<bool>(v->get_bool()) : std::nullopt;
    }
    std::optional<std::uint64_t> u64(std::string_view key) {
        auto const* v = find(key, &json::value::is_number, "a non-negative integer");
        if (!v) return std::nullopt;
        if (v->is_uint64()) return v->get_uint64();
        if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
        refuse(std::string(key) + " must be a non-negative integer");
        return std::nullopt;
    }
    std::optional<json::object> object(std::string_view key) {
        auto const* v = find(key, &json::value::is_object, "an object");
        return v ? std::optional<json::object>(v->get_object()) : std::nullopt;
    }
    std::optional<json::value> any(std::string_view key) {
        auto const* v = body_.if_contains(key);
        return v ? std::optional<json::value>(*v) : std::nullopt;
    }
    // The effect key every call record carries: a non-empty string.
    std::string effect_key() {
        auto key = string("effect_key");
        if (!key || key->empty()) refuse("effect_key is missing");
        return key.value_or("");
    }
    void refuse(std::string what) {
        if (!fault_) fault_ = make_error(core::errc::malformed_record, std::string(record_) + ": " + what);
    }
    std::optional<error> const& fault() const noexcept { return fault_; }

private:
    json::value const* find(std::string_view key, bool (json::value::*is)() const noexcept, std::string_view want) {
        auto const* v = body_.if_contains(key);
        if (!v) return nullptr;
        if (!((*v).*is)()) {
            refuse(std::string(key) + " must be " + std::string(want));
            return nullptr;
        }
        return v;
    }

    json::object const& body_;
    std::string_view record_;
    std::optional<error> fault_;
};

}  // namespace

result<effect_started> parse_effect_started(json::object const& body) {
    member_reader in(body, "effect_started");
    effect_started s;
    s.effect_key = in.effect_key();
    auto target = in.string("target");
    auto t = target ? parse_effect_target(*target) : std::nullopt;
    if (!t) in.refuse("target must be \"tool\" or \"model\"");
    s.target = t.value_or(effect_target::tool);
    s.tool = in.string("tool");
    s.provider = in.string("provider");
    s.model = in.string("model");
    s.request_sha256 = in.string("request_sha256");
    s.arguments = in.any("arguments");
    s.arguments_label = in.object("arguments_label");
    s.mutates = in.boolean("mutates");
    s.idempotent = in.boolean("idempotent");
    auto attempt = in.u64("attempt").value_or(1);
    if (attempt == 0 || attempt > UINT32_MAX) in.refuse("attempt must be a positive integer");
    s.attempt = static_cast<std::uint32_t>(attempt);
    s.call_id = in.string("call_id");
    s.provenance = in.object("provenance");
    s.request_id = in.string("request_id");
    s.at_ms = in.u64("at_ms");
    s.caller = in.object("caller");
    if (in.fault()) return *in.fault();
    return s;
}

result<effect_done> parse_effect_done(json::object const& body) {
    member_reader in(body, "effect_done");
    effect_done d;
    d.effect_key = in.effect_key();
    d.output = in.any("output");
    d.output_label = in.object("output_label");
    d.usage = in.object("usage");
    d.at_ms = in.u64("at_ms");
    if (in.fault()) return *in.fault();
    return d;
}

result<effect_failed> parse_effect_failed(json::object const& body) {
    member_reader in(body, "effect_failed");
    effect_failed f;
    f.effect_key = in.effect_key();
    f.error_kind = in.string("error_kind").value_or("");
    f.disposition = in.string("disposition").value_or("");
    f.detail = in.string("detail").value_or("");
    f.at_ms = in.u64("at_ms");
    if (in.fault()) return *in.fault();
    return f;
}

effect_failed failure_record(std::string effect_key, tool_error const& e, std::optional<std::uint64_t> at_ms) {
    return effect_failed{std::move(effect_key), std::string(to_string(e.kind)),
                         std::string(to_string(disposition_of(e.kind))), e.detail, at_ms};
}

tool_error to_tool_error(effect_failed const& f, std::string tool) {
    auto kind = parse_tool_error_kind(f.error_kind).value_or(tool_error_kind::tool_failed);
    return tool_error{kind, std::move(tool), f.detail};
}

boost::json::object in_doubt_note(std::string const& effect_key, std::string const& tool, bool mutates,
                                  std::string_view why) {
    return {{"event", "effect_in_doubt"}, {"effect_key", effect_key}, {"tool", tool}, {"mutates", mutates}, {"why", why}};
}

}  // namespace airlock::core
