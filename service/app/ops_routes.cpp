#include "service/app/ops_routes.hpp"

#include "mcp/client/spawn_logged.hpp"
#include "service/ops/health.hpp"

#include <boost/asio/this_coro.hpp>

#include <spdlog/spdlog.h>

#include <map>
#include <mutex>
#include <string>

namespace airlock::service {

namespace asio = boost::asio;

namespace {

readiness_inputs readiness_of(ops_state& s) {
    readiness_inputs in;
    in.journal_open = s.sv->journal->is_open();
    if (auto fault = s.sv->journal->write_fault()) in.journal_fault = fault->code == "io_error" ? "write_failed" : fault->code;
    in.draining = s.life->draining();
    std::map<std::string, bool> optional;
    {
        std::lock_guard lock(s.sv->mutex);
        for (auto const& u : s.sv->current.upstreams) optional[u.name] = u.optional;
    }
    for (auto const& [name, state] : s.sv->backend->current()->upstream_states()) {
        readiness_inputs::upstream u{name, optional[name], readiness_inputs::upstream_state::unknown};
        if (state == gateway::upstream_state::up) u.state = readiness_inputs::upstream_state::up;
        if (state == gateway::upstream_state::down) u.state = readiness_inputs::upstream_state::down;
        if (state == gateway::upstream_state::refused) u.state = readiness_inputs::upstream_state::refused;
        in.upstreams.push_back(std::move(u));
    }
    if (s.oauth)
        for (auto const& i : s.oauth->keys->states())
            in.issuers.push_back({i.issuer, i.ready ? "keys" : i.keys ? "keys_expired" : "no_keys"});
    return in;
}

asio::awaitable<void> async_probe(std::shared_ptr<ops_state> s) {
    try {
        // A journal that failed an append is tried again here: with no traffic sent to an unready
        // server, no append would come to find that it recovered.
        co_await s->sv->journal->async_probe_write();
        auto gw = s->sv->backend->current();
        co_await gw->async_probe_upstreams();
    } catch (std::exception const& e) {
        spdlog::warn("readiness probe of the upstreams failed: {}", e.what());
    }
    s->probing = false;
}

}  // namespace

// /healthz, /readyz, /metrics, and 404 for everything else.
asio::awaitable<http_response> ops_route(std::shared_ptr<ops_state> s, http_request& req) {
    auto target = req.target();
    auto path = target.substr(0, target.find('?'));
    if (path == "/healthz") co_return healthz_response(req);
    if (s->oauth)
        if (auto md = resource_metadata_reply(s->oauth->metadata, req)) co_return std::move(*md);
    if (path == "/readyz") {
        // Answered from what is known now; stale upstream states are refreshed in the background,
        // so a probe never waits on an upstream.
        if (!s->probing.exchange(true)) {
            auto exec = co_await asio::this_coro::executor;
            mcp::spawn_logged(exec, async_probe(s), "readiness probe");
        }
        co_return readyz_response(req, readiness_of(*s));
    }
    if (path == "/metrics" && s->metrics_settings.enabled)
        co_return metrics_response(req, *s->metrics, s->metrics_settings.token);
    co_return json_error(http::status::not_found, "not_found", "no route for " + std::string(path), req.version());
}

}  // namespace airlock::service
