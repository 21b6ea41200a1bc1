#pragma once
// The conversation types of core/model.hpp as JSON: how a completion and a conversation are written
// to the journal, and read back by replay and recovery. Readers refuse what they cannot read, naming
// the field.

#include "core/error.hpp"
#include "core/model.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string_view>

namespace airlock::core {

std::string_view to_string(message_role r) noexcept;  // "user", "assistant", "tool"
std::string_view to_string(stop_reason s) noexcept;   // "end_turn", "tool_use", "max_tokens", "other"

boost::json::object to_json(model_tool_call const& c);
boost::json::object to_json(model_message const& m);
boost::json::object to_json(token_usage const& u);
// {text, tool_calls:[{id,name,arguments}], usage:{input_tokens,output_tokens}, stop, model}
boost::json::object to_json(completion const& c);

result<model_tool_call> model_tool_call_from_json(boost::json::value const& v);
result<token_usage> token_usage_from_json(boost::json::value const& v);
result<completion> completion_from_json(boost::json::value const& v);

}  // namespace airlock::core
