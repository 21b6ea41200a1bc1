#include "service/gateway/relays.hpp"

#include "mcp/client/spawn_logged.hpp"
#include "service/gateway/notify.hpp"
#include "service/gateway/session_runs.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

using ask_function = std::function<asio::awaitable<mcp::handler_result>(std::string, json::object)>;

asio::awaitable<mcp::handler_result> async_ask_caller(std::string server, ask_function ask, mcp::request r) {
    if (!ask) {
        spdlog::info("upstream {}: {} refused: the client of that request cannot be asked", server, r.method);
        co_return mcp::error_object{mcp::rpc_code::internal_error,
                                    "the client of this request cannot be asked " + r.method, std::nullopt};
    }
    spdlog::debug("upstream {}: relaying {} to the client", server, r.method);
    json::object params = r.params ? std::move(*r.params) : json::object{};
    co_return co_await ask(std::move(r.method), std::move(params));
}

}  // namespace

relays::relays(std::shared_ptr<roster const> who) : roster_(std::move(who)) {}

// ---- notification streams -------------------------------------------------------------------

std::uint64_t relays::add_listener(std::string const& principal, std::string const& session_id, notification_sink sink) {
    std::lock_guard lock(mutex_);
    auto id = ++next_listener_;
    // The same keys session_runs gives runs, so an update finds the streams of the sessions it concerns.
    listeners_[id] = listener{principal, session_runs::key_of(session_id, principal), std::move(sink)};
    return id;
}

void relays::remove_listener(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    listeners_.erase(id);
}

bool relays::heard(std::string const& server) const {
    std::lock_guard lock(mutex_);
    return std::ranges::any_of(listeners_, [&](auto const& kv) {
        auto const* p = roster_->principal(kv.second.principal);
        return p && sees(*p, server);
    });
}

std::vector<relays::notification_sink> relays::sinks_where(
    std::string const& server, std::function<bool(gateway_principal const&)> const& changed) const {
    std::map<std::string, bool> verdicts;  // by principal
    std::vector<notification_sink> sinks;
    std::lock_guard lock(mutex_);
    for (auto const& [id, l] : listeners_) {
        auto const* p = roster_->principal(l.principal);
        if (!p || !sees(*p, server)) continue;
        auto [it, fresh] = verdicts.try_emplace(l.principal, false);
        if (fresh) it->second = changed(*p);
        if (it->second) sinks.push_back(l.sink);
    }
    return sinks;
}

void relays::broadcast(std::string const& server, mcp::notification const& n) const {
    auto sinks = sinks_where(server, [](gateway_principal const&) { return true; });
    for (auto const& s : sinks) s(n);
}

void relays::to_sessions(std::string const& server, mcp::notification const& n, std::set<std::string> const& keys) const {
    std::vector<notification_sink> sinks;
    {
        std::lock_guard lock(mutex_);
        for (auto const& [id, l] : listeners_) {
            auto const* p = roster_->principal(l.principal);
            if (p && keys.contains(l.session_key) && sees(*p, server)) sinks.push_back(l.sink);
        }
    }
    for (auto const& s : sinks) s(n);
}

// ---- requests in flight ---------------------------------------------------------------------

relays::inflight_guard::inflight_guard(relays& r, std::string server, mcp::request_context const& ctx,
                                       asio::any_io_executor exec)
    : r_(r), server_(std::move(server)), f_(std::make_shared<inflight>()) {
    f_->executor = std::move(exec);
    f_->notify = ctx.notify;
    f_->ask_client = ctx.ask_client;
    // A legacy session is one client. Stateless (2026-07-28) requests of one principal count as
    // one caller: a request waiting for its retry (MRTR) stays in flight beside the retry.
    f_->caller = ctx.principal + '\n' + ctx.session_id;
    std::lock_guard lock(r_.mutex_);
    r_.inflight_[server_].push_back(f_);
}

relays::inflight_guard::~inflight_guard() {
    std::lock_guard lock(r_.mutex_);
    auto it = r_.inflight_.find(server_);
    if (it == r_.inflight_.end()) return;
    std::erase(it->second, f_);
    if (it->second.empty()) r_.inflight_.erase(it);
}

std::function<void(mcp::notification const&)> relays::relay_to(mcp::request_context const& ctx, asio::any_io_executor exec) {
    if (!ctx.notify) return {};
    auto notify = ctx.notify;
    auto token = ctx.progress;
    return [notify, token, exec](mcp::notification const& n) {
        mcp::notification out = n;
        if (n.method == "notifications/progress") {
            // The upstream reports under airlock's token; the client knows only its own.
            if (!token || !out.params) return;
            (*out.params)["progressToken"] = mcp::to_json(*token);
        }
        auto send = async_send_holding(notify, std::move(out));
        mcp::spawn_logged(exec, std::move(send), "gateway relay to a caller");
    };
}

mcp::server_request_handler relays::ask_caller(std::string server, mcp::request_context const& ctx) {
    // Whatever else is in flight to the same upstream (Streamable HTTP names the request).
    return [server = std::move(server), ask = ctx.ask_client](mcp::request r) {
        return async_ask_caller(server, ask, std::move(r));
    };
}

std::shared_ptr<relays::inflight> relays::attributable(std::string const& server, unattributed& why) const {
    // A stdio upstream's message names no request, and may come after the call that caused it has
    // ended, while another principal's call is in flight. Guessing could hand one tenant's prompt
    // or log to another: an upstream several principals see attributes nothing; one that a single
    // principal sees goes to that principal's caller in flight, if there is exactly one.
    if (roster_->seeing(server) > 1) {
        why = unattributed::shared_upstream;
        return nullptr;
    }
    std::lock_guard lock(mutex_);
    auto it = inflight_.find(server);
    if (it == inflight_.end() || it->second.empty()) {
        why = unattributed::nobody_in_flight;
        return nullptr;
    }
    auto const& latest = it->second.back();
    if (std::ranges::any_of(it->second, [&](auto const& f) { return f->caller != latest->caller; })) {
        why = unattributed::several_callers;
        return nullptr;
    }
    return latest;
}

void relays::upstream_notification(std::string const& server, mcp::notification const& n) {
    if (n.method == "notifications/resources/list_changed" || n.method == "notifications/prompts/list_changed") {
        spdlog::info("upstream {}: {}", server, n.method);
        broadcast(server, n);
        return;
    }
    if (n.method != "notifications/message") {
        spdlog::debug("upstream {}: {} is not relayed", server, n.method);
        return;
    }
    // A stdio upstream's log message names no request: it belongs to the caller in flight, if
    // one can be told; with nobody in flight it is the upstream's own, for its one principal.
    auto why = unattributed::nobody_in_flight;
    if (auto f = attributable(server, why); f && f->notify && f->executor) {
        auto send = async_send_holding(f->notify, n);
        mcp::spawn_logged(f->executor, std::move(send), "gateway relay of an upstream log message");
        return;
    }
    if (why != unattributed::nobody_in_flight) {
        spdlog::debug("upstream {}: a log message that names no request is not relayed ({})", server,
                      why == unattributed::shared_upstream ? "several principals see the upstream"
                                                           : "several callers have requests in flight");
        return;
    }
    broadcast(server, n);
}

asio::awaitable<mcp::handler_result> relays::async_upstream_request(std::weak_ptr<relays> weak, std::string server,
                                                                    mcp::request r) {
    auto self = weak.lock();
    std::shared_ptr<inflight> f;
    auto why = unattributed::nobody_in_flight;
    if (self) f = self->attributable(server, why);
    if (why == unattributed::several_callers || why == unattributed::shared_upstream) {
        spdlog::info("upstream {}: {} refused: it names no request, and {}", server, r.method,
                     why == unattributed::shared_upstream ? "several principals see the upstream"
                                                          : "requests of several callers are in flight there");
        co_return mcp::error_object{mcp::rpc_code::internal_error,
                                    r.method + " names no request, and airlock cannot tell which of its clients it is "
                                               "for: it is asked of none",
                                    std::nullopt};
    }
    if (!f || !f->ask_client) {
        spdlog::info("upstream {}: {} refused: no client request is in flight to ask", server, r.method);
        co_return mcp::error_object{mcp::rpc_code::internal_error,
                                    "no client request is in flight through airlock to relay " + r.method + " to",
                                    std::nullopt};
    }
    self.reset();  // the question may take long; it must not keep the gateway alive
    auto ask = f->ask_client;
    co_return co_await async_ask_caller(std::move(server), std::move(ask), std::move(r));
}

}  // namespace airlock::service
