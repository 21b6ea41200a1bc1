#include "service/agents/providers/anthropic.hpp"

#include "core/canonical_json.hpp"
#include "service/agents/providers/wire_json.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace airlock::service::providers {

namespace json = boost::json;
using core::tool_error_kind;

namespace {

// tool_use.input must be an object. Arguments the model wrote as a string that is not a JSON
// object (only other providers do) go back as what they parse to, or as an empty object.
json::value input_of(json::value const& arguments) {
    if (arguments.is_object()) return arguments;
    if (arguments.is_string()) {
        auto v = core::parse_ijson(arguments.get_string());
        if (v && v->is_object()) return std::move(*v);
    }
    return json::object{};
}

// Messages alternate user/assistant: consecutive turns of one role (tool results followed by a
// user note, say) are merged into one message of content blocks.
void append_turn(json::array& messages, std::string_view role, json::array blocks) {
    if (blocks.empty()) return;
    if (!messages.empty()) {
        auto& last = messages.back().get_object();
        if (last["role"].get_string() == role) {
            auto& content = last["content"].get_array();
            for (auto& b : blocks) content.push_back(std::move(b));
            return;
        }
    }
    messages.push_back(json::object{{"role", role}, {"content", std::move(blocks)}});
}

json::object text_block(std::string const& text) { return json::object{{"type", "text"}, {"text", text}}; }

core::stop_reason anthropic_stop(std::optional<std::string> const& reason, bool has_calls) {
    if (reason == "tool_use" || (has_calls && !reason)) return core::stop_reason::tool_use;
    if (reason == "max_tokens") return core::stop_reason::max_tokens;
    if (!reason || reason == "end_turn" || reason == "stop_sequence") return core::stop_reason::end_turn;
    return core::stop_reason::other;
}

}  // namespace

json::object anthropic_request_body(core::completion_request const& request, std::string const& default_model,
                                    std::uint64_t default_max_tokens) {
    json::array messages;
    for (auto const& m : request.messages) {
        json::array blocks;
        switch (m.role) {
            case core::message_role::user:
                if (!m.text.empty()) blocks.push_back(text_block(m.text));
                append_turn(messages, "user", std::move(blocks));
                break;
            case core::message_role::tool: {
                json::object r{{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.text}};
                if (m.is_error) r["is_error"] = true;
                blocks.push_back(std::move(r));
                append_turn(messages, "user", std::move(blocks));
                break;
            }
            case core::message_role::assistant:
                // Empty text blocks are refused by the API.
                if (!m.text.empty()) blocks.push_back(text_block(m.text));
                for (auto const& c : m.tool_calls)
                    blocks.push_back(
                        json::object{{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", input_of(c.arguments)}});
                append_turn(messages, "assistant", std::move(blocks));
                break;
        }
    }
    json::object body{{"model", request.model.empty() ? default_model : request.model},
                      {"max_tokens", request.max_tokens.value_or(default_max_tokens)},
                      {"messages", std::move(messages)}};
    if (!request.system.empty()) body["system"] = request.system;
    if (!request.tools.empty()) {
        json::array tools;
        for (auto const& t : request.tools) {
            json::object tool{{"name", t.name}, {"input_schema", wire::schema_or_empty(t.input_schema)}};
            if (!t.description.empty()) tool["description"] = t.description;
            tools.push_back(std::move(tool));
        }
        body["tools"] = std::move(tools);
    }
    return body;
}

core::model_result<core::completion> anthropic_completion(json::value const& answer, std::string const& provider) {
    auto malformed = [&](std::string detail) {
        return core::model_error{tool_error_kind::malformed, provider, "the answer " + std::move(detail)};
    };
    if (!answer.is_object()) return malformed("is not a JSON object");
    auto const& o = answer.get_object();
    if (wire::string_at(o, "type") == "error") {
        auto const* e = wire::object_at(o, "error");
        return malformed("is an error: " + (e ? wire::string_at(*e, "message").value_or("") : std::string()));
    }
    auto const* content = wire::array_at(o, "content");
    if (!content) return malformed("has no content array");

    core::completion c;
    for (std::size_t i = 0; i < content->size(); ++i) {
        auto const& item = (*content)[i];
        if (!item.is_object()) return malformed("has content[" + std::to_string(i) + "] that is not an object");
        auto const& block = item.get_object();
        auto type = wire::string_at(block, "type").value_or("");
        if (type == "text") {
            auto text = wire::string_at(block, "text").value_or("");
            if (!c.text.empty() && !text.empty()) c.text += "\n";
            c.text += text;
        } else if (type == "tool_use") {
            auto id = wire::string_at(block, "id");
            auto name = wire::string_at(block, "name");
            if (!id || id->empty() || !name || name->empty())
                return malformed("has content[" + std::to_string(i) + "] (tool_use) without an id or a name");
            auto const* input = block.if_contains("input");
            json::value args = input && !input->is_null() ? *input : json::value(json::object{});
            c.tool_calls.push_back(core::model_tool_call{std::move(*id), std::move(*name), std::move(args)});
        }
        // thinking, redacted_thinking and server-side tool blocks carry nothing the loop acts on.
    }
    c.stop = anthropic_stop(wire::string_at(o, "stop_reason"), !c.tool_calls.empty());
    auto const* usage = wire::object_at(o, "usage");
    // Cached input is input all the same: budgets count every token the model read.
    c.usage.input_tokens = wire::count_at(usage, "input_tokens") + wire::count_at(usage, "cache_creation_input_tokens") +
                           wire::count_at(usage, "cache_read_input_tokens");
    c.usage.output_tokens = wire::count_at(usage, "output_tokens");
    c.model = wire::string_at(o, "model").value_or("");
    return c;
}

wire_format anthropic_wire() {
    wire_format w;
    w.kind = "anthropic";
    w.path = "/v1/messages";
    w.headers = [](std::string const& key) {
        std::vector<std::pair<std::string, std::string>> h;
        if (!key.empty()) h.emplace_back("x-api-key", key);
        h.emplace_back("anthropic-version", std::string(anthropic_version));
        return h;
    };
    w.request_body = [](core::completion_request const& r, provider_settings const& s) {
        return anthropic_request_body(r, s.model, s.max_tokens);
    };
    w.completion = anthropic_completion;
    return w;
}

}  // namespace airlock::service::providers
