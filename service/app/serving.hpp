#pragma once
// What `airlock serve` runs on, and what a SIGHUP reload replaces.

#include "mcp/client/client.hpp"
#include "service/agents/runner_factory.hpp"
#include "service/app/tokens.hpp"
#include "service/config/config.hpp"
#include "service/gateway/reloadable_backend.hpp"
#include "store/served_journal.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace airlock::service {

class airlock_metrics;

struct serving {
    boost::asio::io_context& ioc;
    std::optional<std::string> config_file;
    std::optional<std::string> listen_override;
    std::optional<unsigned> threads_override;
    std::shared_ptr<store::served_journal> journal;
    std::string instance;  // the gateway's instance id (service_core::owner)
    std::shared_ptr<reloadable_backend> backend;
    std::shared_ptr<token_table> tokens;
    std::shared_ptr<airlock_metrics> metrics;
    std::shared_ptr<runner_tools> run_tools;
    std::chrono::milliseconds drain_grace{};

    std::mutex mutex;
    config current;                                          // the configuration in force
    std::vector<std::shared_ptr<mcp::mcp_client>> clients;  // clients[i] serves current.upstreams[i]
    std::vector<std::shared_ptr<mcp::mcp_client>> retiring;  // replaced by a reload, closed after drain_grace
    bool reloading = false;
    bool reload_again = false;

    explicit serving(boost::asio::io_context& i) : ioc(i) {}

    // Every client with an upstream that may still run: those in use and those being retired.
    std::vector<std::shared_ptr<mcp::mcp_client>> all_clients() {
        std::lock_guard lock(mutex);
        auto all = clients;
        all.insert(all.end(), retiring.begin(), retiring.end());
        return all;
    }
};

}  // namespace airlock::service
