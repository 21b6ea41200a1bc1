#pragma once
// What every HTTP model provider is built from: its configured name, the model it asks for when a
// request names none, its API key and the HTTP client settings.

#include "service/agents/providers/http_client.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace airlock::service::providers {

struct provider_settings {
    std::string name;     // the key under `providers:` in the configuration
    std::string model;    // used when a completion_request leaves `model` empty
    std::string api_key;  // SECRET: sent in a header only; empty for servers that need none
    // More headers on every request; their values are scrubbed from errors like the key.
    std::vector<std::pair<std::string, std::string>> headers;
    // Anthropic requires max_tokens on every request; OpenAI-compatible servers get it only when
    // the request sets one.
    std::uint64_t max_tokens = 4096;
    // openai: the request field a run's token limit goes in. OpenAI's own API wants
    // "max_completion_tokens" (its reasoning models refuse "max_tokens"); most compatible servers
    // know only "max_tokens".
    std::string max_tokens_field = "max_tokens";
    http_client_options http;  // provider, headers and egress are filled in by the provider
};

}  // namespace airlock::service::providers
