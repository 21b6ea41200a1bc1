#include "service/app/reload.hpp"

#include "mcp/client/spawn_logged.hpp"
#include "service/app/reload_plan.hpp"
#include "service/app/wiring.hpp"
#include "service/ops/log.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace airlock::service {

namespace asio = boost::asio;

namespace {

using client_list = std::vector<std::shared_ptr<mcp::mcp_client>>;

// The tool lists two gateways show a principal are the same (names and definitions).
bool same_tools(std::vector<boost::json::object> a, std::vector<boost::json::object> b) {
    auto texts = [](std::vector<boost::json::object> const& v) {
        std::vector<std::string> out;
        for (auto const& t : v) out.push_back(boost::json::serialize(t));
        std::sort(out.begin(), out.end());
        return out;
    };
    return texts(a) == texts(b);
}

// Closes clients a reload no longer uses once calls in flight on them have had the grace period.
asio::awaitable<void> async_retire_clients(std::shared_ptr<serving> sv, client_list retired) {
    asio::steady_timer t(co_await asio::this_coro::executor, sv->drain_grace);
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    co_await async_close_upstreams(retired);
    std::lock_guard lock(sv->mutex);
    std::erase_if(sv->retiring, [&](auto const& c) { return std::find(retired.begin(), retired.end(), c) != retired.end(); });
}

// The file as it is now, with serve's command-line overrides on top; nullopt after logging why not.
std::optional<config> read_next(serving& sv) {
    spdlog::info("reload: reading {}", *sv.config_file);
    auto next = load_serving_config(sv.config_file);
    if (!next) {
        spdlog::error("reload refused, the running configuration stays: {}: {}", *sv.config_file, next.error().message);
        return std::nullopt;
    }
    // Hidden from here on, before anything of the new configuration runs: a value once configured
    // stays hidden even if the reload is refused.
    register_secrets(*next);
    if (sv.listen_override) parse_listen(*sv.listen_override, next->server);
    if (sv.threads_override) next->server.threads = *sv.threads_override;
    return std::move(*next);
}

// The clients `next` runs on: the kept ones of `old_clients`, new ones for the rest.
client_list clients_of(reload_plan const& plan, config const& next, client_list const& old_clients,
                       asio::any_io_executor exec) {
    client_list clients;
    for (std::size_t i = 0; i < next.upstreams.size(); ++i) {
        auto const& kept = plan.keep[i];
        clients.push_back(kept ? old_clients[*kept] : make_upstream_client(next.upstreams[i], next.egress, exec));
    }
    return clients;
}

// The configuration in force becomes `next`, but for the settings that wait for a restart: those
// stay as they run, so the next reload compares with them.
void put_in_force(serving& sv, config const& next, client_list const& clients, client_list const& retired) {
    std::lock_guard lock(sv.mutex);
    auto server = sv.current.server;
    auto journal = sv.current.journal;
    auto format = sv.current.logging.format;
    sv.current = next;
    sv.current.server = server;
    sv.current.journal = journal;
    sv.current.logging.format = format;
    sv.clients = clients;
    sv.retiring.insert(sv.retiring.end(), retired.begin(), retired.end());
}

// Every principal with an open notification stream whose tool list changed gets
// notifications/tools/list_changed.
asio::awaitable<void> async_announce_tool_changes(std::shared_ptr<serving> sv, std::shared_ptr<gateway> previous,
                                                  std::shared_ptr<gateway> gw) {
    std::size_t streams = 0;
    auto principals = sv->backend->listening_principals();
    for (auto const& principal : principals) {
        auto was = co_await previous->async_tools_for(principal);
        auto now = co_await gw->async_tools_for(principal);
        if (same_tools(std::move(was), std::move(now))) continue;
        mcp::notification changed{"notifications/tools/list_changed", std::nullopt};
        streams += sv->backend->notify(principal, changed);
    }
    if (streams) spdlog::info("reload: tools/list_changed sent on {} notification streams", streams);
}

// One reload: the file is read and checked whole; only a configuration that loads and builds
// replaces the running one. Upstreams whose settings did not change keep their client (a stdio
// child keeps running, sessions with it stay). Then every principal with an open notification
// stream whose tool list changed gets notifications/tools/list_changed.
asio::awaitable<void> async_reload_once(std::shared_ptr<serving> sv) {
    if (!sv->config_file) {
        spdlog::warn("reload: airlock runs on its embedded defaults (no --config); nothing to reload");
        co_return;
    }
    auto next = read_next(*sv);
    if (!next) co_return;
    config before;
    client_list old_clients;
    {
        std::lock_guard lock(sv->mutex);
        before = sv->current;
        old_clients = sv->clients;
    }
    auto plan = plan_reload(before, *next);
    if (plan.refusal) {
        spdlog::error("reload refused, the running configuration stays: {}", *plan.refusal);
        co_return;
    }
    auto exec = sv->ioc.get_executor();
    auto clients = clients_of(plan, *next, old_clients, exec);
    auto gw = make_gateway(*next, exec, sv->journal, clients, sv->metrics, sv->instance);
    if (!gw) {
        spdlog::error("reload refused, the running configuration stays: {}", gw.error().message);
        client_list fresh;
        for (std::size_t i = 0; i < clients.size(); ++i)
            if (!plan.keep[i]) fresh.push_back(clients[i]);
        co_await async_close_upstreams(std::move(fresh));
        co_return;
    }
    client_list retired;
    for (auto i : plan.retired) retired.push_back(old_clients[i]);

    for (auto const& what : plan.restart_only)
        spdlog::warn("reload: {} changed; that takes effect at the next restart", what);
    // Agent runs call tools through the new upstreams from their next call on.
    if (auto replaced = sv->run_tools->replace(next->egress, clients); !replaced)
        spdlog::error("reload: agent runs keep the previous upstreams: {}", replaced.error().message);
    sv->tokens->replace(*next);
    (*gw)->start_run_upkeep();
    auto previous = sv->backend->replace(*gw);
    // The format stays as it started (a collector parses it); the level follows the file.
    log::set_level(next->logging.level);
    put_in_force(*sv, *next, clients, retired);
    spdlog::info("reload: done ({} upstreams, {} new or changed, {} removed; {} principals)", next->upstreams.size(),
                 plan.new_clients(), retired.size(), next->principals.size());
    if (!retired.empty()) mcp::spawn_logged(exec, async_retire_clients(sv, std::move(retired)), "reload: retire upstreams");
    // Startup meets the upstreams before the first client; a reload does so for the new ones.
    co_await (*gw)->async_connect_upstreams();
    co_await async_announce_tool_changes(sv, previous, *gw);
}

// Reloads one at a time: a SIGHUP during a reload runs one more after it, with the file as it is then.
asio::awaitable<void> async_reload(std::shared_ptr<serving> sv) {
    for (;;) {
        try {
            co_await async_reload_once(sv);
        } catch (std::exception const& e) {
            spdlog::error("reload failed: {}", e.what());
        }
        std::lock_guard lock(sv->mutex);
        if (!sv->reload_again) {
            sv->reloading = false;
            co_return;
        }
        sv->reload_again = false;
    }
}

}  // namespace

void request_reload(std::shared_ptr<serving> const& sv) {
    {
        std::lock_guard lock(sv->mutex);
        if (sv->reloading) {
            sv->reload_again = true;
            spdlog::info("reload: SIGHUP during a reload; reloading again after it");
            return;
        }
        sv->reloading = true;
    }
    mcp::spawn_logged(asio::make_strand(sv->ioc), async_reload(sv), "reload");
}

}  // namespace airlock::service
