// JOSE pieces of the resource server: strict base64url, JWKS reading (and which keys it skips),
// compact JWS parsing, and signatures of every algorithm, against tests/support/jwt_signer and
// against npm jose (tests/fixtures/oauth/jose_vectors.mjs) as an independent implementation.
#include "service/http/jose.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/jwt_signer.hpp"
#include "tests/support/peers.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace airlock;
using namespace airlock::service;
using airlock::testing::signing_key;
namespace json = boost::json;

namespace {

// Key generation costs tens of milliseconds (RSA more); one of each serves every test.
signing_key const& rsa_key() {
    static auto k = signing_key::rsa(2048);
    return k;
}
signing_key const& other_rsa_key() {
    static auto k = signing_key::rsa(2048);
    return k;
}
signing_key const& p256_key() {
    static auto k = signing_key::ec("P-256");
    return k;
}
signing_key const& p384_key() {
    static auto k = signing_key::ec("P-384");
    return k;
}
signing_key const& p521_key() {
    static auto k = signing_key::ec("P-521");
    return k;
}
signing_key const& ed_key() {
    static auto k = signing_key::ed25519();
    return k;
}

signing_key const& key_for(std::string_view alg) {
    if (alg[0] == 'R' || alg[0] == 'P') return rsa_key();
    if (alg == "ES256") return p256_key();
    if (alg == "ES384") return p384_key();
    if (alg == "ES512") return p521_key();
    return ed_key();
}

json::object claims() { return {{"iss", "https://as.example"}, {"sub", "alice"}, {"aud", "https://mcp.example"}}; }

jose::key_set one_key_set(json::object jwk) {
    auto set = jose::parse_jwks(testing::jwks_json({std::move(jwk)}));
    REQUIRE(set.has_value());
    return std::move(*set);
}

// The one reason parse_jwks gives for skipping the only key of a document.
std::string skip_reason(json::object jwk) {
    auto set = jose::parse_jwks(testing::jwks_json({std::move(jwk)}));
    REQUIRE(set.has_value());
    REQUIRE(set->keys.empty());
    REQUIRE(set->skipped.size() == 1);
    return set->skipped.front();
}

bool verifies(std::string const& token, jose::jwk const& key) {
    auto jws = jose::parse_compact(token);
    return jws && jose::verify_signature(*jws, key);
}

std::string flip_last_signature_char(std::string token) {
    // The last character carries the signature's final bits: change it to one that still decodes.
    auto& c = token.back();
    c = c == 'A' ? 'Q' : 'A';
    return token;
}

}  // namespace

// ---- base64url ----

TEST_CASE("base64url round-trips every length of input, without padding", "[jose]") {
    std::string bytes;
    for (int len = 0; len <= 9; ++len) {
        auto encoded = jose::base64url_encode(bytes);
        CHECK(encoded.find('=') == std::string::npos);
        CHECK(encoded.size() == (bytes.size() * 4 + 2) / 3);
        auto decoded = jose::base64url_decode(encoded);
        REQUIRE(decoded.has_value());
        CHECK(*decoded == bytes);
        CHECK(testing::b64url(bytes) == encoded);
        bytes += static_cast<char>(0xf0 + len);
    }
    CHECK(jose::base64url_encode("\xfb\xff") == "-_8");
}

TEST_CASE("base64url decoding accepts lengths 0, 2 and 3 mod 4 and refuses 1 mod 4", "[jose]") {
    CHECK(jose::base64url_decode("") == std::string());
    CHECK(jose::base64url_decode("QQ") == std::string("A"));
    CHECK(jose::base64url_decode("QUI") == std::string("AB"));
    CHECK(jose::base64url_decode("QUJD") == std::string("ABC"));
    CHECK(jose::base64url_decode("QUJDRA") == std::string("ABCD"));
    CHECK_FALSE(jose::base64url_decode("Q").has_value());
    CHECK_FALSE(jose::base64url_decode("QUJDR").has_value());
}

TEST_CASE("base64url decoding refuses padding, the standard alphabet's + and /, and whitespace", "[jose]") {
    CHECK_FALSE(jose::base64url_decode("QQ==").has_value());
    CHECK_FALSE(jose::base64url_decode("QUI=").has_value());
    CHECK_FALSE(jose::base64url_decode("+/8").has_value());
    CHECK(jose::base64url_decode("-_8").has_value());
    CHECK_FALSE(jose::base64url_decode("QU I").has_value());
    CHECK_FALSE(jose::base64url_decode("QUJD\n").has_value());
    CHECK_FALSE(jose::base64url_decode(std::string_view("QU\0I", 4)).has_value());
}

TEST_CASE("base64url decoding refuses a second spelling of the same bytes (non-zero trailing bits)", "[jose]") {
    CHECK(jose::base64url_decode("QQ").has_value());
    CHECK_FALSE(jose::base64url_decode("QR").has_value());
    CHECK(jose::base64url_decode("QUI").has_value());
    CHECK_FALSE(jose::base64url_decode("QUJ").has_value());
}

// ---- algorithms ----

TEST_CASE("alg names are the JOSE ones; none and the HMAC algorithms are not algorithms here", "[jose]") {
    for (auto a : {jose::alg::rs256, jose::alg::rs384, jose::alg::rs512, jose::alg::ps256, jose::alg::ps384,
                   jose::alg::ps512, jose::alg::es256, jose::alg::es384, jose::alg::es512, jose::alg::eddsa})
        CHECK(jose::alg_from_string(jose::to_string(a)) == a);
    CHECK(jose::to_string(jose::alg::eddsa) == "EdDSA");
    for (auto bad : {"none", "None", "HS256", "HS384", "HS512", "rs256", "ES256K", "Ed25519", ""})
        CHECK_FALSE(jose::alg_from_string(bad).has_value());
}

// ---- JWKS ----

TEST_CASE("a JWKS of RSA, EC and Ed25519 keys is read with each key's kid, alg and use", "[jose]") {
    auto rsa = rsa_key().public_jwk("r1", "RS256");
    rsa["use"] = "sig";
    auto set = jose::parse_jwks(testing::jwks_json(
        {rsa, p256_key().public_jwk("e1"), p384_key().public_jwk("e2"), p521_key().public_jwk("e3"), ed_key().public_jwk("o1")}));
    REQUIRE(set.has_value());
    CHECK(set->skipped.empty());
    REQUIRE(set->keys.size() == 5);
    auto const* r1 = set->find("r1");
    REQUIRE(r1 != nullptr);
    CHECK(r1->alg == jose::alg::rs256);
    CHECK(r1->use == "sig");
    CHECK(r1->key->kty() == "RSA");
    CHECK(r1->key->bits() == 2048);
    CHECK(set->find("e2")->key->crv() == "P-384");
    CHECK_FALSE(set->find("e2")->alg.has_value());
    CHECK(set->find("o1")->key->kty() == "OKP");
    CHECK(set->find("missing") == nullptr);
}

TEST_CASE("a JWKS key of an unknown kty is skipped with a reason, the others are kept", "[jose]") {
    json::object oct{{"kty", "oct"}, {"k", "c2VjcmV0"}, {"kid", "sym"}};
    auto set = jose::parse_jwks(testing::jwks_json({oct, ed_key().public_jwk("o1")}));
    REQUIRE(set.has_value());
    CHECK(set->keys.size() == 1);
    REQUIRE(set->skipped.size() == 1);
    CHECK_THAT(set->skipped[0], Catch::Contains("kid \"sym\"") && Catch::Contains("kty \"oct\""));
}

TEST_CASE("a JWKS key on an unknown curve is skipped", "[jose]") {
    auto ec = p256_key().public_jwk("k");
    ec["crv"] = "secp256k1";
    CHECK_THAT(skip_reason(ec), Catch::Contains("secp256k1"));
    auto okp = ed_key().public_jwk("k");
    okp["crv"] = "X25519";
    CHECK_THAT(skip_reason(okp), Catch::Contains("X25519"));
    okp["crv"] = "Ed448";
    CHECK_THAT(skip_reason(okp), Catch::Contains("Ed448"));
}

TEST_CASE("a JWKS key meant for encryption is skipped", "[jose]") {
    auto k = rsa_key().public_jwk("enc-key");
    k["use"] = "enc";
    CHECK_THAT(skip_reason(k), Catch::Contains("\"enc\""));
    auto ops = rsa_key().public_jwk("ops-key");
    ops["key_ops"] = json::array{"encrypt"};
    CHECK_THAT(skip_reason(ops), Catch::Contains("key_ops"));
    auto oaep = rsa_key().public_jwk("oaep", "RSA-OAEP");
    CHECK_THAT(skip_reason(oaep), Catch::Contains("RSA-OAEP"));
}

TEST_CASE("a JWKS RSA key below 2048 bits is skipped", "[jose]") {
    static auto small = signing_key::rsa(1024);
    CHECK_THAT(skip_reason(small.public_jwk("small")), Catch::Contains("1024 bits"));
}

TEST_CASE("a JWKS key with bad base64url is skipped", "[jose]") {
    auto padded = rsa_key().public_jwk("k");
    padded["e"] = "AQAB==";
    CHECK_THAT(skip_reason(padded), Catch::Contains("\"e\" is not base64url"));
    auto standard = p256_key().public_jwk("k");
    auto x = std::string(standard["x"].as_string());
    x[0] = '+';
    standard["x"] = x;
    CHECK_THAT(skip_reason(standard), Catch::Contains("\"x\" is not base64url"));
    auto missing = ed_key().public_jwk("k");
    missing.erase("x");
    CHECK_THAT(skip_reason(missing), Catch::Contains("no \"x\""));
}

TEST_CASE("a JWKS EC key whose point is not on its curve is skipped", "[jose]") {
    auto k = p256_key().public_jwk("k");
    auto y = *jose::base64url_decode(k["y"].as_string());
    y.back() = static_cast<char>(y.back() ^ 1);
    k["y"] = jose::base64url_encode(y);
    CHECK_THAT(skip_reason(k), Catch::Contains("not on P-256"));
    auto short_x = p256_key().public_jwk("k");
    short_x["x"] = jose::base64url_encode(jose::base64url_decode(short_x["x"].as_string())->substr(1));
    CHECK_THAT(skip_reason(short_x), Catch::Contains("32 bytes"));
}

TEST_CASE("a JWKS key whose alg does not fit its type is skipped", "[jose]") {
    CHECK_THAT(skip_reason(p256_key().public_jwk("k", "ES384")), Catch::Contains("does not fit"));
    CHECK_THAT(skip_reason(rsa_key().public_jwk("k", "EdDSA")), Catch::Contains("does not fit"));
}

TEST_CASE("a JWKS key with private members is kept and only its public half is used", "[jose]") {
    auto k = ed_key().public_jwk("o1");
    k["d"] = jose::base64url_encode(std::string(32, '\x01'));
    auto set = one_key_set(k);
    REQUIRE(set.keys.size() == 1);
    auto token = testing::sign_token(ed_key(), {{"alg", "EdDSA"}, {"kid", "o1"}}, claims());
    CHECK(verifies(token, set.keys[0]));
}

TEST_CASE("a document that is not a JWKS is an error, not an empty key set", "[jose]") {
    for (auto doc : {"", "[]", "{\"keys\": {}}", "{}", "{\"keys\": [}", "\"keys\""}) {
        auto r = jose::parse_jwks(doc);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code == "invalid_jwks");
    }
    CHECK(jose::parse_jwks("{\"keys\": []}").has_value());
}

TEST_CASE("a JWKS over 256 KiB or over 100 keys is refused whole", "[jose]") {
    std::string big = "{\"keys\": [], \"pad\": \"" + std::string(jose::max_jwks_bytes, 'a') + "\"}";
    auto r = jose::parse_jwks(big);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("bytes"));

    std::vector<json::object> many(101, ed_key().public_jwk("o"));
    auto m = jose::parse_jwks(testing::jwks_json(many));
    REQUIRE_FALSE(m.has_value());
    CHECK_THAT(m.error().message, Catch::Contains("101 keys"));
    many.pop_back();
    CHECK(jose::parse_jwks(testing::jwks_json(many)).has_value());
}

// ---- compact JWS ----

TEST_CASE("a compact JWS is taken apart into header, alg, kid, payload, signing input and signature", "[jose]") {
    auto token = testing::sign_token(ed_key(), {{"alg", "EdDSA"}, {"kid", "o1"}, {"typ", "at+jwt"}}, claims());
    auto jws = jose::parse_compact(token);
    REQUIRE(jws.has_value());
    CHECK(jws->algorithm == jose::alg::eddsa);
    CHECK(jws->kid == "o1");
    CHECK(jws->header.at("typ") == "at+jwt");
    CHECK(jws->payload.at("sub") == "alice");
    CHECK(jws->signing_input == token.substr(0, token.rfind('.')));
    CHECK(jws->signature.size() == 64);
}

TEST_CASE("a token that is not three non-empty parts is malformed", "[jose]") {
    auto token = testing::sign_token(ed_key(), {{"alg", "EdDSA"}}, claims());
    auto first = token.find('.');
    auto last = token.rfind('.');
    for (auto bad : {std::string(), std::string("abc"), token.substr(0, last), token + ".x",
                     token.substr(0, first) + ".." + token.substr(last + 1), token.substr(0, last + 1),
                     token.substr(first)}) {
        auto r = jose::parse_compact(bad);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code == "malformed");
    }
}

TEST_CASE("a five-part JWE is refused as encrypted", "[jose]") {
    auto jwe = testing::b64url_json({{"alg", "RSA-OAEP"}, {"enc", "A256GCM"}}) + ".a2V5.aXY.Y2lwaGVy.dGFn";
    auto r = jose::parse_compact(jwe);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "malformed");
    CHECK_THAT(r.error().message, Catch::Contains("JWE"));
}

TEST_CASE("a token whose header has crit is refused", "[jose]") {
    auto token = testing::sign_token(ed_key(), {{"alg", "EdDSA"}, {"crit", json::array{"exp"}}, {"exp", 1}}, claims());
    auto r = jose::parse_compact(token);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("crit"));
    auto b64 = testing::sign_token(ed_key(), {{"alg", "EdDSA"}, {"b64", false}}, claims());
    CHECK_FALSE(jose::parse_compact(b64).has_value());
}

TEST_CASE("alg none, HS256 and unknown algs are refused as bad_alg", "[jose]") {
    auto none = jose::parse_compact(testing::unsigned_token(claims()));
    REQUIRE_FALSE(none.has_value());
    CHECK(none.error().code == "bad_alg");
    auto hs = jose::parse_compact(testing::hs256_token(rsa_key().public_pem(), {{"typ", "JWT"}}, claims()));
    REQUIRE_FALSE(hs.has_value());
    CHECK(hs.error().code == "bad_alg");
    auto token = testing::sign_token(ed_key(), {{"alg", "EdDSA"}}, claims());
    auto odd = jose::parse_compact(testing::with_header(token, {{"alg", "ES256K"}}));
    REQUIRE_FALSE(odd.has_value());
    CHECK(odd.error().code == "bad_alg");
    auto missing = jose::parse_compact(testing::with_header(token, {{"typ", "JWT"}}));
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().code == "malformed");
}

TEST_CASE("a header or payload that is not a JSON object is malformed", "[jose]") {
    auto sig = jose::base64url_encode(std::string(64, 'x'));
    auto header = testing::b64url_json({{"alg", "EdDSA"}});
    for (auto bad : {header + "." + jose::base64url_encode("[1,2]") + "." + sig,
                     header + "." + jose::base64url_encode("{\"a\":") + "." + sig,
                     jose::base64url_encode("\"EdDSA\"") + "." + testing::b64url_json(claims()) + "." + sig,
                     header + ".e30=." + sig, header + "." + testing::b64url_json(claims()) + ".***"}) {
        auto r = jose::parse_compact(bad);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code == "malformed");
    }
}

TEST_CASE("deeply nested JSON in a token is refused", "[jose]") {
    std::string deep;
    for (int i = 0; i < 40; ++i) deep += "{\"a\":";
    deep += "1";
    for (int i = 0; i < 40; ++i) deep += "}";
    auto header = testing::b64url_json({{"alg", "EdDSA"}});
    auto sig = jose::base64url_encode(std::string(64, 'x'));
    CHECK_FALSE(jose::parse_compact(header + "." + jose::base64url_encode(deep) + "." + sig).has_value());
    CHECK_FALSE(jose::parse_compact(jose::base64url_encode("{\"alg\":\"EdDSA\",\"x\":[[[[[[1]]]]]]}") + "." +
                                    testing::b64url_json(claims()) + "." + sig)
                    .has_value());
    // A claim nested a few levels deep (roles under a realm, say) is ordinary.
    json::object nested = claims();
    nested["realm"] = json::parse(R"({"roles": [{"name": ["a", {"b": [1]}]}]})");
    CHECK(jose::parse_compact(header + "." + testing::b64url_json(nested) + "." + sig).has_value());
}

TEST_CASE("a token over the size limit is refused before it is decoded", "[jose]") {
    auto token = testing::sign_token(ed_key(), {{"alg", "EdDSA"}}, claims());
    auto limit = token.size() - 1;
    auto r = jose::parse_compact(token, limit);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("more than"));
    CHECK(jose::parse_compact(token, token.size()).has_value());
    auto huge = std::string(jose::max_token_bytes + 1, 'a');
    CHECK_FALSE(jose::parse_compact(huge).has_value());
}

// ---- signatures ----

TEST_CASE("a token signed with each alg verifies with its key, and a tampered copy does not", "[jose]") {
    for (auto name : {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}) {
        INFO(name);
        auto const& key = key_for(name);
        auto set = one_key_set(key.public_jwk("k", name));
        auto token = testing::sign_token(key, {{"alg", name}, {"kid", "k"}}, claims());
        CHECK(verifies(token, set.keys[0]));
        auto changed = claims();
        changed["sub"] = "mallory";
        CHECK_FALSE(verifies(testing::with_payload(token, changed), set.keys[0]));
        CHECK_FALSE(verifies(flip_last_signature_char(token), set.keys[0]));
    }
}

TEST_CASE("a signature does not verify with another key of the same type", "[jose]") {
    auto set = one_key_set(other_rsa_key().public_jwk("k"));
    auto token = testing::sign_token(rsa_key(), {{"alg", "RS256"}}, claims());
    CHECK_FALSE(verifies(token, set.keys[0]));
}

TEST_CASE("a key that does not fit the token's alg never verifies it", "[jose]") {
    auto rsa = one_key_set(rsa_key().public_jwk("r"));
    auto p256 = one_key_set(p256_key().public_jwk("e"));
    auto p384 = one_key_set(p384_key().public_jwk("e"));
    auto ed = one_key_set(ed_key().public_jwk("o"));
    auto es256 = testing::sign_token(p256_key(), {{"alg", "ES256"}}, claims());
    CHECK(verifies(es256, p256.keys[0]));
    CHECK_FALSE(verifies(es256, p384.keys[0]));
    CHECK_FALSE(verifies(es256, rsa.keys[0]));
    // The same P-256 key pair, but the header claims ES384: the curve decides, not the header.
    CHECK_FALSE(verifies(testing::with_header(es256, {{"alg", "ES384"}}), p256.keys[0]));
    auto eddsa = testing::sign_token(ed_key(), {{"alg", "EdDSA"}}, claims());
    CHECK_FALSE(verifies(eddsa, rsa.keys[0]));
    CHECK_FALSE(verifies(testing::sign_token(rsa_key(), {{"alg", "RS256"}}, claims()), ed.keys[0]));
}

TEST_CASE("a key whose JWK names an alg verifies only tokens of that alg", "[jose]") {
    auto set = one_key_set(rsa_key().public_jwk("k", "PS256"));
    CHECK(verifies(testing::sign_token(rsa_key(), {{"alg", "PS256"}}, claims()), set.keys[0]));
    CHECK_FALSE(verifies(testing::sign_token(rsa_key(), {{"alg", "RS256"}}, claims()), set.keys[0]));
}

TEST_CASE("RS256 and PS256 signatures are not interchangeable", "[jose]") {
    auto set = one_key_set(rsa_key().public_jwk("k"));
    auto rs = testing::sign_token(rsa_key(), {{"alg", "RS256"}}, claims());
    auto relabelled = testing::with_header(rs, {{"alg", "PS256"}});
    CHECK(verifies(rs, set.keys[0]));
    CHECK_FALSE(verifies(relabelled, set.keys[0]));
}

TEST_CASE("a PS256 signature whose salt is not the hash length does not verify", "[jose]") {
    auto set = one_key_set(rsa_key().public_jwk("k"));
    auto input = testing::b64url_json({{"alg", "PS256"}}) + "." + testing::b64url_json(claims());
    CHECK(verifies(input + "." + testing::b64url(rsa_key().sign("PS256", input, 32)), set.keys[0]));
    CHECK_FALSE(verifies(input + "." + testing::b64url(rsa_key().sign("PS256", input, 20)), set.keys[0]));
    CHECK_FALSE(verifies(input + "." + testing::b64url(rsa_key().sign("PS256", input, 64)), set.keys[0]));
}

TEST_CASE("an ECDSA signature of the wrong length, or in DER, does not verify", "[jose]") {
    auto set = one_key_set(p256_key().public_jwk("e"));
    auto token = testing::sign_token(p256_key(), {{"alg", "ES256"}}, claims());
    auto jws = jose::parse_compact(token);
    REQUIRE(jws.has_value());
    CHECK(jose::verify_signature(*jws, set.keys[0]));
    auto shorter = *jws;
    shorter.signature.pop_back();
    CHECK_FALSE(jose::verify_signature(shorter, set.keys[0]));
    auto longer = *jws;
    longer.signature.insert(longer.signature.begin(), '\0');
    CHECK_FALSE(jose::verify_signature(longer, set.keys[0]));
    auto zero = *jws;
    zero.signature.assign(64, '\0');
    CHECK_FALSE(jose::verify_signature(zero, set.keys[0]));
}

TEST_CASE("a jwk without a key verifies nothing and does not crash", "[jose]") {
    auto jws = jose::parse_compact(testing::sign_token(ed_key(), {{"alg", "EdDSA"}}, claims()));
    REQUIRE(jws.has_value());
    CHECK_FALSE(jose::verify_signature(*jws, jose::jwk{}));
}

// ---- npm jose as an independent implementation ----

TEST_CASE("every token npm jose signs verifies with its JWKS, and no tampered copy does", "[jose][peers]") {
    auto run = airlock::testing::run_command(
        {airlock::testing::peers::node(), std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/oauth/jose_vectors.mjs"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto doc = json::parse(run.out).as_object();
    auto set = jose::parse_jwks(json::serialize(doc.at("jwks")));
    REQUIRE(set.has_value());
    CHECK(set->skipped.empty());
    auto const& tokens = doc.at("tokens").as_array();
    REQUIRE(tokens.size() == 10);
    std::vector<std::string> seen;
    for (auto const& t : tokens) {
        auto const& o = t.as_object();
        std::string alg(o.at("alg").as_string());
        std::string token(o.at("token").as_string());
        INFO(alg);
        seen.push_back(alg);
        auto const* key = set->find(o.at("kid").as_string());
        REQUIRE(key != nullptr);
        CHECK(verifies(token, *key));
        CHECK_FALSE(verifies(flip_last_signature_char(token), *key));
        auto jws = jose::parse_compact(token);
        REQUIRE(jws.has_value());
        auto payload = jws->payload;
        payload["sub"] = "mallory";
        CHECK_FALSE(verifies(testing::with_payload(token, payload), *key));
        // Another key of the document never verifies it.
        for (auto const& other : set->keys)
            if (other.kid != key->kid) CHECK_FALSE(jose::verify_signature(*jws, other));
    }
    CHECK(seen == std::vector<std::string>{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                                           "ES512", "EdDSA"});
}
