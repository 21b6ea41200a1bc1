// The reload decision, table by table: the configuration in force and the one a SIGHUP read →
// refused, or which upstream clients are kept, made anew and retired, and what waits for a restart.
#include "service/app/reload_plan.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace airlock;
using namespace airlock::service;

namespace {

upstream_config stdio_upstream(std::string name, std::vector<std::string> argv) {
    upstream_config u;
    u.name = std::move(name);
    u.kind = upstream_kind::stdio;
    u.stdio.server_name = u.name;
    u.stdio.argv = std::move(argv);
    u.destination = core::process_destination{u.stdio.argv.front()};
    return u;
}

upstream_config http_upstream(std::string name, std::string host) {
    upstream_config u;
    u.name = std::move(name);
    u.kind = upstream_kind::http;
    u.http.server_name = u.name;
    u.http.url = "https://" + host + "/mcp";
    u.destination = core::remote_destination{"https", host, 443};
    return u;
}

principal_config principal(std::string name, bool anonymous = false) {
    principal_config p;
    p.name = std::move(name);
    p.anonymous = anonymous;
    if (!anonymous) p.token = "token-of-" + p.name + "-0123456789";
    return p;
}

// Two stdio upstreams, one HTTP upstream, two principals: what most deployments look like.
config running() {
    config c;
    c.upstreams = {stdio_upstream("ledger", {"node", "ledger.mjs"}), stdio_upstream("files", {"node", "files.mjs"}),
                   http_upstream("search", "search.example.com")};
    REQUIRE(c.egress.add(core::process_destination{"node"}));
    REQUIRE(c.egress.add(core::remote_destination{"https", "search.example.com", 443}));
    c.principals = {principal("alice"), principal("bob")};
    return c;
}

using keeps = std::vector<std::optional<std::size_t>>;

}  // namespace

TEST_CASE("an unchanged configuration keeps every upstream's client and nothing waits for a restart") {
    auto plan = plan_reload(running(), running());
    CHECK_FALSE(plan.refusal);
    CHECK(plan.keep == keeps{0, 1, 2});
    CHECK(plan.retired.empty());
    CHECK(plan.new_clients() == 0);
    CHECK(plan.restart_only.empty());
    CHECK(plan.principals_added.empty());
    CHECK(plan.principals_removed.empty());
}

TEST_CASE("an added upstream gets a new client and the others keep theirs") {
    auto next = running();
    next.upstreams.insert(next.upstreams.begin() + 1, stdio_upstream("tickets", {"node", "tickets.mjs"}));
    auto plan = plan_reload(running(), next);
    CHECK_FALSE(plan.refusal);
    CHECK(plan.keep == keeps{0, std::nullopt, 1, 2});
    CHECK(plan.new_clients() == 1);
    CHECK(plan.retired.empty());
}

TEST_CASE("a removed upstream's client is retired") {
    auto next = running();
    next.upstreams.erase(next.upstreams.begin());
    auto plan = plan_reload(running(), next);
    CHECK(plan.keep == keeps{1, 2});
    CHECK(plan.retired == std::vector<std::size_t>{0});
    CHECK(plan.new_clients() == 0);
}

TEST_CASE("an upstream whose command changed gets a new client and its old one is retired") {
    auto next = running();
    next.upstreams[1].stdio.argv = {"node", "files.mjs", "--read-only"};
    auto plan = plan_reload(running(), next);
    CHECK(plan.keep == keeps{0, std::nullopt, 2});
    CHECK(plan.retired == std::vector<std::size_t>{1});
}

TEST_CASE("an upstream whose environment or deadline changed gets a new client") {
    auto env = running();
    env.upstreams[0].stdio.env["LEDGER_TOKEN"] = "rotated-secret-value";
    CHECK(plan_reload(running(), env).keep == keeps{std::nullopt, 1, 2});
    auto deadline = running();
    deadline.upstreams[2].deadline = std::chrono::seconds(5);
    CHECK(plan_reload(running(), deadline).keep == keeps{0, 1, std::nullopt});
}

TEST_CASE("a changed egress list renews the HTTP upstreams' clients and keeps the stdio ones") {
    auto next = running();
    REQUIRE(next.egress.add(core::remote_destination{"https", "other.example.com", 443}));
    auto plan = plan_reload(running(), next);
    CHECK(plan.keep == keeps{0, 1, std::nullopt});
    CHECK(plan.retired == std::vector<std::size_t>{2});
}

TEST_CASE("two identical upstreams keep one client each, in their order") {
    auto before = running();
    before.upstreams = {stdio_upstream("twin", {"node", "twin.mjs"}), stdio_upstream("twin", {"node", "twin.mjs"})};
    auto next = before;
    next.upstreams.pop_back();
    auto plan = plan_reload(before, next);
    CHECK(plan.keep == keeps{0});
    CHECK(plan.retired == std::vector<std::size_t>{1});
}

TEST_CASE("a new listen address waits for the next restart and the reload goes on") {
    auto next = running();
    next.server.port = 9999;
    auto plan = plan_reload(running(), next);
    CHECK_FALSE(plan.refusal);
    CHECK(plan.restart_only == std::vector<std::string>{"server.listen/unix_socket"});
    CHECK(plan.keep == keeps{0, 1, 2});
}

TEST_CASE("settings the running server read at start are listed, each once, in a fixed order") {
    auto next = running();
    next.server.tls = tls_files{"cert.pem", "key.pem"};
    next.server.threads = 3;
    next.server.allowed_hosts = {"airlock.internal"};
    next.journal.directory = "/elsewhere";
    next.logging.format = log_format::text;
    next.runs.max_concurrent_runs = 8;
    auto plan = plan_reload(running(), next);
    CHECK_FALSE(plan.refusal);
    CHECK(plan.restart_only == std::vector<std::string>{"server.tls", "server.threads",
                                                        "server.allowed_hosts/allowed_origins", "journal",
                                                        "logging.format", "runs.max_concurrent_runs"});
}

TEST_CASE("a new logging level takes effect at once, not at the next restart") {
    auto next = running();
    next.logging.level = log_level::debug;
    CHECK(plan_reload(running(), next).restart_only.empty());
}

TEST_CASE("a changed agent or provider waits for the next restart") {
    auto next = running();
    agent_config a;
    a.name = "teller";
    a.provider = "local";
    next.agents.push_back(a);
    provider_config p;
    p.name = "local";
    p.kind = provider_kind::scripted;
    next.providers.push_back(p);
    CHECK(plan_reload(running(), next).restart_only == std::vector<std::string>{"agents", "providers"});
}

TEST_CASE("adding the anonymous principal refuses the reload with the reason SIGHUP logs") {
    auto next = running();
    next.principals.push_back(principal("guest", true));
    auto plan = plan_reload(running(), next);
    REQUIRE(plan.refusal);
    CHECK(*plan.refusal ==
          "adding or removing the anonymous principal changes who is let in without a token, and needs a restart");
    CHECK(plan.keep.empty());
    CHECK(plan.retired.empty());
}

TEST_CASE("removing the anonymous principal refuses the reload too") {
    auto before = running();
    before.principals.push_back(principal("guest", true));
    CHECK(plan_reload(before, running()).refusal);
    CHECK_FALSE(plan_reload(before, before).refusal);
}

TEST_CASE("an added principal is new and restarts nothing") {
    auto next = running();
    next.principals.push_back(principal("carol"));
    auto plan = plan_reload(running(), next);
    CHECK_FALSE(plan.refusal);
    CHECK(plan.principals_added == std::vector<std::string>{"carol"});
    CHECK(plan.principals_removed.empty());
    CHECK(plan.restart_only.empty());
    CHECK(plan.keep == keeps{0, 1, 2});
}

TEST_CASE("a removed principal is named, and its upstreams stay") {
    auto next = running();
    next.principals.erase(next.principals.begin());
    auto plan = plan_reload(running(), next);
    CHECK(plan.principals_removed == std::vector<std::string>{"alice"});
    CHECK(plan.principals_added.empty());
    CHECK(plan.retired.empty());
}
