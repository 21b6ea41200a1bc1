#pragma once
// OpenAI-compatible Chat Completions (`POST {base_url}/chat/completions`): OpenAI, vLLM, Ollama,
// llama.cpp server, LM Studio. Tools go out as `tools: [{type: function, function: {...}}]`; the
// model's `tool_calls` come back with JSON-string arguments; results go back as `role: tool`
// messages. Tolerates what those servers vary in: usage missing, arguments already an object or
// empty, content null or a list of parts beside tool calls, a call without an id, the legacy
// single `function_call`.

#include "core/model.hpp"
#include "service/agents/providers/http_provider.hpp"

#include <boost/json/object.hpp>

#include <string>

namespace airlock::service::providers {

// The request body for `request`; `default_model` when the request names none, a token limit in
// the field `max_tokens_field`.
boost::json::object openai_request_body(core::completion_request const& request, std::string const& default_model,
                                        std::string const& max_tokens_field = "max_tokens");
// The completion in a Chat Completions answer; malformed (naming what is missing) otherwise.
// `provider` fills the error's `tool`.
core::model_result<core::completion> openai_completion(boost::json::value const& answer, std::string const& provider);

// Chat Completions at `{base_url}/chat/completions`; the key, when set, as `Authorization: Bearer KEY`.
wire_format openai_wire();

}  // namespace airlock::service::providers
