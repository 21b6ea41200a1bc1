#include "service/cli/check_command.hpp"

#include "core/grant_hints.hpp"
#include "core/manifest.hpp"
#include "core/strict_yaml.hpp"
#include "mcp/client/spawn_logged.hpp"
#include "service/app/oauth.hpp"
#include "service/app/wiring.hpp"
#include "service/config/config.hpp"

#include <boost/asio/io_context.hpp>

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <iostream>
#include <sstream>

namespace airlock::service {

namespace {

// A document with `kind: Agent` is a manifest; anything else is a configuration file.
bool looks_like_manifest(std::string const& text) {
    if (core::yaml::nul_byte(text)) return false;  // the config loader says where the NUL is
    try {
        auto doc = YAML::Load(text);
        return doc.IsMap() && doc["kind"] && doc["kind"].IsScalar() && doc["kind"].Scalar() == "Agent";
    } catch (YAML::Exception const&) {
        return false;  // the config loader reports the syntax error with its position
    }
}

int check_manifest(std::string const& path, std::string const& text) {
    auto m = core::parse_manifest(text);
    if (!m) {
        // Every problem at once: fixing a manifest one error per run is tedious.
        for (auto const& e : core::manifest_problems(text)) std::cout << path << ": error: " << e.message << "\n";
        return 1;
    }
    std::cout << "ok " << m->name << " " << m->version << " " << m->digest << "\n";
    return 0;
}

using tool_list = core::tool_result<std::vector<mcp::upstream_tool>>;

// Every upstream egress lets airlock reach, listed all at once (one slow to start delays none of
// the others) through the client `airlock serve` would use, then closed, its child reaped.
std::vector<std::optional<tool_list>> list_upstream_tools(config const& c) {
    boost::asio::io_context ioc;
    std::vector<std::optional<tool_list>> lists(c.upstreams.size());
    auto list_one = [](std::shared_ptr<mcp::mcp_client> client, std::optional<tool_list>& out) -> boost::asio::awaitable<void> {
        out = co_await client->async_list_tools();
        // Named, not braced inside the co_await: GCC 12 destroys such a temporary twice.
        std::vector<std::shared_ptr<mcp::mcp_client>> clients{std::move(client)};
        co_await async_close_upstreams(std::move(clients));
    };
    for (std::size_t i = 0; i < c.upstreams.size(); ++i) {
        if (!c.egress.permits(c.upstreams[i].destination)) continue;
        auto client = make_upstream_client(c.upstreams[i], c.egress, ioc.get_executor());
        mcp::spawn_logged(ioc.get_executor(), list_one(std::move(client), lists[i]), "upstream tools check");
    }
    ioc.run();
    return lists;
}

// Each grant, of a principal or an agent, of a tool its upstream does not offer: a warning with
// the names it does offer, as `airlock serve` logs it once the upstream's tools are listed.
void report_unoffered(std::string const& path, config const& c, std::string const& server,
                      std::vector<mcp::upstream_tool> const& tools) {
    std::vector<core::tool_id> offered;
    for (auto const& t : tools) offered.push_back(t.id);
    for (auto const& p : c.principals)
        for (auto const& hint : core::unoffered_grants(p.manifest, server, offered))
            std::cout << path << ": warning: principal " << p.name << ": " << hint << "\n";
    for (auto const& a : c.agents)
        for (auto const& hint : core::unoffered_grants(a.manifest, server, offered))
            std::cout << path << ": warning: agent " << a.name << ": " << hint << "\n";
}

// Each upstream: its tools listed, and the grants that name a tool it lacks. One that cannot be
// listed is an error, unless it is optional (airlock starts and serves without it).
int check_upstreams(std::string const& path, config const& c) {
    auto lists = list_upstream_tools(c);
    int rc = 0;
    for (std::size_t i = 0; i < c.upstreams.size(); ++i) {
        auto const& u = c.upstreams[i];
        if (!lists[i]) {
            std::cout << "skipped upstream " << u.name << ": not in egress, so never contacted\n";
        } else if (!*lists[i]) {
            auto const& e = lists[i]->error();
            std::cout << path << (u.optional ? ": warning: " : ": error: ") << "upstream " << u.name
                      << ": its tools could not be listed (" << core::to_string(e.kind) << ": " << e.detail << ")\n";
            if (!u.optional) rc = 1;
        } else {
            std::cout << "ok upstream " << u.name << ": " << (*lists[i])->size() << " tools\n";
            report_unoffered(path, c, u.name, **lists[i]);
        }
    }
    return rc;
}

// Each auth.oauth issuer: its metadata discovered and its keys fetched, as `airlock serve` would at
// start (egress and TLS settings included).
int check_oauth_issuers(std::string const& path, config const& c) {
    boost::asio::io_context ioc;
    auto oauth = make_oauth(c, ioc.get_executor(), nullptr);
    if (!oauth) return 0;
    auto keys = oauth->keys;
    auto once = [](std::shared_ptr<oauth_keys> k) -> boost::asio::awaitable<void> {
        co_await k->async_start();
        k->stop();
    };
    mcp::spawn_logged(ioc.get_executor(), once(keys), "oauth key check");
    ioc.run();
    int rc = 0;
    for (auto const& s : keys->states()) {
        if (s.ready) {
            std::cout << "ok oauth issuer " << s.issuer << ": " << s.keys << " signing key(s) from " << s.jwks_uri << "\n";
        } else {
            std::cout << path << ": error: auth.oauth issuer " << s.issuer << ": " << s.problem << "\n";
            rc = 1;
        }
    }
    return rc;
}

// --online: what only the network can tell, contacted as `airlock serve` would.
int check_online(std::string const& path, config const& c) {
    if (c.upstreams.empty() && !c.auth.oauth) {
        std::cout << "online: nothing to contact (no upstreams, no auth.oauth)\n";
        return 0;
    }
    int const upstreams = check_upstreams(path, c);
    int const issuers = check_oauth_issuers(path, c);
    return upstreams || issuers ? 1 : 0;
}

int check_config(std::string const& path, bool online) {
    auto problems = config_problems(path, process_environment());
    if (!problems.empty()) {
        for (auto const& e : problems) std::cout << path << ": error: " << e.message << "\n";
        return 1;
    }
    auto c = load_config(path, process_environment());
    if (!c) {
        std::cout << path << ": error: " << c.error().message << "\n";
        return 1;
    }
    std::cout << "ok config " << path << "\n" << summary(*c);
    return online ? check_online(path, *c) : 0;
}

}  // namespace

int run_check(std::vector<std::string> const& args) {
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
        std::cout << "usage: airlock check [--online] FILE.yaml\n"
                     "  an agent manifest (kind: Agent): prints 'ok <name> <version> <digest>'\n"
                     "  a configuration file: prints 'ok config FILE' and a summary\n"
                     "  otherwise each error with its field path, and exit code 1\n"
                     "  --online: also contact what the configuration names: each upstream (its tools listed, and\n"
                     "            every grant of a tool it does not offer named with the closest it does) and\n"
                     "            each auth.oauth issuer (metadata and keys)\n";
        return 0;
    }
    bool online = false;
    std::vector<std::string> files;
    for (auto const& a : args) {
        if (a == "--online") online = true;
        else files.push_back(a);
    }
    if (files.size() != 1 || files[0].starts_with("--")) {
        std::cerr << "usage: airlock check [--online] FILE.yaml\n";
        return 2;
    }
    auto const& file = files[0];
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::cerr << "airlock check: cannot read '" << file << "'\n";
        return 1;
    }
    std::ostringstream text;
    text << in.rdbuf();
    return looks_like_manifest(text.str()) ? check_manifest(file, text.str()) : check_config(file, online);
}

}  // namespace airlock::service
