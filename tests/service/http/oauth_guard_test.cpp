// The OAuth side of the door: a token that validates is served as the principal its claim maps to,
// with the identity the journal records; every other token gets the status and challenge a client
// acts on (401 invalid_token, 403 insufficient_scope, 403 for a subject nobody mapped), counted by
// result, and an unknown key id asks the fetcher for the issuer's keys again.
#include "service/http/oauth_guard.hpp"

#include "tests/support/jwt_signer.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>

using namespace airlock;
using namespace airlock::service;
using airlock::testing::signing_key;
namespace json = boost::json;

namespace {

constexpr char const* issuer = "https://as.example";
constexpr char const* resource = "https://mcp.example/mcp";
constexpr char const* metadata = "https://mcp.example/.well-known/oauth-protected-resource/mcp";
constexpr std::int64_t now_s = 1796083200;  // 2026-12-01T00:00:00Z

signing_key const& key() {
    static auto k = signing_key::rsa(2048);
    return k;
}

struct guarded {
    std::map<std::string, int> results;
    std::vector<std::string> refetched;
    std::shared_ptr<jose::key_set const> keys;
    oauth_guard guard;

    explicit guarded(std::vector<std::string> required_scopes = {}, std::string claim = "sub")
        : keys(std::make_shared<jose::key_set const>(
              jose::parse_jwks(testing::jwks_json({key().public_jwk("k1", "RS256")})).value())),
          guard(options(std::move(required_scopes), std::move(claim)),
                [this](std::string_view iss) { return iss == issuer ? keys : nullptr; },
                [] { return std::chrono::system_clock::time_point(std::chrono::seconds(now_s)); },
                [this](std::string_view r) { ++results[std::string(r)]; },
                [this](std::string const& iss) { refetched.push_back(iss); }) {}

    static oauth_guard_options options(std::vector<std::string> required_scopes, std::string claim) {
        oauth_guard_options o;
        o.rules.issuers = {issuer};
        o.rules.audiences = {resource};
        o.principal_claim = std::move(claim);
        o.principals = {{"user-1", "alice"}, {"tool-users", "tools"}, {"admins", "ops"}};
        o.required_scopes = std::move(required_scopes);
        o.resource_metadata_url = metadata;
        return o;
    }
};

json::object claims(json::object extra = {}) {
    json::object c{{"iss", issuer}, {"sub", "user-1"}, {"aud", resource}, {"exp", now_s + 300},
                   {"iat", now_s - 10}, {"jti", "tok-17"}, {"scope", "mcp:tools mcp:read"}};
    for (auto& [k, v] : extra) c[k] = v;
    return c;
}

std::string token(json::object payload = claims(), std::string kid = "k1") {
    return testing::sign_token(key(), {{"alg", "RS256"}, {"typ", "at+jwt"}, {"kid", kid}}, payload);
}

}  // namespace

TEST_CASE("oauth guard: a valid token is served as its mapped principal, with the identity the journal records") {
    guarded g;
    auto v = g.guard.check(token(), "192.0.2.7");
    REQUIRE(std::holds_alternative<door_admitted>(v));
    auto const& a = std::get<door_admitted>(v);
    CHECK(a.principal == "alice");
    CHECK_FALSE(a.anonymous);
    REQUIRE(a.identity);
    CHECK(a.identity->issuer == issuer);
    CHECK(a.identity->subject == "user-1");
    CHECK(a.identity->token_id == "tok-17");
    CHECK(g.results == std::map<std::string, int>{{"ok", 1}});
}

TEST_CASE("oauth guard: a token that does not validate is a 401 invalid_token that says where to log in, never quoting the token") {
    guarded g;
    std::string const bad[] = {
        token(claims({{"exp", now_s - 600}})),                       // expired
        token(claims({{"aud", "https://other.example/mcp"}})),       // another resource's
        token(claims({{"iss", "https://evil.example"}})),            // another issuer's
        testing::unsigned_token(claims()),                           // alg none
        testing::hs256_token(key().public_pem(), {{"alg", "HS256"}, {"kid", "k1"}}, claims()),  // confusion
        testing::with_payload(token(), claims({{"sub", "admin"}})),  // tampered
        "not.a.jwt",
    };
    for (auto const& t : bad) {
        INFO(t.substr(0, 40));
        auto v = g.guard.check(t, "192.0.2.7");
        REQUIRE(std::holds_alternative<door_refusal>(v));
        auto const& r = std::get<door_refusal>(v);
        CHECK(r.kind == door_refusal_kind::invalid_token);
        CHECK(r.status == 401);
        CHECK(r.code == core::errc::unauthorized);
        CHECK_THAT(r.www_authenticate, Catch::StartsWith(R"(Bearer realm="airlock", error="invalid_token", error_description=")"));
        CHECK_THAT(r.www_authenticate, Catch::Contains(std::string("resource_metadata=\"") + metadata + "\""));
        CHECK(r.log);
        CHECK(r.log_message.find(t) == std::string::npos);
        CHECK(r.detail.find(t) == std::string::npos);
        CHECK(r.www_authenticate.find(t) == std::string::npos);
    }
    CHECK(g.results.at("expired") == 1);
    CHECK(g.results.at("bad_audience") == 1);
    CHECK(g.results.at("bad_issuer") == 1);
    CHECK(g.results.at("bad_alg") == 2);
    CHECK(g.results.at("bad_signature") == 1);
    CHECK(g.results.at("malformed") == 1);
    CHECK_FALSE(g.results.contains("ok"));
}

TEST_CASE("oauth guard: an unknown key id is refused and asks for the issuer's keys again") {
    guarded g;
    auto v = g.guard.check(token(claims(), "rotated-2"), "192.0.2.7");
    REQUIRE(std::holds_alternative<door_refusal>(v));
    CHECK(std::get<door_refusal>(v).status == 401);
    CHECK(g.refetched == std::vector<std::string>{issuer});
    CHECK(g.results.at("unknown_kid") == 1);
}

TEST_CASE("oauth guard: a missing scope is a 403 insufficient_scope naming every scope the request needs (step-up)") {
    guarded g({"mcp:tools", "mcp:write"});
    auto v = g.guard.check(token(), "192.0.2.7");
    REQUIRE(std::holds_alternative<door_refusal>(v));
    auto const& r = std::get<door_refusal>(v);
    CHECK(r.kind == door_refusal_kind::insufficient_scope);
    CHECK(r.status == 403);
    CHECK(r.code == core::errc::forbidden);
    CHECK(r.www_authenticate == std::string(R"(Bearer realm="airlock", error="insufficient_scope", scope="mcp:tools mcp:write", resource_metadata=")") +
                                    metadata + "\"");
    CHECK_THAT(r.detail, Catch::Contains("mcp:write"));
    CHECK(g.results.at("insufficient_scope") == 1);
    // scp (an array) counts as well as scope.
    auto with_scp = claims({{"scp", json::array{"mcp:tools", "mcp:write"}}});
    with_scp.erase("scope");
    auto scp = g.guard.check(token(with_scp), "192.0.2.7");
    CHECK(std::holds_alternative<door_admitted>(scp));
    // And the 401 challenge names the scopes too.
    CHECK(g.guard.challenge() == std::string("resource_metadata=\"") + metadata + "\", scope=\"mcp:tools mcp:write\"");
}

TEST_CASE("oauth guard: a subject no principal is mapped to is a 403 and a log line, never another principal's grants") {
    guarded g;
    auto v = g.guard.check(token(claims({{"sub", "user-2"}})), "192.0.2.7");
    REQUIRE(std::holds_alternative<door_refusal>(v));
    auto const& r = std::get<door_refusal>(v);
    CHECK(r.kind == door_refusal_kind::unmapped_subject);
    CHECK(r.status == 403);
    CHECK(r.www_authenticate.empty());
    CHECK_THAT(r.log_message, Catch::Contains("user-2"));
    CHECK_THAT(r.log_message, Catch::Contains("auth.oauth.principals"));
    CHECK(g.results.at("unmapped_subject") == 1);
}

TEST_CASE("oauth guard: a group claim maps by its one mapped value; two mapped values choose neither") {
    guarded g({}, "groups");
    auto one = g.guard.check(token(claims({{"groups", json::array{"staff", "tool-users"}}})), "192.0.2.7");
    REQUIRE(std::holds_alternative<door_admitted>(one));
    CHECK(std::get<door_admitted>(one).principal == "tools");
    auto two = g.guard.check(token(claims({{"groups", json::array{"tool-users", "admins"}}})), "192.0.2.7");
    REQUIRE(std::holds_alternative<door_refusal>(two));
    CHECK(std::get<door_refusal>(two).kind == door_refusal_kind::unmapped_subject);
    auto none = g.guard.check(token(claims()), "192.0.2.7");  // no groups claim at all
    CHECK(std::get<door_refusal>(none).kind == door_refusal_kind::unmapped_subject);
}

TEST_CASE("oauth guard: the door's verifier is the guard's check") {
    auto g = std::make_shared<guarded>();
    auto verify = oauth_guard::verifier(std::shared_ptr<oauth_guard const>(g, &g->guard));
    auto v = verify(token(), "192.0.2.7");
    REQUIRE(std::holds_alternative<door_admitted>(v));
    CHECK(std::get<door_admitted>(v).principal == "alice");
}
