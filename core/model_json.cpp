#include "core/model_json.hpp"

#include <boost/json/array.hpp>

namespace airlock::core {

namespace json = boost::json;

std::string_view to_string(message_role r) noexcept {
    switch (r) {
        case message_role::user: return "user";
        case message_role::assistant: return "assistant";
        case message_role::tool: return "tool";
    }
    return "user";
}

std::string_view to_string(stop_reason s) noexcept {
    switch (s) {
        case stop_reason::end_turn: return "end_turn";
        case stop_reason::tool_use: return "tool_use";
        case stop_reason::max_tokens: return "max_tokens";
        case stop_reason::other: return "other";
    }
    return "other";
}

json::object to_json(model_tool_call const& c) {
    return {{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}};
}

json::object to_json(model_message const& m) {
    json::object o{{"role", to_string(m.role)}, {"text", m.text}};
    if (!m.tool_calls.empty()) {
        json::array calls;
        for (auto const& c : m.tool_calls) calls.push_back(to_json(c));
        o["tool_calls"] = std::move(calls);
    }
    if (m.role == message_role::tool) {
        o["tool_call_id"] = m.tool_call_id;
        o["is_error"] = m.is_error;
    }
    return o;
}

json::object to_json(token_usage const& u) {
    return {{"input_tokens", u.input_tokens}, {"output_tokens", u.output_tokens}};
}

json::object to_json(completion const& c) {
    json::array calls;
    for (auto const& call : c.tool_calls) calls.push_back(to_json(call));
    return {{"text", c.text},
            {"tool_calls", std::move(calls)},
            {"usage", to_json(c.usage)},
            {"stop", to_string(c.stop)},
            {"model", c.model}};
}

namespace {

result<std::string> string_field(json::object const& o, std::string_view key, std::string_view where) {
    auto const* v = o.if_contains(key);
    if (!v || !v->is_string())
        return make_error(core::errc::malformed_record, std::string(where) + "." + std::string(key) + " must be a string");
    return std::string(v->get_string());
}

result<std::uint64_t> count_field(json::object const& o, std::string_view key, std::string_view where) {
    auto const* v = o.if_contains(key);
    if (v && v->is_uint64()) return v->get_uint64();
    if (v && v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
    return make_error(core::errc::malformed_record, std::string(where) + "." + std::string(key) + " must be a count");
}

}  // namespace

result<model_tool_call> model_tool_call_from_json(json::value const& v) {
    auto const* o = v.if_object();
    if (!o) return make_error(core::errc::malformed_record, "tool_calls[]: expected an object");
    model_tool_call c;
    auto id = string_field(*o, "id", "tool_calls[]");
    if (!id) return id.error();
    auto name = string_field(*o, "name", "tool_calls[]");
    if (!name) return name.error();
    c.id = std::move(*id);
    c.name = std::move(*name);
    if (auto const* a = o->if_contains("arguments")) c.arguments = *a;
    return c;
}

result<token_usage> token_usage_from_json(json::value const& v) {
    auto const* o = v.if_object();
    if (!o) return make_error(core::errc::malformed_record, "usage: expected an object");
    auto in = count_field(*o, "input_tokens", "usage");
    if (!in) return in.error();
    auto out = count_field(*o, "output_tokens", "usage");
    if (!out) return out.error();
    return token_usage{*in, *out};
}

result<completion> completion_from_json(json::value const& v) {
    auto const* o = v.if_object();
    if (!o) return make_error(core::errc::malformed_record, "completion: expected an object");
    completion c;
    auto text = string_field(*o, "text", "completion");
    if (!text) return text.error();
    c.text = std::move(*text);
    if (auto const* calls = o->if_contains("tool_calls")) {
        if (!calls->is_array()) return make_error(core::errc::malformed_record, "completion.tool_calls must be an array");
        for (auto const& call : calls->get_array()) {
            auto parsed = model_tool_call_from_json(call);
            if (!parsed) return parsed.error();
            c.tool_calls.push_back(std::move(*parsed));
        }
    }
    if (auto const* u = o->if_contains("usage")) {
        auto usage = token_usage_from_json(*u);
        if (!usage) return usage.error();
        c.usage = *usage;
    }
    if (auto const* s = o->if_contains("stop"); s && s->is_string()) {
        auto sv = std::string_view(s->get_string());
        c.stop = sv == "end_turn" ? stop_reason::end_turn
                 : sv == "tool_use" ? stop_reason::tool_use
                 : sv == "max_tokens" ? stop_reason::max_tokens
                                      : stop_reason::other;
    }
    if (auto const* m = o->if_contains("model"); m && m->is_string()) c.model = std::string(m->get_string());
    return c;
}

}  // namespace airlock::core
