#pragma once
// A tool client for tests that tells observe() of every call, then passes it to the real client:
// the base of the tests' decorators that count or record what reaches the tools.

#include "core/tool.hpp"

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <optional>

namespace airlock::testing {

class observing_client : public core::tool_client {
public:
    explicit observing_client(std::shared_ptr<core::tool_client> inner) : inner_(std::move(inner)) {}

    boost::asio::awaitable<core::tool_result<boost::json::value>> async_call(
        core::tool_id tool, boost::json::value arguments, std::optional<core::provenance> prov) final {
        observe(tool, prov);
        co_return co_await inner_->async_call(std::move(tool), std::move(arguments), std::move(prov));
    }
    core::destination destination_of(core::tool_id const& tool) const final { return inner_->destination_of(tool); }

protected:
    virtual void observe(core::tool_id const& tool, std::optional<core::provenance> const& prov) = 0;

private:
    std::shared_ptr<core::tool_client> inner_;
};

}  // namespace airlock::testing
