#include "service/gateway/reloadable_backend.hpp"

#include <algorithm>

namespace airlock::service {

namespace asio = boost::asio;

reloadable_backend::reloadable_backend(std::shared_ptr<gateway> initial) : current_(std::move(initial)) {}

std::shared_ptr<gateway> reloadable_backend::current() const {
    std::lock_guard lock(mutex_);
    return current_;
}

std::shared_ptr<gateway> reloadable_backend::replace(std::shared_ptr<gateway> next) {
    std::lock_guard lock(mutex_);
    // A reload that ends after the stop began must not bring in a gateway that admits runs: they
    // would be left running.
    if (stopping_) next->close_all_runs();
    auto previous = std::exchange(current_, std::move(next));
    for (auto& [id, l] : listeners_) {
        previous->remove_listener(l.inner);
        l.inner = register_with(*current_, l);
    }
    // Its runs were admitted under the grants it served: they are sealed (once their calls end), and
    // the next call of each session or principal begins a run under the new configuration.
    previous->close_all_runs("configuration reloaded; the next call begins a new run", "reloaded");
    // Kept until its runs are sealed, so that stopping still waits for them.
    std::erase_if(retired_, [](auto const& g) { return g->runs_settled(); });
    retired_.push_back(previous);
    return previous;
}

std::vector<std::string> reloadable_backend::listening_principals() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (auto const& [id, l] : listeners_)
        if (std::find(out.begin(), out.end(), l.principal) == out.end()) out.push_back(l.principal);
    return out;
}

std::size_t reloadable_backend::notify(std::string const& principal, mcp::notification const& n) {
    std::vector<notification_sink> sinks;
    {
        std::lock_guard lock(mutex_);
        for (auto const& [id, l] : listeners_)
            if (l.principal == principal) sinks.push_back(l.sink);
    }
    for (auto const& s : sinks) s(n);
    return sinks.size();
}

mcp::implementation reloadable_backend::server_info() const { return current()->server_info(); }

boost::json::object reloadable_backend::server_capabilities(std::string const& principal) const {
    return current()->server_capabilities(principal);
}

std::optional<std::string> reloadable_backend::instructions(std::string const& principal) const {
    return current()->instructions(principal);
}

asio::awaitable<mcp::handler_result> reloadable_backend::async_handle(mcp::request req, mcp::request_context& ctx) {
    // The gateway stays alive for this request even if a reload replaces it meanwhile.
    auto g = current();
    co_return co_await g->async_handle(std::move(req), ctx);
}

asio::awaitable<void> reloadable_backend::async_notification(mcp::notification n, mcp::request_context& ctx) {
    auto g = current();
    co_await g->async_notification(std::move(n), ctx);
}

std::vector<std::shared_ptr<gateway>> reloadable_backend::all_gateways() const {
    std::lock_guard lock(mutex_);
    auto all = retired_;
    all.push_back(current_);
    return all;
}

void reloadable_backend::session_closed(std::string const& session_id) {
    // Each gateway seals the run it admitted for the session, if any.
    for (auto const& g : all_gateways()) g->session_closed(session_id);
}

void reloadable_backend::close_all_runs() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    for (auto const& g : all_gateways()) g->close_all_runs();
}

boost::asio::awaitable<void> reloadable_backend::async_runs_closed(std::chrono::milliseconds limit) {
    for (auto const& g : all_gateways()) co_await g->async_runs_closed(limit);
}

std::uint64_t reloadable_backend::register_with(gateway& g, listener const& l) {
    return l.session_id.empty() ? g.add_listener(l.principal, l.sink)
                                : g.add_session_listener(l.principal, l.session_id, l.sink);
}

std::uint64_t reloadable_backend::add_listener(std::string const& principal, notification_sink sink) {
    return add_session_listener(principal, "", std::move(sink));
}

std::uint64_t reloadable_backend::add_session_listener(std::string const& principal, std::string const& session_id,
                                                       notification_sink sink) {
    std::lock_guard lock(mutex_);
    auto id = ++next_id_;
    listener l{principal, session_id, std::move(sink), 0};
    l.inner = register_with(*current_, l);
    listeners_[id] = std::move(l);
    return id;
}

void reloadable_backend::remove_listener(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    auto it = listeners_.find(id);
    if (it == listeners_.end()) return;
    current_->remove_listener(it->second.inner);
    listeners_.erase(it);
}

}  // namespace airlock::service
