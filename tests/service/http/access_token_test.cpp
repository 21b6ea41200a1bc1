// JWT access-token validation as the resource server does it: every refusal (token_fault) on a token
// that is wrong in exactly that one way, the order the checks run in, and the claims of a good token.
#include "service/http/access_token.hpp"

#include "tests/support/jwt_signer.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>

using namespace airlock;
using namespace airlock::service;
using airlock::testing::signing_key;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

constexpr char const* issuer = "https://as.example";
constexpr char const* audience = "https://mcp.example/mcp";
// 2026-12-01T00:00:00Z
constexpr std::int64_t now_s = 1796083200;
auto const now = std::chrono::system_clock::time_point(std::chrono::seconds(now_s));

signing_key const& rsa_key() {
    static auto k = signing_key::rsa(2048);
    return k;
}
signing_key const& p256_key() {
    static auto k = signing_key::ec("P-256");
    return k;
}
signing_key const& ed_key() {
    static auto k = signing_key::ed25519();
    return k;
}
signing_key const& stranger_key() {
    static auto k = signing_key::ed25519();
    return k;
}

std::shared_ptr<jose::key_set const> keys_of(std::vector<json::object> jwks) {
    auto set = jose::parse_jwks(testing::jwks_json(jwks));
    REQUIRE(set.has_value());
    REQUIRE(set->skipped.empty());
    return std::make_shared<jose::key_set const>(std::move(*set));
}

// The issuer's published keys: one per algorithm family the default rules allow.
std::shared_ptr<jose::key_set const> issuer_keys() {
    static auto set = keys_of({rsa_key().public_jwk("rsa-1"), p256_key().public_jwk("ec-1", "ES256"),
                               ed_key().public_jwk("ed-1")});
    return set;
}

key_source source(std::shared_ptr<jose::key_set const> set = issuer_keys()) {
    return [set](std::string_view iss) -> std::shared_ptr<jose::key_set const> {
        return iss == issuer ? set : nullptr;
    };
}

token_rules rules() {
    token_rules r;
    r.issuers = {"https://other.example", issuer};
    r.audiences = {audience};
    return r;
}

json::object good_claims() {
    return {{"iss", issuer},        {"sub", "alice"},     {"aud", audience},          {"exp", now_s + 300},
            {"iat", now_s - 10},    {"nbf", now_s - 10},  {"jti", "token-1"},         {"client_id", "agent-app"},
            {"scope", "tools:read tools:call"}};
}

json::object header(char const* alg = "EdDSA", char const* kid = "ed-1") {
    json::object h{{"alg", alg}, {"typ", "at+jwt"}};
    if (kid) h["kid"] = kid;
    return h;
}

std::string token(json::object const& claims = good_claims(), json::object const& h = header()) {
    return testing::sign_token(ed_key(), h, claims);
}

std::variant<access_claims, token_refusal> check(std::string const& t, token_rules const& r = rules(),
                                                 key_source const& ks = source(),
                                                 std::chrono::system_clock::time_point at = now) {
    return validate_access_token(t, r, ks, at);
}

access_claims accepted(std::variant<access_claims, token_refusal> v) {
    if (auto* r = std::get_if<token_refusal>(&v)) FAIL("refused as " << to_string(r->fault) << ": " << r->detail);
    return std::get<access_claims>(std::move(v));
}

token_refusal refused(std::variant<access_claims, token_refusal> v) {
    REQUIRE(std::holds_alternative<token_refusal>(v));
    return std::get<token_refusal>(std::move(v));
}

// Refused for `fault`, with a detail that repeats neither the token nor its signature.
token_refusal refused_as(std::string const& t, token_fault fault, token_rules const& r = rules(),
                         key_source const& ks = source(), std::chrono::system_clock::time_point at = now) {
    auto refusal = refused(check(t, r, ks, at));
    INFO(refusal.detail);
    CHECK(to_string(refusal.fault) == to_string(fault));
    CHECK_FALSE(refusal.detail.empty());
    if (auto dot = t.rfind('.'); dot != std::string::npos && t.size() - dot > 8)
        CHECK(refusal.detail.find(t.substr(dot + 1, 8)) == std::string::npos);
    if (t.size() > 16) CHECK(refusal.detail.find(t.substr(0, 16)) == std::string::npos);
    return refusal;
}

json::object without(json::object o, std::string_view name) {
    o.erase(name);
    return o;
}

template <class V>
json::object with(json::object o, std::string_view name, V&& value) {
    o[name] = json::value(std::forward<V>(value));
    return o;
}

}  // namespace

// ---- a good token ----

TEST_CASE("a good access token yields its issuer, subject, jti, client, scopes, claims and expiry", "[jwt]") {
    auto c = accepted(check(token()));
    CHECK(c.issuer == issuer);
    CHECK(c.subject == "alice");
    CHECK(c.token_id == "token-1");
    CHECK(c.client_id == "agent-app");
    CHECK(c.scopes == std::vector<std::string>{"tools:read", "tools:call"});
    CHECK(c.claims.at("aud") == audience);
    CHECK(c.expires == now + 300s);
}

TEST_CASE("tokens signed with RS256, PS256, ES256 and EdDSA are accepted under the default rules", "[jwt]") {
    CHECK(accepted(check(testing::sign_token(rsa_key(), header("RS256", "rsa-1"), good_claims()))).subject == "alice");
    CHECK(accepted(check(testing::sign_token(rsa_key(), header("PS256", "rsa-1"), good_claims()))).subject == "alice");
    CHECK(accepted(check(testing::sign_token(p256_key(), header("ES256", "ec-1"), good_claims()))).subject == "alice");
    CHECK(accepted(check(token())).subject == "alice");
}

TEST_CASE("without a jti the token id is sha256: and 16 hex digits of the token's hash", "[jwt]") {
    auto t = token(without(good_claims(), "jti"));
    auto c = accepted(check(t));
    CHECK(c.token_id.rfind("sha256:", 0) == 0);
    CHECK(c.token_id.size() == 7 + 16);
    auto other = accepted(check(token(with(without(good_claims(), "jti"), "sub", "bob"))));
    CHECK(other.token_id != c.token_id);
    CHECK(accepted(check(t)).token_id == c.token_id);
}

TEST_CASE("the client is client_id, else azp", "[jwt]") {
    CHECK(accepted(check(token(with(without(good_claims(), "client_id"), "azp", "browser")))).client_id == "browser");
    CHECK(accepted(check(token(with(good_claims(), "azp", "browser")))).client_id == "agent-app");
    CHECK(accepted(check(token(without(good_claims(), "client_id")))).client_id.empty());
}

TEST_CASE("scopes come from scope, else from scp as an array or a string", "[jwt]") {
    auto no_scope = without(good_claims(), "scope");
    CHECK(accepted(check(token(with(no_scope, "scp", json::array{"a", "b"})))).scopes == std::vector<std::string>{"a", "b"});
    CHECK(accepted(check(token(with(no_scope, "scp", "c  d")))).scopes == std::vector<std::string>{"c", "d"});
    CHECK(accepted(check(token(with(good_claims(), "scp", json::array{"ignored"})))).scopes ==
          std::vector<std::string>{"tools:read", "tools:call"});
    CHECK(accepted(check(token(no_scope))).scopes.empty());
    refused_as(token(with(no_scope, "scp", json::array{"a", 1})), token_fault::malformed);
    refused_as(token(with(good_claims(), "scope", json::array{"a"})), token_fault::malformed);
}

TEST_CASE("typ may be absent, JWT, at+jwt or application/at+jwt in any case; anything else is malformed", "[jwt]") {
    for (auto typ : {"JWT", "jwt", "at+jwt", "AT+JWT", "application/at+jwt", "Application/AT+JWT"}) {
        INFO(typ);
        CHECK(accepted(check(token(good_claims(), with(header(), "typ", typ)))).subject == "alice");
    }
    CHECK(accepted(check(token(good_claims(), without(header(), "typ")))).subject == "alice");
    refused_as(token(good_claims(), with(header(), "typ", "dpop+jwt")), token_fault::malformed);
    refused_as(token(good_claims(), with(header(), "typ", "JOSE")), token_fault::malformed);
    refused_as(token(good_claims(), with(header(), "typ", 1)), token_fault::malformed);
}

// ---- each fault ----

TEST_CASE("a token that is not a compact JWS is refused as malformed", "[jwt]") {
    // refused_as checks the fault and that the detail repeats no part of the token; each detail says why.
    CHECK_THAT(refused_as("not-a-token", token_fault::malformed).detail, Catch::Contains("not three dot-separated parts"));
    CHECK_THAT(refused_as("", token_fault::malformed).detail, Catch::Contains("not three dot-separated parts"));
    CHECK_THAT(refused_as("a.b.c.d.e", token_fault::malformed).detail, Catch::Contains("an encrypted JWE"));
    CHECK_THAT(refused_as(token(good_claims(), with(header(), "crit", json::array{"x"})), token_fault::malformed).detail,
               Catch::Contains("has crit"));
}

TEST_CASE("a token over 16 KiB is refused as malformed", "[jwt]") {
    auto big = with(good_claims(), "pad", std::string(16384, 'p'));
    refused_as(token(big), token_fault::malformed);
    auto fits = with(good_claims(), "pad", std::string(8000, 'p'));
    CHECK(accepted(check(token(fits))).subject == "alice");
}

TEST_CASE("a token with alg none is refused as bad_alg", "[jwt]") {
    CHECK_THAT(refused_as(testing::unsigned_token(good_claims()), token_fault::bad_alg).detail,
               Catch::Contains("alg \"none\" is not one airlock verifies"));
}

TEST_CASE("an HS256 token keyed with the issuer's RSA public key is refused as bad_alg", "[jwt]") {
    auto pem = rsa_key().public_pem();
    CHECK_THAT(refused_as(testing::hs256_token(pem, header("HS256", "rsa-1"), good_claims()), token_fault::bad_alg).detail,
               Catch::Contains("alg \"HS256\" is not one airlock verifies"));
}

TEST_CASE("a well-signed token of an alg the rules do not allow is refused as bad_alg", "[jwt]") {
    auto rs384 = testing::sign_token(rsa_key(), header("RS384", "rsa-1"), good_claims());
    refused_as(rs384, token_fault::bad_alg);
    auto r = rules();
    r.algorithms.push_back(jose::alg::rs384);
    CHECK(accepted(check(rs384, r)).subject == "alice");
    auto only_rsa = rules();
    only_rsa.algorithms = {jose::alg::rs256};
    refused_as(token(), token_fault::bad_alg, only_rsa);
}

TEST_CASE("a token whose kid names a key of another alg is refused as bad_alg", "[jwt]") {
    // ec-1 is published with alg ES256; the header claims the P-256 key is for EdDSA.
    CHECK_THAT(refused_as(testing::sign_token(ed_key(), header("EdDSA", "ec-1"), good_claims()), token_fault::bad_alg).detail,
               Catch::Contains("the key \"ec-1\" may not verify EdDSA"));
}

TEST_CASE("a token from an issuer that is not configured is refused as bad_issuer", "[jwt]") {
    auto r = refused_as(token(with(good_claims(), "iss", "https://evil.example")), token_fault::bad_issuer);
    CHECK(r.issuer == "https://evil.example");
    CHECK(r.kid == "ed-1");
    refused_as(token(without(good_claims(), "iss")), token_fault::bad_issuer);
    refused_as(token(with(good_claims(), "iss", "https://as.example/")), token_fault::bad_issuer);
    refused_as(token(with(good_claims(), "iss", "HTTPS://AS.EXAMPLE")), token_fault::bad_issuer);
    refused_as(token(with(good_claims(), "iss", 7)), token_fault::bad_issuer);
}

TEST_CASE("a token whose kid the issuer does not publish is refused as unknown_kid", "[jwt]") {
    auto r = refused_as(testing::sign_token(stranger_key(), header("EdDSA", "ed-2"), good_claims()), token_fault::unknown_kid);
    CHECK(r.kid == "ed-2");
    CHECK(r.issuer == issuer);
}

TEST_CASE("a token of an issuer whose keys are not known yet is refused as unknown_kid", "[jwt]") {
    auto r = rules();
    r.issuers.push_back("https://later.example");
    CHECK_THAT(refused_as(token(with(good_claims(), "iss", "https://later.example")), token_fault::unknown_kid, r).detail,
               Catch::Contains("\"https://later.example\" are not known yet"));
    CHECK_THAT(refused_as(token(), token_fault::unknown_kid, rules(), key_source{}).detail,
               Catch::Contains("\"https://as.example\" are not known yet"));
}

TEST_CASE("a token without kid uses the one key that fits its alg; with two candidates it is unknown_kid", "[jwt]") {
    CHECK(accepted(check(token(good_claims(), header("EdDSA", nullptr)))).subject == "alice");
    auto two = keys_of({ed_key().public_jwk("ed-1"), stranger_key().public_jwk("ed-2"), rsa_key().public_jwk("rsa-1")});
    refused_as(token(good_claims(), header("EdDSA", nullptr)), token_fault::unknown_kid, rules(), source(two));
    // Two Ed25519 keys do not make an RS256 token ambiguous.
    CHECK(accepted(check(testing::sign_token(rsa_key(), header("RS256", nullptr), good_claims()), rules(), source(two)))
              .subject == "alice");
    auto no_ed = keys_of({rsa_key().public_jwk("rsa-1")});
    refused_as(token(good_claims(), header("EdDSA", nullptr)), token_fault::unknown_kid, rules(), source(no_ed));
}

TEST_CASE("a token signed by a stranger under a published kid is refused as bad_signature", "[jwt]") {
    auto r = refused_as(testing::sign_token(stranger_key(), header(), good_claims()), token_fault::bad_signature);
    CHECK_THAT(r.detail, Catch::Contains("signature does not verify with key"));
}

TEST_CASE("a token whose payload was changed after signing is refused as bad_signature", "[jwt]") {
    auto t = token();
    CHECK(accepted(check(t)).subject == "alice");  // the same token, unchanged, is good
    auto sub = refused_as(testing::with_payload(t, with(good_claims(), "sub", "mallory")), token_fault::bad_signature);
    CHECK_THAT(sub.detail, Catch::Contains("signature does not verify"));
    CHECK_THAT(sub.detail, !Catch::Contains("mallory"));
    auto exp = refused_as(testing::with_payload(t, with(good_claims(), "exp", now_s + 86400)), token_fault::bad_signature);
    CHECK_THAT(exp.detail, Catch::Contains("signature does not verify"));
}

TEST_CASE("a token whose header was changed after signing is refused as bad_signature", "[jwt]") {
    auto t = token();
    auto typ = refused_as(testing::with_header(t, with(header(), "typ", "JWT")), token_fault::bad_signature);
    CHECK_THAT(typ.detail, Catch::Contains("signature does not verify"));
    auto rs = testing::sign_token(rsa_key(), header("RS256", "rsa-1"), good_claims());
    CHECK(accepted(check(rs)).subject == "alice");
    // The same RSA signature read as PS256: the detail names the alg the header claims.
    auto ps = refused_as(testing::with_header(rs, header("PS256", "rsa-1")), token_fault::bad_signature);
    CHECK_THAT(ps.detail, Catch::Contains("PS256 signature does not verify with key \"rsa-1\""));
}

TEST_CASE("an expired token is refused as expired, with the skew as grace", "[jwt]") {
    refused_as(token(with(good_claims(), "exp", now_s - 61)), token_fault::expired);
    CHECK(accepted(check(token(with(good_claims(), "exp", now_s - 59)))).subject == "alice");
    refused_as(token(with(good_claims(), "exp", now_s - 60)), token_fault::expired);
    auto strict = rules();
    strict.skew = 0s;
    refused_as(token(with(good_claims(), "exp", now_s)), token_fault::expired, strict);
    CHECK(accepted(check(token(with(good_claims(), "exp", now_s + 1)), strict)).subject == "alice");
}

TEST_CASE("a token without exp, or with exp that is not a number, is malformed", "[jwt]") {
    refused_as(token(without(good_claims(), "exp")), token_fault::malformed);
    refused_as(token(with(good_claims(), "exp", std::to_string(now_s + 300))), token_fault::malformed);
    CHECK(accepted(check(token(with(good_claims(), "exp", static_cast<double>(now_s) + 300.5)))).expires >= now + 300s);
}

TEST_CASE("a token not valid before a time in the future is refused as not_yet_valid, with the skew as grace", "[jwt]") {
    refused_as(token(with(good_claims(), "nbf", now_s + 61)), token_fault::not_yet_valid);
    CHECK(accepted(check(token(with(good_claims(), "nbf", now_s + 60)))).subject == "alice");
    refused_as(token(with(good_claims(), "iat", now_s + 61)), token_fault::not_yet_valid);
    CHECK(accepted(check(token(with(good_claims(), "iat", now_s + 59)))).subject == "alice");
    refused_as(token(with(good_claims(), "nbf", "soon")), token_fault::malformed);
    CHECK(accepted(check(token(without(without(good_claims(), "nbf"), "iat")))).subject == "alice");
}

TEST_CASE("the same token is accepted or refused as the clock moves past both edges of the skew", "[jwt]") {
    auto t = token(with(with(good_claims(), "nbf", now_s), "exp", now_s + 100));
    refused_as(t, token_fault::not_yet_valid, rules(), source(), now - 61s);
    CHECK(accepted(check(t, rules(), source(), now - 59s)).subject == "alice");
    CHECK(accepted(check(t, rules(), source(), now + 159s)).subject == "alice");
    refused_as(t, token_fault::expired, rules(), source(), now + 161s);
}

TEST_CASE("a token for another audience is refused as bad_audience", "[jwt]") {
    CHECK(refused_as(token(with(good_claims(), "aud", "https://other.example/mcp")), token_fault::bad_audience).detail ==
          "the token's audience is not this server");
    CHECK(refused_as(token(without(good_claims(), "aud")), token_fault::bad_audience).detail == "the token names no audience");
    CHECK(refused_as(token(with(good_claims(), "aud", json::array{})), token_fault::bad_audience).detail ==
          "the token names no audience");
    CHECK_THAT(refused_as(token(with(good_claims(), "aud", 5)), token_fault::bad_audience).detail, Catch::Contains("audience"));
    auto none = rules();
    none.audiences.clear();
    CHECK(refused_as(token(), token_fault::bad_audience, none).detail == "the token's audience is not this server");
}

TEST_CASE("aud may be a string or an array that contains one of the configured audiences", "[jwt]") {
    CHECK(accepted(check(token(with(good_claims(), "aud", json::array{"https://other.example", audience})))).subject ==
          "alice");
    refused_as(token(with(good_claims(), "aud", json::array{"https://other.example", "https://third.example"})),
               token_fault::bad_audience);
    auto r = rules();
    r.audiences = {"https://first.example", audience};
    CHECK(accepted(check(token(), r)).subject == "alice");
}

// ---- order ----

TEST_CASE("checks run in order: a token wrong in every way is refused for the first thing wrong", "[jwt]") {
    auto everything_wrong = with(with(with(good_claims(), "iss", "https://evil.example"), "exp", now_s - 1000),
                                 "aud", "https://other.example");
    auto stranger = [&](json::object const& c, json::object const& h = header()) {
        return testing::sign_token(stranger_key(), h, c);
    };
    auto only_rsa = rules();
    only_rsa.algorithms = {jose::alg::rs256};
    CHECK_THAT(refused_as(stranger(everything_wrong), token_fault::bad_alg, only_rsa).detail, Catch::Contains("is not allowed"));
    CHECK_THAT(refused_as(stranger(everything_wrong), token_fault::bad_issuer).detail,
               Catch::Contains("\"https://evil.example\" is not configured"));
    auto good_iss = with(everything_wrong, "iss", issuer);
    refused_as(stranger(good_iss, header("EdDSA", "nobody")), token_fault::unknown_kid);
    refused_as(stranger(good_iss), token_fault::bad_signature);
    refused_as(token(with(good_iss, "nbf", now_s + 1000)), token_fault::expired);
    refused_as(token(with(with(good_iss, "exp", now_s + 300), "nbf", now_s + 1000)), token_fault::not_yet_valid);
    CHECK(refused_as(token(with(good_iss, "exp", now_s + 300)), token_fault::bad_audience).detail ==
          "the token's audience is not this server");
}

TEST_CASE("every fault has a stable label", "[jwt]") {
    CHECK(to_string(token_fault::malformed) == "malformed");
    CHECK(to_string(token_fault::bad_alg) == "bad_alg");
    CHECK(to_string(token_fault::bad_issuer) == "bad_issuer");
    CHECK(to_string(token_fault::unknown_kid) == "unknown_kid");
    CHECK(to_string(token_fault::bad_signature) == "bad_signature");
    CHECK(to_string(token_fault::expired) == "expired");
    CHECK(to_string(token_fault::not_yet_valid) == "not_yet_valid");
    CHECK(to_string(token_fault::bad_audience) == "bad_audience");
}

TEST_CASE("a refusal's detail and log fields hold no control characters from the token", "[jwt]") {
    auto r = refused_as(token(with(good_claims(), "iss", "https://evil.example\n[fake log line]")), token_fault::bad_issuer);
    CHECK(r.detail.find('\n') == std::string::npos);
    CHECK(r.issuer.find('\n') == std::string::npos);
}

TEST_CASE("an introspection answer is checked like a JWT's claims: active, issuer, expiry, audience", "[jwt]") {
    token_rules rules;
    rules.issuers = {issuer};
    rules.audiences = {audience};
    json::object const good{{"active", true}, {"iss", issuer},        {"sub", "u-1"},       {"aud", audience},
                            {"exp", now_s + 300}, {"iat", now_s - 5}, {"scope", "mcp:tools"}, {"client_id", "c-9"}};
    auto ok = validate_introspection(good, "opaque-abc", issuer, rules, now);
    REQUIRE(std::holds_alternative<access_claims>(ok));
    auto const& c = std::get<access_claims>(ok);
    CHECK(c.subject == "u-1");
    CHECK(c.issuer == issuer);
    CHECK(c.client_id == "c-9");
    CHECK(c.scopes == std::vector<std::string>{"mcp:tools"});
    CHECK(c.token_id.rfind("sha256:", 0) == 0);  // no jti: a digest of the token, never the token
    CHECK(c.token_id.find("opaque-abc") == std::string::npos);

    auto fault_of = [&](json::object answer) {
        auto v = validate_introspection(std::move(answer), "opaque-abc", issuer, rules, now);
        REQUIRE(std::holds_alternative<token_refusal>(v));
        return std::get<token_refusal>(v).fault;
    };
    auto with = [&](json::object extra) {
        auto o = good;
        for (auto& [k, v] : extra) o[k] = v;
        return o;
    };
    auto without = [&](char const* key) {
        auto o = good;
        o.erase(key);
        return o;
    };
    CHECK(fault_of({{"active", false}}) == token_fault::inactive);
    CHECK(fault_of(without("active")) == token_fault::inactive);
    CHECK(fault_of(with({{"active", "true"}})) == token_fault::inactive);  // a string is not true
    CHECK(fault_of(with({{"iss", "https://other.example"}})) == token_fault::bad_issuer);
    CHECK(fault_of(with({{"exp", now_s - 600}})) == token_fault::expired);
    CHECK(fault_of(without("exp")) == token_fault::malformed);
    CHECK(fault_of(with({{"nbf", now_s + 600}})) == token_fault::not_yet_valid);
    CHECK(fault_of(with({{"aud", "https://other.example/mcp"}})) == token_fault::bad_audience);
    CHECK(fault_of(without("aud")) == token_fault::bad_audience);
    // Without iss the issuer asked is the issuer.
    auto no_iss = validate_introspection(without("iss"), "opaque-abc", issuer, rules, now);
    REQUIRE(std::holds_alternative<access_claims>(no_iss));
    CHECK(std::get<access_claims>(no_iss).issuer == issuer);
}
