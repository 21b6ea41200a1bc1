#pragma once
// A model provider reached over HTTP: one JSON POST per completion through the provider HTTP
// client, in the wire format of its API (openai.hpp, anthropic.hpp).

#include "core/model.hpp"
#include "service/agents/providers/http_client.hpp"
#include "service/agents/providers/settings.hpp"

#include <boost/json/object.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace airlock::service::providers {

// What tells one API from another: where it is posted, how the key is sent, and the two
// translations between the conversation types and its JSON.
struct wire_format {
    std::string kind;  // "openai", "anthropic"
    std::string path;  // appended to base_url
    // The headers that carry the key (and any fixed ones the API requires); `api_key` may be empty.
    std::function<std::vector<std::pair<std::string, std::string>>(std::string const& api_key)> headers;
    std::function<boost::json::object(core::completion_request const&, provider_settings const&)> request_body;
    // `provider` fills a malformed error's `tool`.
    std::function<core::model_result<core::completion>(boost::json::value const&, std::string const& provider)> completion;
};

class http_provider final : public core::model_provider {
public:
    http_provider(boost::asio::any_io_executor exec, provider_settings settings, wire_format wire);

    boost::asio::awaitable<core::model_result<core::completion>> async_complete(core::completion_request request) override;
    core::destination destination_of() const override;
    std::string kind() const override { return wire_.kind; }

private:
    provider_settings settings_;
    wire_format wire_;
    std::string label_;  // model://KIND/NAME
    std::unique_ptr<http_client> http_;
};

}  // namespace airlock::service::providers
