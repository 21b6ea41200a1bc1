#include "service/agents/providers/scripted.hpp"

#include "core/canonical_json.hpp"
#include "core/strict_yaml.hpp"

#include <boost/json/serialize.hpp>

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

namespace airlock::service {

namespace json = boost::json;
using core::yaml::index_path;

namespace {

std::uint64_t estimate_tokens(std::size_t chars) { return chars / 4 + 1; }

}  // namespace

core::result<std::shared_ptr<scripted_provider>> scripted_provider::load(std::filesystem::path const& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return core::make_error("unreadable", "cannot read the script " + file.string());
    std::string text;
    text.resize(max_script_bytes + 1);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_script_bytes)
        return core::make_error("too_large", "the script " + file.string() + " is larger than 4 MiB");
    auto s = parse_script(text, file.string());
    if (!s) return s.error();
    return std::make_shared<scripted_provider>(std::move(*s));
}

boost::asio::awaitable<core::model_result<core::completion>> scripted_provider::async_complete(
    core::completion_request request) {
    ++calls_;
    std::size_t turn = 0;
    std::size_t chars = request.system.size();
    for (auto const& m : request.messages) {
        if (m.role == core::message_role::assistant) ++turn;
        chars += m.text.size();
    }
    auto const tool = "model://scripted/" + script_.model;
    auto const turn_asked = turn;
    if (turn >= script_.turns.size()) {
        if (script_.after_last == after_last_turn::fail)
            co_return core::model_error{core::tool_error_kind::tool_failed, tool,
                                        "the script has " + std::to_string(script_.turns.size()) +
                                            " turns and turn " + std::to_string(turn + 1) + " was asked for"};
        turn = script_.turns.size() - 1;
    }
    auto const& t = script_.turns[turn];
    if (t.failure) {
        auto e = *t.failure;
        e.tool = tool;
        co_return e;
    }
    core::completion c;
    c.text = t.say;
    c.tool_calls = t.calls;
    // Unnamed calls get ids from the turn actually played, so a repeated turn's calls stay distinct.
    for (std::size_t i = 0; i < c.tool_calls.size(); ++i)
        if (c.tool_calls[i].id.empty()) c.tool_calls[i].id = "call_" + std::to_string(turn_asked + 1) + "_" + std::to_string(i + 1);
    c.model = script_.model;
    c.stop = t.calls.empty() ? core::stop_reason::end_turn : core::stop_reason::tool_use;
    std::size_t out_chars = t.say.size();
    for (auto const& call : t.calls) out_chars += call.name.size() + json::serialize(call.arguments).size();
    c.usage = t.usage.value_or(core::token_usage{estimate_tokens(chars), estimate_tokens(out_chars)});
    co_return c;
}

}  // namespace airlock::service
