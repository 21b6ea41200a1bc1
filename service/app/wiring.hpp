#pragma once
// The composition root: from a configuration, the parts that serve MCP and run agents (journal,
// upstream clients, gateway, runner), and how they are closed. Every command that drives upstreams
// or agents (`serve`, `stdio`, `replay`, `run`) builds them here.

#include "core/error.hpp"
#include "mcp/client/client.hpp"
#include "service/agents/runner.hpp"
#include "service/agents/runner_factory.hpp"
#include "service/app/interrupted_sessions.hpp"
#include "service/config/config.hpp"
#include "service/gateway/gateway.hpp"
#include "store/lmdb_store.hpp"
#include "store/served_journal.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace airlock::service {

class airlock_metrics;

// The configuration as `serve` starts from it: the file's (with the signing key and tokens it asks
// to be created made now), or the embedded defaults when there is no file.
core::result<config> load_serving_config(std::optional<std::string> const& file);

// `--listen HOST:PORT` (an IPv6 host in brackets) onto `s`, in place of a unix socket; false when
// `text` is not HOST:PORT.
bool parse_listen(std::string const& text, server_config& s);

// The flags that override the configuration's logging section.
struct log_flags {
    std::optional<log_format> format;
    std::optional<log_level> level;
};
// Parses --log-format / --log-level at args[i] (advancing i) for `airlock COMMAND`; nullopt when
// args[i] is neither, false after printing the problem.
std::optional<bool> parse_log_flag(std::vector<std::string> const& args, std::size_t& i, log_flags& out,
                                   char const* command);
// The configuration's logging with the flags on top, installed before anything is logged; every
// secret the configuration holds is redacted from then on.
void apply_logging(config const& c, log_flags const& flags);

// Everything that serves MCP and runs agents, built from a configuration: journal, upstream
// clients, gateway, runner. Nothing is started: upstream clients connect on first use.
struct service_core {
    std::shared_ptr<store::served_journal> journal;  // LMDB's (journal.dir) or PostgreSQL's (journal.postgres)
    std::shared_ptr<store::lmdb_store> lmdb;         // the same journal when it is LMDB's, for what only it has: retention
    std::vector<std::shared_ptr<mcp::mcp_client>> clients;  // clients[i] serves config.upstreams[i]
    std::shared_ptr<gateway> gw;
    std::shared_ptr<runner> runs;  // the configured agents (REST /v1/runs, airlock replay, airlock run)
    std::shared_ptr<runner_tools> run_tools;  // what the runner's tool calls go through; a reload replaces it
    // Held while the process lives: tells other airlocks on the journal that this one's session runs
    // are not interrupted (service/app/interrupted_sessions.hpp).
    std::shared_ptr<instance_lock> owner;
};
core::result<service_core> build_core(config const& c, boost::asio::any_io_executor exec,
                                      std::shared_ptr<airlock_metrics> metrics = nullptr);

// The client of one upstream; an HTTP one connects only to addresses `egress` permits.
std::shared_ptr<mcp::mcp_client> make_upstream_client(upstream_config const& u, core::egress_allowlist const& egress,
                                                      boost::asio::any_io_executor exec);
// The gateway of a configuration over a journal and the upstreams' clients (clients[i] serves c.upstreams[i]).
core::result<std::shared_ptr<gateway>> make_gateway(config const& c, boost::asio::any_io_executor exec,
                                                    std::shared_ptr<store::served_journal> const& journal,
                                                    std::vector<std::shared_ptr<mcp::mcp_client>> const& clients,
                                                    std::shared_ptr<airlock_metrics> metrics, std::string instance);

// Seals the session runs of airlock processes that ended without closing them, and quarantines runs
// whose records cannot be read; then sweeps the lock files of processes that are gone. Run at start,
// before agent runs are resumed.
boost::asio::awaitable<void> async_close_interrupted_runs(std::shared_ptr<core::journal_store> journal,
                                                          std::shared_ptr<instance_lock> owner);

// Closes upstream clients all at once, each in the spec's order (a stdio child: close stdin, wait,
// SIGTERM, wait, SIGKILL); completes when every one is closed and its child reaped. Every command
// that started upstreams ends with this, so none leaves a child running.
boost::asio::awaitable<void> async_close_upstreams(std::vector<std::shared_ptr<mcp::mcp_client>> clients);

}  // namespace airlock::service
