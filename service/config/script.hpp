#pragma once
// A script of turns for the scripted model provider, as the config reads it from a YAML (or JSON)
// file. The provider that plays it is service/agents/providers/scripted; the file format is
// documented in docs/scripted-provider.md.

#include "core/error.hpp"
#include "core/model.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

// Scripts are small; a bound keeps a mistaken path (a log file, a binary) from being read whole.
inline constexpr std::size_t max_script_bytes = 4 * 1024 * 1024;

// One scripted turn: text, tool calls, or a failure of the model call itself.
struct scripted_turn {
    std::string say;
    std::vector<core::model_tool_call> calls;  // an empty id is filled in as call_<turn>_<n>
    std::optional<core::token_usage> usage;    // absent: estimated from the text sizes
    std::optional<core::model_error> failure;  // the call fails with this instead
};

enum class after_last_turn { fail, repeat };

struct script {
    std::string model = "scripted";  // the model the completions say answered
    std::vector<scripted_turn> turns;
    after_last_turn after_last = after_last_turn::fail;
};

// Parses a script; errors name the field ("turns[1].call.tool"). `source` names the file in messages.
core::result<script> parse_script(std::string_view text, std::string_view source = "the script");

}  // namespace airlock::service
