#include "service/runner_factory.hpp"

#include "mcp/router.hpp"
#include "service/providers/scripted.hpp"

#include <spdlog/spdlog.h>

namespace airlock::service {

namespace asio = boost::asio;

namespace {

// The schema of every granted tool its upstream lists; a tool it does not list is offered bare.
asio::awaitable<std::vector<core::model_tool>> async_upstream_catalogue(
    std::map<std::string, std::shared_ptr<mcp::mcp_client>> clients, core::manifest m) {
    std::vector<core::model_tool> out;
    std::set<std::string> servers;
    for (auto const& g : m.tools) servers.insert(g.ref.server());
    for (auto const& server : servers) {
        auto it = clients.find(server);
        if (it == clients.end()) continue;
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

}  // namespace

core::result<std::shared_ptr<runner>> make_runner(config const& c, runner_parts parts) {
    auto router = std::make_shared<mcp::tool_router>(c.egress);
    std::map<std::string, std::shared_ptr<mcp::mcp_client>> clients;
    for (auto const& u : parts.upstreams) {
        if (auto added = router->add_route(u->server_name(), u); !added) return added.error();
        clients[u->server_name()] = u;
    }
    runner_options o;
    o.executor = parts.executor;
    o.tools = router;
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
                return core::make_error("unknown_provider", "agent " + a.name + ": no model provider named '" + name + "'");
            e.provider_name = name;
            e.provider = it->second;
        }
        o.agents.push_back(std::move(e));
    }
    o.catalogue = [clients](core::manifest const& m) { return async_upstream_catalogue(clients, m); };
    return runner::make(std::move(o));
}

}  // namespace airlock::service
