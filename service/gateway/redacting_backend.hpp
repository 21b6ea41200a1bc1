#pragma once
// The backend an endpoint is given: another backend with every configured secret hidden
// (core/secrets.hpp) in all it sends towards a client — results and errors of requests,
// notifications on a request's stream and on listening streams, requests to the client (sampling,
// elicitation), instructions. Both endpoints, Streamable HTTP and stdio, serve through it, so a
// value an upstream echoes (in text or structured content, a success or an isError result, an
// error message, a log notification) reaches no client, whatever part of the gateway relayed it.

#include "mcp/server/backend.hpp"

#include <memory>

namespace airlock::service {

class redacting_backend final : public mcp::server_backend {
public:
    explicit redacting_backend(std::shared_ptr<mcp::server_backend> inner);

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
    std::shared_ptr<mcp::server_backend> inner_;
};

// Hides every secret in a message bound for a client.
void redact_secrets(mcp::notification& n);
void redact_secrets(mcp::handler_result& r);

}  // namespace airlock::service
