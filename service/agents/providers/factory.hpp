#pragma once
// The model provider a `providers:` entry of the configuration describes.

#include "core/model.hpp"
#include "core/policy.hpp"
#include "service/config/config.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>

namespace airlock::service::providers {

// openai and anthropic entries get an HTTP provider whose every request is checked against
// `egress` before anything is sent; scripted entries play their script. Fails naming the entry
// when it cannot be built.
core::result<std::shared_ptr<core::model_provider>> make_provider(boost::asio::any_io_executor exec,
                                                                  provider_config const& pc,
                                                                  core::egress_allowlist const& egress);

}  // namespace airlock::service::providers
