#pragma once
// The runner a configuration describes: each configured agent with its model provider, every tool
// call routed by the ToolRouter (egress allowlist checked per tool) to the upstream clients the
// gateway uses too, and the schemas a model is shown read from those upstreams.

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/model.hpp"
#include "mcp/client.hpp"
#include "service/config.hpp"
#include "service/runner.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace airlock::service {

struct runner_parts {
    boost::asio::any_io_executor executor;
    std::shared_ptr<core::journal_store> journal;
    std::vector<std::shared_ptr<mcp::mcp_client>> upstreams;  // routed by their server names
    // Providers by name (the providers section); an agent's `script` makes its own scripted one.
    std::map<std::string, std::shared_ptr<core::model_provider>> providers;
};

// Refuses an agent whose provider is not among `parts.providers`, naming the agent.
core::result<std::shared_ptr<runner>> make_runner(config const& c, runner_parts parts);

}  // namespace airlock::service
