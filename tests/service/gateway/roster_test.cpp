// How an OAuth token's scopes narrow a principal in the gateway, without a socket: which upstreams
// a token's scopes withhold (auth.oauth.upstream_scopes), and the principal it is then served as.
#include "service/gateway/roster.hpp"

#include "core/manifest.hpp"

#include <catch2/catch.hpp>

using namespace airlock;
using namespace airlock::service;
namespace json = boost::json;

namespace {

gateway_principal carol() {
    auto m = core::parse_manifest(R"(
apiVersion: airlock/v1
kind: Agent
metadata: { name: desk, version: "1" }
spec:
  tools:
    - { ref: tool://fs/read, mutates: false }
    - { ref: tool://git/log, mutates: false }
    - ref: tool://git/commit
  budgets: {}
)");
    REQUIRE(m.has_value());
    return gateway_principal{"carol", *m, false, false};
}

json::object token_with(std::initializer_list<char const*> scopes) {
    json::array a;
    for (auto const* s : scopes) a.emplace_back(s);
    return {{"method", "oauth"}, {"issuer", "https://idp"}, {"subject", "carol"}, {"token_id", "t1"}, {"scopes", std::move(a)}};
}

std::vector<std::string> servers_of(gateway_principal const& p) {
    std::vector<std::string> out;
    for (auto const& g : p.grants.tools) out.push_back(g.ref.uri());
    return out;
}

}  // namespace

TEST_CASE("withheld_by_scope: an upstream whose scope the token lacks is withheld; others, and non-OAuth callers, are not") {
    std::map<std::string, std::string> const scopes{{"git", "mcp:git"}, {"fs", "mcp:fs"}};
    CHECK(withheld_by_scope(token_with({"mcp:fs", "mcp:git"}), scopes).empty());
    CHECK(withheld_by_scope(token_with({"mcp:fs"}), scopes) == std::set<std::string>{"git"});
    CHECK(withheld_by_scope(token_with({}), scopes) == std::set<std::string>{"fs", "git"});
    // A scope is matched whole: a prefix, another case or a longer word does not count.
    CHECK(withheld_by_scope(token_with({"mcp:gi", "MCP:FS", "mcp:fs:admin"}), scopes) == std::set<std::string>{"fs", "git"});
    // A static token, stdio or anonymous caller has no authentication record: never narrowed.
    CHECK(withheld_by_scope(json::object{}, scopes).empty());
    // An OAuth record whose scopes are missing or malformed holds no scope.
    CHECK(withheld_by_scope(json::object{{"method", "oauth"}}, scopes).size() == 2);
    CHECK(withheld_by_scope(json::object{{"method", "oauth"}, {"scopes", "mcp:fs mcp:git"}}, scopes).size() == 2);
    CHECK(withheld_by_scope(json::object{{"method", "oauth"}, {"scopes", json::array{1, true}}}, scopes).size() == 2);
    // Without upstream scopes configured, nothing is ever withheld.
    CHECK(withheld_by_scope(token_with({}), {}).empty());
}

TEST_CASE("narrowed: the principal keeps its name, trust and other grants, and loses only the withheld upstreams'") {
    auto const p = carol();
    auto const n = narrowed(p, {"git"});
    CHECK(n.name == "carol");
    CHECK(n.trusted == p.trusted);
    CHECK(servers_of(n) == std::vector<std::string>{"tool://fs/read"});
    CHECK(n.grants.grant_for(*core::tool_id::parse("tool://git/log")) == nullptr);
    CHECK(sees(n, "fs"));
    CHECK_FALSE(sees(n, "git"));
    CHECK(servers_of(narrowed(p, {})) == servers_of(p));
    CHECK(servers_of(narrowed(p, {"fs", "git"})).empty());
}
