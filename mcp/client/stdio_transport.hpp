#pragma once
// The stdio transport: one upstream MCP server run as a child process, spoken to with
// newline-delimited JSON-RPC over its stdin/stdout, its stderr copied into airlock's log.
// The child sees only the environment configured for it (plus PATH), is restarted with backoff
// when it dies, and is shut down in the spec's order: close stdin, wait, SIGTERM, wait, SIGKILL.

#include "mcp/client/transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace airlock::mcp {

struct stdio_options {
    std::string server_name;                  // tags every log line about this child
    std::vector<std::string> argv;            // argv[0] is looked up in PATH when it has no '/'
    std::map<std::string, std::string> env;   // the child's whole environment, plus PATH
    std::optional<std::string> cwd;           // working directory of the child; airlock's when absent
    // A longer stdout line is skipped, and the call it answers fails at once (when it can be told).
    std::size_t max_message_bytes = 4 * 1024 * 1024;
    std::chrono::milliseconds stdin_close_grace{2'000};      // shutdown: wait after closing stdin
    std::chrono::milliseconds sigterm_grace{2'000};          // shutdown: wait after SIGTERM, then SIGKILL
    std::chrono::milliseconds restart_backoff_initial{250};  // first wait before restarting a dead child
    std::chrono::milliseconds restart_backoff_max{30'000};   // the doubling stops here
    std::chrono::milliseconds write_deadline{10'000};        // async_notify fails when not written by then
};

// All state lives on one strand of `exec`; the operations may be awaited from any executor, and
// concurrently. After async_close the transport stays closed: every operation fails not_sent.
class stdio_transport final : public transport {
public:
    stdio_transport(boost::asio::any_io_executor exec, stdio_options opts);
    // Kills (SIGKILL) and reaps a child still running when async_close was never awaited. Destroy
    // the transport before its io_context: the descriptors are closed on the strand afterwards.
    ~stdio_transport() override;
    stdio_transport(stdio_transport const&) = delete;
    stdio_transport& operator=(stdio_transport const&) = delete;

    boost::asio::awaitable<transport_result<void>> async_open() override;
    boost::asio::awaitable<transport_result<message>> async_request(request req, request_options opts) override;
    boost::asio::awaitable<transport_result<void>> async_notify(notification n) override;
    boost::asio::awaitable<void> async_close() override;

    void set_protocol_version(std::string version) override;  // kept; stdio carries no headers
    // Handlers (and request_options::on_notification) run on the transport's strand; they must not block.
    void set_notification_handler(std::function<void(notification const&)> handler) override;
    void set_server_request_handler(server_request_handler handler) override;

    core::destination destination() const override;  // process{argv[0] as configured}
    std::uint64_t losses() const override;             // children that exited or were given up

    // The running child's process id, if one is running (for tests and diagnostics).
    std::optional<int> pid() const;

    struct state;  // shared with the coroutines that outlive a call (reader, writer, reaper)

private:
    std::shared_ptr<state> state_;
};

}  // namespace airlock::mcp
