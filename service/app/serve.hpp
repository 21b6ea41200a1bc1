#pragma once
// `airlock serve` (the HTTP service) and `airlock stdio` (one MCP client on stdin/stdout), and the
// parts of them the other commands that drive agents (`airlock replay`, `airlock run`) share.

#include "core/error.hpp"
#include "mcp/client/client.hpp"
#include "service/config/config.hpp"
#include "service/gateway/gateway.hpp"
#include "service/app/interrupted_sessions.hpp"
#include "service/agents/runner.hpp"
#include "service/agents/runner_factory.hpp"
#include "store/lmdb_store.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace airlock::service {

class airlock_metrics;

// Runs until SIGINT/SIGTERM; returns the process exit code.
int run_serve(std::vector<std::string> const& args);
// `airlock replay --config FILE RUN`: strict replay of one run; exit 1 on divergence.
int run_replay(std::vector<std::string> const& args);
// Serves one MCP client on stdin/stdout until end of input or SIGTERM/SIGINT; logs go to stderr only.
int run_stdio(std::vector<std::string> const& args);

// The configuration as `serve` starts from it: the file's (with the signing key and tokens it asks
// to be created made now), or the embedded defaults when there is no file.
core::result<config> load_serving_config(std::optional<std::string> const& file);

// The flags that override the configuration's logging section.
struct log_flags {
    std::optional<log_format> format;
    std::optional<log_level> level;
};
// The configuration's logging with the flags on top, installed before anything is logged; every
// secret the configuration holds is redacted from then on.
void apply_logging(config const& c, log_flags const& flags);

// Everything that serves MCP and runs agents, built from a configuration: journal, upstream
// clients, gateway, runner. Nothing is started: upstream clients connect on first use.
struct service_core {
    std::shared_ptr<store::lmdb_store> journal;
    std::vector<std::shared_ptr<mcp::mcp_client>> clients;  // clients[i] serves config.upstreams[i]
    std::shared_ptr<gateway> gw;
    std::shared_ptr<runner> runs;  // the configured agents (REST /v1/runs, airlock replay, airlock run)
    std::shared_ptr<runner_tools> run_tools;  // what the runner's tool calls go through; a reload replaces it
    // Held while the process lives: tells other airlocks on the journal that this one's session runs
    // are not interrupted (service/app/interrupted_sessions.hpp).
    std::shared_ptr<instance_lock> owner;
};
// Seals the session runs of airlock processes that ended without closing them, and quarantines runs
// whose records cannot be read; then sweeps the lock files of processes that are gone. Run at start,
// before agent runs are resumed.
boost::asio::awaitable<void> async_close_interrupted_runs(std::shared_ptr<core::journal_store> journal,
                                                          std::shared_ptr<instance_lock> owner);
core::result<service_core> build_core(config const& c, boost::asio::any_io_executor exec,
                                      std::shared_ptr<airlock_metrics> metrics = nullptr);

// Closes upstream clients all at once, each in the spec's order (a stdio child: close stdin, wait,
// SIGTERM, wait, SIGKILL); completes when every one is closed and its child reaped. Every command
// that started upstreams ends with this, so none leaves a child running.
boost::asio::awaitable<void> async_close_upstreams(std::vector<std::shared_ptr<mcp::mcp_client>> clients);

}  // namespace airlock::service
