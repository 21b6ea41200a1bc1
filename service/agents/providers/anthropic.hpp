#pragma once
// Anthropic Messages (`POST {base_url}/v1/messages`, `x-api-key`, `anthropic-version: 2023-06-01`):
// the system prompt top-level, tools with `input_schema`, the model's `tool_use` blocks, results
// sent back as `tool_result` blocks (with `is_error`) in the next user turn, and usage summed over
// fresh and cached input tokens.

#include "core/model.hpp"
#include "service/agents/providers/http_provider.hpp"

#include <boost/json/object.hpp>

#include <string>

namespace airlock::service::providers {

inline constexpr std::string_view anthropic_version = "2023-06-01";

// The request body for `request`; `default_model` when the request names none, `default_max_tokens`
// when it sets no limit (the API requires one).
boost::json::object anthropic_request_body(core::completion_request const& request, std::string const& default_model,
                                           std::uint64_t default_max_tokens);
// The completion in a Messages answer; malformed (naming what is missing) otherwise.
core::model_result<core::completion> anthropic_completion(boost::json::value const& answer, std::string const& provider);

// Messages at `{base_url}/v1/messages`, the key as `x-api-key`, `anthropic-version` on every request.
wire_format anthropic_wire();

}  // namespace airlock::service::providers
