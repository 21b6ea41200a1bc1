#pragma once
// The conversation a run has with its model, and the interface every model provider implements.
// Providers (OpenAI-compatible, Anthropic, scripted) translate these value types to and from their
// wire formats; the agent loop and the journal only ever see these.

#include "core/tool.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace airlock::core {

// One tool call the model asked for. `name` is the wire name (`server__tool`) exactly as the model
// wrote it; resolving it to a grant is the loop's job, byte-for-byte.
struct model_tool_call {
    std::string id;              // the provider's call id; echoed back with the result
    std::string name;
    boost::json::value arguments;  // an object when the model wrote valid JSON, otherwise the raw string
    friend bool operator==(model_tool_call const&, model_tool_call const&) = default;
};

enum class message_role { user, assistant, tool };

struct model_message {
    message_role role = message_role::user;
    std::string text;                          // user/assistant text; a tool message's result text
    std::vector<model_tool_call> tool_calls;   // assistant only
    std::string tool_call_id;                  // tool only: which call this answers
    bool is_error = false;                     // tool only: the call failed or was refused
    friend bool operator==(model_message const&, model_message const&) = default;
};

// A tool as the model is told about it.
struct model_tool {
    std::string name;  // wire name
    std::string description;
    boost::json::value input_schema;  // JSON Schema object
    friend bool operator==(model_tool const&, model_tool const&) = default;
};

struct completion_request {
    std::string model;
    std::string system;  // may be empty
    std::vector<model_message> messages;
    std::vector<model_tool> tools;  // empty for execution kind `completion`
    std::optional<std::uint64_t> max_tokens;
};

struct token_usage {
    std::uint64_t input_tokens = 0;
    std::uint64_t output_tokens = 0;
    friend bool operator==(token_usage const&, token_usage const&) = default;
};

enum class stop_reason { end_turn, tool_use, max_tokens, other };

struct completion {
    std::string text;
    std::vector<model_tool_call> tool_calls;
    token_usage usage;
    stop_reason stop = stop_reason::end_turn;
    std::string model;  // the model the provider says answered
};

// A model call that did not yield a completion is classified like a tool call: `unreachable` and
// `refused` (nothing was billed or done), `timed_out` (in doubt), `tool_failed`/`malformed` (the
// provider answered with an error or with something that does not parse). `tool` names the
// provider, e.g. "model://openai/gpt-4o-mini".
using model_error = tool_error;

template <class T>
using model_result = boost::system::result<T, model_error>;

class model_provider {
public:
    virtual ~model_provider() = default;
    virtual boost::asio::awaitable<model_result<completion>> async_complete(completion_request request) = 0;
    // Where requests are sent, checked against the egress allowlist before anything is sent.
    virtual destination destination_of() const = 0;
    // "openai", "anthropic" or "scripted".
    virtual std::string kind() const = 0;
};

}  // namespace airlock::core
