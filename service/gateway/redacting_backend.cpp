#include "service/gateway/redacting_backend.hpp"

#include "core/secrets.hpp"

namespace airlock::service {

namespace asio = boost::asio;

void redact_secrets(mcp::notification& n) {
    if (n.params) core::secrets::redact(*n.params);
}

void redact_secrets(mcp::handler_result& r) {
    if (core::secrets::current()->empty()) return;
    if (r) {
        core::secrets::redact(*r);
        return;
    }
    // result<> hands out its error by value: redact a copy and put it back.
    auto e = r.error();
    core::secrets::redact(e.message);
    if (e.data) core::secrets::redact(*e.data);
    r = mcp::handler_result(boost::system::in_place_error, std::move(e));
}

redacting_backend::redacting_backend(std::shared_ptr<mcp::server_backend> inner) : inner_(std::move(inner)) {}

mcp::implementation redacting_backend::server_info() const { return inner_->server_info(); }

boost::json::object redacting_backend::server_capabilities(std::string const& principal) const {
    return inner_->server_capabilities(principal);
}

std::optional<std::string> redacting_backend::instructions(std::string const& principal) const {
    // Upstreams' instructions may be merged into these.
    auto text = inner_->instructions(principal);
    if (text) core::secrets::redact(*text);
    return text;
}

asio::awaitable<mcp::handler_result> redacting_backend::async_handle(mcp::request req, mcp::request_context& ctx) {
    // What the backend sends the client while it serves the request goes through the same filter.
    // The context's functions are replaced in place: the endpoint's own use of them is redacted too.
    if (ctx.notify) {
        ctx.notify = [send = std::move(ctx.notify)](mcp::notification n) {
            redact_secrets(n);
            return send(std::move(n));
        };
    }
    if (ctx.ask_client) {
        ctx.ask_client = [ask = std::move(ctx.ask_client)](std::string method, boost::json::object params) {
            core::secrets::redact(params);
            return ask(std::move(method), std::move(params));
        };
    }
    auto r = co_await inner_->async_handle(std::move(req), ctx);
    redact_secrets(r);
    co_return r;
}

asio::awaitable<void> redacting_backend::async_notification(mcp::notification n, mcp::request_context& ctx) {
    co_await inner_->async_notification(std::move(n), ctx);
}

void redacting_backend::session_closed(std::string const& session_id) { inner_->session_closed(session_id); }

namespace {

mcp::server_backend::notification_sink redacting(mcp::server_backend::notification_sink sink) {
    return [sink = std::move(sink)](mcp::notification const& n) {
        if (core::secrets::current()->empty()) return sink(n);
        auto copy = n;
        redact_secrets(copy);
        sink(copy);
    };
}

}  // namespace

std::uint64_t redacting_backend::add_listener(std::string const& principal, notification_sink sink) {
    return inner_->add_listener(principal, redacting(std::move(sink)));
}

std::uint64_t redacting_backend::add_session_listener(std::string const& principal, std::string const& session_id,
                                                      notification_sink sink) {
    return inner_->add_session_listener(principal, session_id, redacting(std::move(sink)));
}

void redacting_backend::remove_listener(std::uint64_t id) { inner_->remove_listener(id); }

}  // namespace airlock::service
