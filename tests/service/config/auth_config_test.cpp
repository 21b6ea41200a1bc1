// auth.oauth in the configuration: what it reads, its defaults, and the error that names each
// mistake (a resource that is not absolute or not https, HMAC or "none" algorithms, a mapping to a
// principal that does not exist, a principal left without any way in).
#include "service/config/config.hpp"
#include "service/config/summary.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>

using namespace airlock;
using namespace airlock::service;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view grants = R"yaml(apiVersion: airlock/v1
kind: Agent
metadata: { name: g, version: "1" }
spec:
  tools:
    - ref: tool://fs/read
      mutates: false
  budgets: {}
)yaml";

// A configuration with one principal served by OAuth only, and `oauth` as the auth.oauth mapping.
struct oauth_workspace {
    airlock::testing::temp_dir dir{"airlock-auth-config-test"};

    fs::path write(std::string const& name, std::string_view text) const {
        auto p = dir.path() / name;
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << text;
        fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
        return p;
    }
    core::result<config> load(std::string const& oauth, std::string const& principal_extra = "") const {
        write("grants.yaml", grants);
        auto file = write("airlock.yaml", "principals:\n  - name: alice\n    manifest: grants.yaml\n" + principal_extra +
                                              "auth:\n  oauth:\n" + oauth);
        return load_config(file, environment_from({}));
    }
    std::string problem(std::string const& oauth, std::string const& principal_extra = "") const {
        auto c = load(oauth, principal_extra);
        return c ? std::string() : c.error().code + ": " + c.error().message;
    }
};

std::string const minimal = "    resource: https://airlock.example.com/mcp\n"
                            "    issuer: https://idp.example.com/realms/a\n"
                            "    principals: { user-1: alice }\n";

}  // namespace

TEST_CASE("auth.oauth: a minimal section reads with its defaults, and its principal needs no bearer token") {
    oauth_workspace w;
    auto c = w.load(minimal);
    REQUIRE(c);
    REQUIRE(c->auth.oauth);
    auto const& o = *c->auth.oauth;
    CHECK(o.resource == "https://airlock.example.com/mcp");
    REQUIRE(o.issuers.size() == 1);
    CHECK(o.issuers[0].issuer == "https://idp.example.com/realms/a");
    CHECK(o.audiences == std::vector<std::string>{"https://airlock.example.com/mcp"});  // default: the resource
    CHECK(o.algorithms == std::vector<std::string>{"RS256", "PS256", "ES256", "EdDSA"});
    CHECK(o.clock_skew == std::chrono::seconds(60));
    CHECK(o.principal_claim == "sub");
    CHECK(o.principals.at("user-1") == "alice");
    REQUIRE(c->principals.size() == 1);
    CHECK(c->principals[0].token.empty());
    // Without auth.oauth, the same principal needs a token, as always.
    w.write("grants.yaml", grants);
    auto plain = load_config(w.write("plain.yaml", "principals:\n  - name: alice\n    manifest: grants.yaml\n"), environment_from({}));
    REQUIRE_FALSE(plain);
    CHECK(plain.error().message == "principals[0] needs token_file or token_env (the token itself is never written in the "
                                   "configuration)");
}

TEST_CASE("auth.oauth: every field reads as written") {
    oauth_workspace w;
    auto c = w.load("    resource: http://127.0.0.1:8080/mcp\n"
                    "    issuers:\n"
                    "      - http://127.0.0.1:9000\n"
                    "      - issuer: https://idp.example.com\n"
                    "        tls: { verify: true }\n"
                    "    audience: [api://airlock, http://127.0.0.1:8080/mcp]\n"
                    "    scopes_supported: [mcp:tools, mcp:admin]\n"
                    "    required_scopes: mcp:tools\n"
                    "    algorithms: [ES256, EdDSA]\n"
                    "    clock_skew: 30s\n"
                    "    jwks_refresh: 1m\n"
                    "    jwks_max_age: 2h\n"
                    "    principal_claim: groups\n"
                    "    principals: { tool-users: alice }\n");
    REQUIRE(c);
    auto const& o = *c->auth.oauth;
    CHECK(o.issuers.size() == 2);
    CHECK(o.audiences == std::vector<std::string>{"api://airlock", "http://127.0.0.1:8080/mcp"});
    CHECK(o.scopes_supported == std::vector<std::string>{"mcp:tools", "mcp:admin"});
    CHECK(o.required_scopes == std::vector<std::string>{"mcp:tools"});
    CHECK(o.algorithms == std::vector<std::string>{"ES256", "EdDSA"});
    CHECK(o.clock_skew == std::chrono::seconds(30));
    CHECK(o.jwks_refresh == std::chrono::minutes(1));
    CHECK(o.jwks_max_age == std::chrono::hours(2));
    CHECK(o.principal_claim == "groups");
    // An issuer egress does not name is warned about: its keys could never be fetched.
    bool warned = false;
    for (auto const& wmsg : c->warnings) warned = warned || wmsg.find("is not in egress") != std::string::npos;
    CHECK(warned);
}

TEST_CASE("auth.oauth: each mistake is refused with a message naming the field") {
    oauth_workspace w;
    struct row {
        std::string yaml;
        std::string expected;
    };
    std::string const issuer = "    issuer: https://idp.example.com\n    principals: { u: alice }\n";
    std::string const resource = "    resource: https://airlock.example.com/mcp\n";
    row const rows[] = {
        {issuer, "missing_field: auth.oauth needs resource"},
        {"    resource: /mcp\n" + issuer, "invalid_url: auth.oauth.resource"},
        {"    resource: http://airlock.example.com/mcp\n" + issuer, "must be https://"},
        {"    resource: https://airlock.example.com/mcp#x\n" + issuer, "without a query or a fragment"},
        {resource + "    principals: { u: alice }\n", "missing_field: auth.oauth needs issuer"},
        {resource + "    issuer: http://idp.example.com\n    principals: { u: alice }\n", "auth.oauth.issuer is \"http://idp.example.com\"; an issuer must be https://"},
        {resource + "    issuer: https://a.example\n    issuers: [https://b.example]\n    principals: { u: alice }\n",
         "conflicting_fields: auth.oauth sets both issuer and issuers"},
        {resource + "    issuers: [https://a.example, https://a.example]\n    principals: { u: alice }\n",
         "duplicate_issuer: auth.oauth.issuers[1]"},
        {resource + "    issuer: https://a.example\n", "missing_field: auth.oauth needs principals"},
        {resource + issuer + "    algorithms: [HS256]\n", "auth.oauth.algorithms[0] is \"HS256\"; unsigned and HMAC-signed tokens are never accepted"},
        {resource + issuer + "    algorithms: [none]\n", "never accepted"},
        {resource + issuer + "    algorithms: [RS257]\n", "expected one of: RS256"},
        {resource + issuer + "    clock_skew: 1h\n", "auth.oauth.clock_skew is 1h; at most 5m"},
        {resource + issuer + "    jwks_refresh: 10m\n    jwks_max_age: 5m\n", "jwks_max_age (5m) is shorter than jwks_refresh (10m)"},
        {resource + issuer + "    scopes_supported: [\"a b\"]\n", "holds no spaces"},
        {resource + issuer + "    colour: blue\n", "auth.oauth.colour"},
        {resource + issuer + "    introspection: { client_id: rs, client_secret: s3cret-inline }\n",
         "auth.oauth.introspection.client_secret must be {file: PATH} or {env: NAME}; a secret is never written in the configuration"},
        {resource + issuer + "    introspection: { client_secret: { env: RS_SECRET } }\n",
         "missing_field: auth.oauth.introspection needs client_id"},
        {resource + issuer + "    introspection: { client_id: rs, client_secret: { env: RS_UNSET } }\n",
         "auth.oauth.introspection.client_secret.env names RS_UNSET, which is not set"},
        {resource + issuer + "    introspection: { issuer: https://x.example, client_id: rs, client_secret: { env: RS_UNSET } }\n",
         "auth.oauth.introspection.issuer is \"https://x.example\", which auth.oauth's issuers do not list"},
    };
    for (auto const& r : rows) {
        INFO(r.yaml);
        CHECK_THAT(w.problem(r.yaml), Catch::Contains(r.expected));
    }
    // A mapping to a principal nobody defined (alice has a token of her own here).
    w.write("alice.token", "alice-0123456789abcdef-SECRET\n");
    CHECK(w.problem(resource + "    issuer: https://a.example\n    principals: { u: mallory }\n",
                    "    token_file: alice.token\n") ==
          "unknown_principal: auth.oauth.principals.u names \"mallory\", which the principals section does not define");
}

TEST_CASE("auth.oauth.upstream_scopes: a scope per upstream, advertised beside the required ones; mistakes named") {
    oauth_workspace w;
    std::string const upstream = "upstreams:\n  - name: fs\n    stdio: { argv: [/bin/cat] }\n";
    auto c = w.load(minimal + "    required_scopes: mcp:tools\n    upstream_scopes: { fs: \"mcp:fs\" }\n", upstream);
    INFO((c ? std::string() : c.error().message));
    REQUIRE(c);
    auto const& o = *c->auth.oauth;
    CHECK(o.upstream_scopes == std::map<std::string, std::string>{{"fs", "mcp:fs"}});
    CHECK(o.scopes_supported == std::vector<std::string>{"mcp:tools", "mcp:fs"});
    CHECK(summary(*c).find("upstream fs needs scope mcp:fs") != std::string::npos);

    CHECK(w.problem(minimal + "    upstream_scopes: { git: \"mcp:git\" }\n", upstream) ==
          "invalid_name: auth.oauth.upstream_scopes.git names \"git\", which the upstreams section does not define");
    CHECK_THAT(w.problem(minimal + "    upstream_scopes: { fs: \"mcp fs\" }\n", upstream), Catch::Contains("holds no spaces"));
    CHECK_THAT(w.problem(minimal + "    upstream_scopes: { fs: [a, b] }\n", upstream),
               Catch::Contains("auth.oauth.upstream_scopes.fs names 2 scopes; an upstream needs exactly one"));
    CHECK_THAT(w.problem(minimal + "    upstream_scopes: [fs]\n", upstream), Catch::Contains("auth.oauth.upstream_scopes"));
}
