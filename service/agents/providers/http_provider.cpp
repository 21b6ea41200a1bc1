#include "service/agents/providers/http_provider.hpp"

namespace airlock::service::providers {

http_provider::http_provider(boost::asio::any_io_executor exec, provider_settings settings, wire_format wire)
    : settings_(std::move(settings)), wire_(std::move(wire)), label_("model://" + wire_.kind + "/" + settings_.name) {
    auto http = settings_.http;
    http.provider = label_;
    for (auto& h : wire_.headers(settings_.api_key)) http.headers.push_back(std::move(h));
    if (!settings_.api_key.empty()) http.secrets.push_back(settings_.api_key);
    for (auto const& [name, value] : settings_.headers) {
        http.headers.emplace_back(name, value);
        // Values shorter than core::secret_set::min_bytes (a tenant letter, a version) are ignored.
        http.secrets.push_back(value);
    }
    http_ = std::make_unique<http_client>(std::move(exec), std::move(http));
}

boost::asio::awaitable<core::model_result<core::completion>> http_provider::async_complete(core::completion_request request) {
    boost::json::value body = wire_.request_body(request, settings_);
    std::string path = wire_.path;
    auto answer = co_await http_->async_post_json(std::move(path), std::move(body));
    if (!answer) co_return answer.error();
    auto c = wire_.completion(*answer, label_);
    // Some servers do not say which model answered; the one asked for did.
    if (c && c->model.empty()) c->model = request.model.empty() ? settings_.model : request.model;
    co_return c;
}

core::destination http_provider::destination_of() const { return http_->destination(); }

}  // namespace airlock::service::providers
