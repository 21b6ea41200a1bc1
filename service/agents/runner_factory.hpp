#pragma once
// The runner a configuration describes: each configured agent with its model provider, every tool
// call routed by the ToolRouter (egress allowlist checked per tool) to the upstream clients the
// gateway uses too, and the schemas a model is shown read from those upstreams.

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/model.hpp"
#include "mcp/client/client.hpp"
#include "service/config/config.hpp"
#include "service/ops/metrics.hpp"
#include "service/agents/runner.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

namespace airlock::service {

// The tools a runner calls: a ToolRouter over the upstream clients, replaced whole when a reload
// changes the upstreams. A call already under way finishes on the client it started with; the next
// one goes through the new router. The schemas shown to a model are read from the same clients.
class runner_tools final : public core::tool_client {
public:
    // Refuses two upstreams with the same server name.
    static core::result<std::shared_ptr<runner_tools>> make(core::egress_allowlist egress,
                                                            std::vector<std::shared_ptr<mcp::mcp_client>> const& upstreams);
    core::result<void> replace(core::egress_allowlist egress, std::vector<std::shared_ptr<mcp::mcp_client>> const& upstreams);

    boost::asio::awaitable<core::tool_result<boost::json::value>> async_call(
        core::tool_id tool, boost::json::value arguments, std::optional<core::provenance> prov) override;
    core::destination destination_of(core::tool_id const& tool) const override;
    // Every call is counted in airlock_tool_calls_total and its latency histogram, like the gateway's.
    void count_calls_in(std::shared_ptr<airlock_metrics> metrics) { metrics_ = std::move(metrics); }
    // The schema of every tool the manifest grants that its upstream lists.
    boost::asio::awaitable<std::vector<core::model_tool>> async_catalogue(core::manifest m) const;

    struct routes;

private:
    runner_tools() = default;
    std::shared_ptr<routes const> current() const;
    mutable std::mutex mutex_;
    std::shared_ptr<routes const> routes_;
    std::shared_ptr<airlock_metrics> metrics_;
};

struct runner_parts {
    boost::asio::any_io_executor executor;
    std::shared_ptr<core::journal_store> journal;
    std::vector<std::shared_ptr<mcp::mcp_client>> upstreams;  // routed by their server names
    // Providers by name (the providers section); an agent's `script` makes its own scripted one.
    std::map<std::string, std::shared_ptr<core::model_provider>> providers;
    // The tools the runner calls; when absent, made from `upstreams` (and never replaced).
    std::shared_ptr<runner_tools> tools;
};

// Refuses an agent whose provider is not among `parts.providers`, naming the agent.
core::result<std::shared_ptr<runner>> make_runner(config const& c, runner_parts parts);

}  // namespace airlock::service
