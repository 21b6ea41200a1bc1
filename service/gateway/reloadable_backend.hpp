#pragma once
// The MCP backend `airlock serve` hands its endpoint: it forwards to the current gateway, and a
// SIGHUP reload swaps in a new one without touching connections or sessions. Requests in flight
// finish on the gateway they started on; open notification streams move to the new one.

#include "service/gateway/gateway.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace airlock::service {

class reloadable_backend final : public mcp::server_backend {
public:
    explicit reloadable_backend(std::shared_ptr<gateway> initial);

    std::shared_ptr<gateway> current() const;
    // From now on `next` serves new requests and every open notification stream; returns the
    // gateway it replaces, whose runs are sealed once their calls end (kept until they are).
    // Once stopping, `next` admits no run either.
    std::shared_ptr<gateway> replace(std::shared_ptr<gateway> next);
    // Stopping: every gateway, current and retired, seals its runs and admits no new one (see
    // gateway::close_all_runs); so does any gateway a reload still under way puts in place.
    void close_all_runs();
    boost::asio::awaitable<void> async_runs_closed(std::chrono::milliseconds limit);
    // The principals with at least one open notification stream.
    std::vector<std::string> listening_principals() const;
    // Sends `n` to every open notification stream of `principal`; returns how many there were.
    std::size_t notify(std::string const& principal, mcp::notification const& n);

    mcp::implementation server_info() const override;
    boost::json::object server_capabilities(std::string const& principal) const override;
    std::optional<std::string> instructions(std::string const& principal) const override;
    boost::asio::awaitable<mcp::handler_result> async_handle(mcp::request req, mcp::request_context& ctx) override;
    boost::asio::awaitable<void> async_notification(mcp::notification n, mcp::request_context& ctx) override;
    void session_closed(std::string const& session_id) override;
    std::uint64_t add_listener(std::string const& principal, notification_sink sink) override;
    std::uint64_t add_session_listener(std::string const& principal, std::string const& session_id,
                                       notification_sink sink) override;
    void remove_listener(std::uint64_t id) override;

private:
    struct listener {
        std::string principal;
        std::string session_id;  // a legacy session's stream; empty for others
        notification_sink sink;
        std::uint64_t inner = 0;  // its id at the current gateway
    };

    mutable std::mutex mutex_;
    std::shared_ptr<gateway> current_;
    std::vector<std::shared_ptr<gateway>> retired_;
    bool stopping_ = false;
    std::map<std::uint64_t, listener> listeners_;
    std::uint64_t next_id_ = 0;

    std::uint64_t register_with(gateway& g, listener const& l);
    std::vector<std::shared_ptr<gateway>> all_gateways() const;
};

}  // namespace airlock::service
