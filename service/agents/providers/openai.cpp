#include "service/agents/providers/openai.hpp"

#include "core/canonical_json.hpp"
#include "service/agents/providers/wire_json.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace airlock::service::providers {

namespace json = boost::json;
using core::tool_error_kind;

namespace {

bool blank(std::string_view s) {
    return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// Arguments as the wire carries them: a JSON string. A raw string the model wrote earlier (not
// valid JSON) goes back exactly as it was.
std::string arguments_text(json::value const& arguments) {
    if (arguments.is_string()) return std::string(arguments.get_string());
    return json::serialize(arguments);
}

// Arguments as the loop wants them: an object when they parse, the raw string otherwise. Servers
// differ: OpenAI and vLLM send a JSON string, Ollama sometimes an object, some an empty string for
// a function without parameters.
json::value arguments_value(json::value const* wire) {
    if (!wire || wire->is_null()) return json::object{};
    if (wire->is_object()) return *wire;
    if (!wire->is_string()) return *wire;
    auto const& text = wire->get_string();
    if (blank(text)) return json::object{};
    // Exactly (numbers to the bit): these become a tool call's journaled and signed arguments.
    auto v = core::parse_ijson(text);
    if (v && v->is_object()) return std::move(*v);
    return json::string(text);
}

// `content` is a string, null beside tool calls, or (some servers) a list of typed parts.
std::string content_text(json::value const* content) {
    if (!content) return {};
    if (content->is_string()) return std::string(content->get_string());
    std::string out;
    if (content->is_array()) {
        for (auto const& part : content->get_array()) {
            if (!part.is_object()) continue;
            if (auto t = wire::string_at(part.get_object(), "text")) out += *t;
        }
    }
    return out;
}

json::object message_json(core::model_message const& m) {
    switch (m.role) {
        case core::message_role::user: return json::object{{"role", "user"}, {"content", m.text}};
        case core::message_role::tool: {
            // Chat Completions has no error flag on a tool result; the text has to say it.
            std::string content = m.is_error ? "Error: " + m.text : m.text;
            return json::object{{"role", "tool"}, {"tool_call_id", m.tool_call_id}, {"content", std::move(content)}};
        }
        case core::message_role::assistant: break;
    }
    json::object o{{"role", "assistant"}};
    if (m.tool_calls.empty() || !m.text.empty()) o["content"] = m.text;
    else o["content"] = nullptr;
    if (!m.tool_calls.empty()) {
        json::array calls;
        for (auto const& c : m.tool_calls) {
            json::object fn{{"name", c.name}, {"arguments", arguments_text(c.arguments)}};
            calls.push_back(json::object{{"id", c.id}, {"type", "function"}, {"function", std::move(fn)}});
        }
        o["tool_calls"] = std::move(calls);
    }
    return o;
}

core::stop_reason openai_stop(std::optional<std::string> const& finish, bool has_calls) {
    if (has_calls || finish == "tool_calls" || finish == "function_call") return core::stop_reason::tool_use;
    if (finish == "length") return core::stop_reason::max_tokens;
    if (!finish || finish == "stop" || finish == "eos") return core::stop_reason::end_turn;
    return core::stop_reason::other;
}

}  // namespace

json::object openai_request_body(core::completion_request const& request, std::string const& default_model,
                                 std::string const& max_tokens_field) {
    json::array messages;
    if (!request.system.empty()) messages.push_back(json::object{{"role", "system"}, {"content", request.system}});
    for (auto const& m : request.messages) messages.push_back(message_json(m));
    json::object body{{"model", request.model.empty() ? default_model : request.model},
                      {"messages", std::move(messages)},
                      {"stream", false}};
    // An empty `tools` list is refused by some servers; leave it out when there are none.
    if (!request.tools.empty()) {
        json::array tools;
        for (auto const& t : request.tools) {
            json::object fn{{"name", t.name}, {"description", t.description},
                            {"parameters", wire::schema_or_empty(t.input_schema)}};
            tools.push_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
        }
        body["tools"] = std::move(tools);
    }
    if (request.max_tokens) body[max_tokens_field] = *request.max_tokens;
    return body;
}

core::model_result<core::completion> openai_completion(json::value const& answer, std::string const& provider) {
    auto malformed = [&](std::string detail) {
        return core::model_error{tool_error_kind::malformed, provider, "the answer " + std::move(detail)};
    };
    if (!answer.is_object()) return malformed("is not a JSON object");
    auto const& o = answer.get_object();
    auto const* choices = wire::array_at(o, "choices");
    if (!choices || choices->empty() || !choices->front().is_object()) {
        if (auto const* e = o.if_contains("error"); e && !e->is_null())
            return malformed("carries an error instead of choices: " + json::serialize(*e).substr(0, 500));
        return malformed("has no choices[0]");
    }
    auto const& choice = choices->front().get_object();
    auto const* message = wire::object_at(choice, "message");
    if (!message) return malformed("has no choices[0].message");

    core::completion c;
    c.text = content_text(message->if_contains("content"));
    if (auto const* calls = wire::array_at(*message, "tool_calls")) {
        for (std::size_t i = 0; i < calls->size(); ++i) {
            auto const& item = (*calls)[i];
            auto const* fn = item.is_object() ? wire::object_at(item.get_object(), "function") : nullptr;
            auto name = fn ? wire::string_at(*fn, "name") : std::nullopt;
            if (!name || name->empty())
                return malformed("has choices[0].message.tool_calls[" + std::to_string(i) + "] without function.name");
            core::model_tool_call call;
            // Some servers leave the id out; the result must still name its call.
            call.id = wire::string_at(item.get_object(), "id").value_or("");
            if (call.id.empty()) call.id = "call_" + std::to_string(i);
            call.name = std::move(*name);
            call.arguments = arguments_value(fn->if_contains("arguments"));
            c.tool_calls.push_back(std::move(call));
        }
    } else if (auto const* fc = wire::object_at(*message, "function_call")) {
        auto name = wire::string_at(*fc, "name");
        if (!name || name->empty()) return malformed("has choices[0].message.function_call without a name");
        c.tool_calls.push_back(core::model_tool_call{"call_0", std::move(*name), arguments_value(fc->if_contains("arguments"))});
    }
    c.stop = openai_stop(wire::string_at(choice, "finish_reason"), !c.tool_calls.empty());
    // A model that declines says so in `refusal` instead of `content`; the loop sees it as text
    // that ended the turn for a reason of its own.
    if (auto refusal = wire::string_at(*message, "refusal"); refusal && !refusal->empty() && c.text.empty()) {
        c.text = std::move(*refusal);
        if (c.tool_calls.empty()) c.stop = core::stop_reason::other;
    }
    auto const* usage = wire::object_at(o, "usage");
    c.usage.input_tokens = wire::count_at(usage, "prompt_tokens");
    c.usage.output_tokens = wire::count_at(usage, "completion_tokens");
    c.model = wire::string_at(o, "model").value_or("");
    return c;
}

wire_format openai_wire() {
    wire_format w;
    w.kind = "openai";
    w.path = "/chat/completions";
    w.headers = [](std::string const& key) {
        std::vector<std::pair<std::string, std::string>> h;
        if (!key.empty()) h.emplace_back("Authorization", "Bearer " + key);
        return h;
    };
    w.request_body = [](core::completion_request const& r, provider_settings const& s) {
        return openai_request_body(r, s.model, s.max_tokens_field);
    };
    w.completion = openai_completion;
    return w;
}

}  // namespace airlock::service::providers
