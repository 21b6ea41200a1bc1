#include "service/agents/runner_factory.hpp"

#include "core/secrets.hpp"
#include "mcp/client/router.hpp"
#include "service/agents/providers/scripted.hpp"

#include <spdlog/spdlog.h>

#include <set>

namespace airlock::service {

namespace asio = boost::asio;

struct runner_tools::routes {
    std::shared_ptr<mcp::tool_router> router;
    std::map<std::string, std::shared_ptr<mcp::mcp_client>> clients;  // by server name
};

core::result<std::shared_ptr<runner_tools>> runner_tools::make(core::egress_allowlist egress,
                                                               std::vector<std::shared_ptr<mcp::mcp_client>> const& upstreams) {
    std::shared_ptr<runner_tools> t(new runner_tools());
    if (auto r = t->replace(std::move(egress), upstreams); !r) return r.error();
    return t;
}

core::result<void> runner_tools::replace(core::egress_allowlist egress,
                                         std::vector<std::shared_ptr<mcp::mcp_client>> const& upstreams) {
    auto next = std::make_shared<routes>();
    next->router = std::make_shared<mcp::tool_router>(std::move(egress));
    for (auto const& u : upstreams) {
        if (auto added = next->router->add_route(u->server_name(), u); !added) return added.error();
        next->clients[u->server_name()] = u;
    }
    std::lock_guard lock(mutex_);
    routes_ = std::move(next);
    return {};
}

std::shared_ptr<runner_tools::routes const> runner_tools::current() const {
    std::lock_guard lock(mutex_);
    return routes_;
}

asio::awaitable<core::tool_result<boost::json::value>> runner_tools::async_call(core::tool_id tool,
                                                                                boost::json::value arguments,
                                                                                std::optional<core::provenance> prov) {
    auto now = current();  // held for the call: a reload does not pull the client from under it
    auto server = tool.server();
    auto name = tool.name();
    auto started = std::chrono::steady_clock::now();
    auto r = co_await now->router->async_call(std::move(tool), std::move(arguments), std::move(prov));
    if (metrics_) {
        auto outcome = r ? std::string("ok") : std::string(core::to_string(r.error().kind));
        metrics_->tool_call(server, name, outcome, std::chrono::steady_clock::now() - started);
    }
    // A run's tool results go on to the model, the journal and the REST API: a secret an upstream
    // echoes is hidden before any of them sees it.
    if (r) {
        core::secrets::redact(*r);
        co_return r;
    }
    auto e = r.error();
    core::secrets::redact(e.detail);
    co_return core::tool_result<boost::json::value>(std::move(e));
}

core::destination runner_tools::destination_of(core::tool_id const& tool) const {
    return current()->router->destination_of(tool);
}

// A tool the upstream does not list is offered bare (the loop still refuses what is not granted).
asio::awaitable<std::vector<core::model_tool>> runner_tools::async_catalogue(core::manifest m) const {
    auto now = current();
    std::vector<core::model_tool> out;
    std::set<std::string> servers;
    for (auto const& g : m.tools) servers.insert(g.ref.server());
    for (auto const& server : servers) {
        auto it = now->clients.find(server);
        if (it == now->clients.end()) continue;
        // Not even a listing goes to a destination egress does not allow (its calls would be refused).
        if (!now->router->allowlist().permits(it->second->destination())) continue;
        auto listed = co_await it->second->async_list_tools();
        if (!listed) {
            spdlog::warn("upstream {}: cannot list tools for the model ({})", server, listed.error().detail);
            continue;
        }
        for (auto const& t : *listed) {
            if (!m.grant_for(t.id)) continue;
            out.push_back(core::model_tool{t.id.wire_name(), t.spec.description.value_or(""),
                                           boost::json::value(t.spec.input_schema)});
        }
    }
    co_return out;
}

core::result<std::shared_ptr<runner>> make_runner(config const& c, runner_parts parts) {
    auto tools = parts.tools;
    if (!tools) {
        auto made = runner_tools::make(c.egress, parts.upstreams);
        if (!made) return made.error();
        tools = *made;
    }
    runner_options o;
    o.executor = parts.executor;
    o.tools = tools;
    o.egress = c.egress;
    o.journal = parts.journal;
    o.max_concurrent_runs = c.runs.max_concurrent_runs;
    if (c.signing) {
        o.signer = c.signing->signer;
        o.provenance_lifetime = c.signing->lifetime;
    }
    for (auto const& a : c.agents) {
        agent_entry e;
        e.manifest = a.manifest;
        if (a.scripted) {
            e.provider_name = "script:" + a.script_file.value_or("").filename().string();
            e.provider = std::make_shared<scripted_provider>(*a.scripted);
        } else {
            auto name = a.provider.value_or("");
            auto it = parts.providers.find(name);
            if (it == parts.providers.end())
                return core::make_error(core::errc::unknown_provider, "agent " + a.name + ": no model provider named '" + name + "'");
            e.provider_name = name;
            e.provider = it->second;
        }
        o.agents.push_back(std::move(e));
    }
    o.catalogue = [tools](core::manifest const& m) { return tools->async_catalogue(m); };
    return runner::make(std::move(o));
}

}  // namespace airlock::service
