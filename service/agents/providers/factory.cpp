#include "service/agents/providers/factory.hpp"

#include "service/agents/providers/anthropic.hpp"
#include "service/agents/providers/openai.hpp"
#include "service/agents/providers/scripted.hpp"

namespace airlock::service::providers {

core::result<std::shared_ptr<core::model_provider>> make_provider(boost::asio::any_io_executor exec,
                                                                  provider_config const& pc,
                                                                  core::egress_allowlist const& egress) {
    if (pc.kind == provider_kind::scripted) {
        auto loaded = scripted_provider::load(pc.script.value_or(""));
        if (!loaded) return core::make_error(loaded.error().code, "providers." + pc.name + ": " + loaded.error().message);
        std::shared_ptr<core::model_provider> p = *loaded;
        return p;
    }
    provider_settings s;
    s.name = pc.name;
    s.model = pc.model;
    s.api_key = pc.api_key;
    s.headers = pc.headers;
    s.max_tokens = pc.max_tokens;
    s.max_tokens_field = pc.max_tokens_field;
    s.http.base_url = pc.base_url;
    s.http.verify_peer = pc.verify_peer;
    s.http.ca_file = pc.ca_file;
    s.http.deadline = pc.deadline;
    s.http.connect_timeout = std::min(s.http.connect_timeout, pc.deadline);
    s.http.max_retries = pc.max_retries;
    s.http.max_retry_wait = pc.max_retry_wait;
    s.http.max_connections = pc.max_connections;
    s.http.pool_size = pc.max_connections;
    s.http.egress = egress;
    auto wire = pc.kind == provider_kind::anthropic ? anthropic_wire() : openai_wire();
    std::shared_ptr<core::model_provider> p = std::make_shared<http_provider>(std::move(exec), std::move(s), std::move(wire));
    return p;
}

}  // namespace airlock::service::providers
