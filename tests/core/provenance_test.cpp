#include "core/provenance.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"

#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <string>

using namespace airlock::core;
using namespace std::chrono;
using namespace std::chrono_literals;

namespace {

std::string unhex(std::string_view hex) {
    std::string out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
    return out;
}

std::string hex(std::string_view bytes) {
    return to_hex(reinterpret_cast<std::uint8_t const*>(bytes.data()), bytes.size());
}

// RFC 8032 section 7.1, TEST 1.
constexpr std::string_view rfc8032_secret = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
constexpr std::string_view rfc8032_public = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
constexpr std::string_view rfc8032_signature =
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555"
    "fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";

// A second, unrelated seed for rotation and key-swap cases.
constexpr std::string_view other_secret = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";

sys_seconds const issued = sys_days{2026y / November / 30} + 8h;  // 2026-11-30T08:00:00Z
sys_seconds const during = issued + 30s;

tool_id post_tool() { return tool_id::parse("tool://ledger/post").value(); }
tool_id refund_tool() { return tool_id::parse("tool://ledger/refund").value(); }

boost::json::value post_args() { return boost::json::parse(R"({"account":"ACC-1","amount":125})"); }

provenance_signer signer_a() { return provenance_signer::from_raw_seed("k1", unhex(rfc8032_secret)).value(); }
provenance_signer signer_b() { return provenance_signer::from_raw_seed("k2", unhex(other_secret)).value(); }

provenance_verifier trusting(std::initializer_list<provenance_signer const*> signers) {
    provenance_verifier v;
    for (auto const* s : signers) v.trust_raw(s->kid(), s->public_key_raw()).value();
    return v;
}

provenance unsigned_block() {
    return make_provenance("run-7", "run-7/effect-3", "teller", "sha256:abcd", post_tool(), post_args(), issued, 60s,
                           "n-0001")
        .value();
}

provenance signed_block(provenance_signer const& s) {
    auto p = unsigned_block();
    s.sign(p).value();
    return p;
}

// What a callee receives: the block as JSON, re-read.
provenance through_json(boost::json::object const& o) { return provenance_from_json(o).value(); }

}  // namespace

TEST_CASE("signing the empty message with the RFC 8032 TEST 1 seed gives the published signature") {
    auto sig = ed25519_sign_raw(unhex(rfc8032_secret), "");
    REQUIRE(sig.has_value());
    CHECK(hex(*sig) == rfc8032_signature);
}

TEST_CASE("a signer made from the RFC 8032 TEST 1 seed has the published public key") {
    auto s = provenance_signer::from_raw_seed("k1", unhex(rfc8032_secret));
    REQUIRE(s.has_value());
    CHECK(hex(s->public_key_raw()) == rfc8032_public);
}

TEST_CASE("a seed that is not 32 bytes is refused") {
    auto s = provenance_signer::from_raw_seed("k1", unhex(rfc8032_secret).substr(0, 31));
    REQUIRE(s.has_error());
    CHECK(s.error().code == "bad_key");
    CHECK_THAT(s.error().message, Catch::Contains("32 bytes"));
}

TEST_CASE("a signed block survives to_json and from_json and verifies as ok") {
    auto a = signer_a();
    auto v = trusting({&a});
    auto p = through_json(to_json(signed_block(a)));
    CHECK(v.verify(p, post_tool(), post_args(), during) == provenance_verdict::ok);
}

TEST_CASE("a block round-trips through JSON field for field") {
    auto a = signer_a();
    auto p = signed_block(a);
    auto q = through_json(to_json(p));
    CHECK(q.run_id == p.run_id);
    CHECK(q.effect_key == p.effect_key);
    CHECK(q.agent_name == p.agent_name);
    CHECK(q.agent_digest == p.agent_digest);
    CHECK(q.tool == p.tool);
    CHECK(q.args_sha256 == p.args_sha256);
    CHECK(q.issued_at == p.issued_at);
    CHECK(q.expires_at == p.expires_at);
    CHECK(q.nonce == p.nonce);
    REQUIRE(q.attestation.has_value());
    CHECK(q.attestation->kid == "k1");
    CHECK(q.attestation->alg == "Ed25519");
    CHECK(q.attestation->sig == p.attestation->sig);
}

TEST_CASE("the JSON block writes times as RFC 3339 UTC and the signature as unpadded base64url") {
    auto a = signer_a();
    auto o = to_json(signed_block(a));
    CHECK(o.at("issued_at") == "2026-11-30T08:00:00Z");
    CHECK(o.at("expires_at") == "2026-11-30T08:01:00Z");
    CHECK(o.at("agent").at("name") == "teller");
    CHECK(o.at("tool") == "tool://ledger/post");
    std::string const sig(o.at("attestation").at("sig").as_string());
    CHECK(sig.size() == 86);  // 64 bytes, no padding
    constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    CHECK(sig.find_first_not_of(alphabet) == std::string::npos);
}

TEST_CASE("args_sha256 is the SHA-256 of the canonical arguments, whatever their key order") {
    auto p = unsigned_block();
    CHECK(p.args_sha256 == sha256_hex(R"({"account":"ACC-1","amount":125})"));
    auto a = signer_a();
    auto v = trusting({&a});
    a.sign(p).value();
    auto reordered = boost::json::parse(R"({ "amount": 125, "account": "ACC-1" })");
    CHECK(v.verify(p, post_tool(), reordered, during) == provenance_verdict::ok);
}

TEST_CASE("the signing payload is domain-separated, names the key id and leaves out the signature") {
    auto a = signer_a();
    auto p = signed_block(a);
    auto payload = provenance_signing_payload(p);
    std::string const prefix("airlock/provenance/v1\0", 22);
    REQUIRE(payload.size() > prefix.size());
    CHECK(payload.substr(0, prefix.size()) == prefix);
    CHECK(payload.find(R"("kid":"k1")") != std::string::npos);
    CHECK(payload.find(R"("alg":"Ed25519")") != std::string::npos);
    CHECK(payload.find(p.attestation->sig) == std::string::npos);
    CHECK(payload.find("sig") == std::string::npos);
}

TEST_CASE("every signed field tampered in transit is caught") {
    auto a = signer_a();
    auto b = signer_b();
    auto v = trusting({&a, &b});
    // The same key under a second id (as during a re-labelling): only the signed kid tells them apart.
    v.trust_raw("k1-copy", a.public_key_raw()).value();
    auto o = to_json(signed_block(a));
    auto tool = post_tool();
    auto args = post_args();

    SECTION("run_id") { o["run_id"] = "run-8"; }
    SECTION("effect_key") { o["effect_key"] = "run-7/effect-4"; }
    SECTION("agent name") { o["agent"].as_object()["name"] = "auditor"; }
    SECTION("agent digest") { o["agent"].as_object()["digest"] = "sha256:abce"; }
    SECTION("tool, with the call redirected to match") {
        o["tool"] = "tool://ledger/refund";
        tool = refund_tool();
    }
    SECTION("args_sha256, with the arguments changed to match") {
        args = boost::json::parse(R"({"account":"ACC-666","amount":125})");
        o["args_sha256"] = sha256_hex(canonical(args).value());
    }
    SECTION("issued_at") { o["issued_at"] = "2026-11-30T08:00:01Z"; }
    SECTION("expires_at") { o["expires_at"] = "2026-11-30T09:00:00Z"; }
    SECTION("nonce") { o["nonce"] = "n-0002"; }
    SECTION("kid, relabelled to another trusted key") { o["attestation"].as_object()["kid"] = "k2"; }
    SECTION("kid, relabelled to another trusted id for the same key") {
        o["attestation"].as_object()["kid"] = "k1-copy";
    }
    SECTION("sig, one character changed") {
        auto& sig = o["attestation"].as_object()["sig"].as_string();
        sig[10] = sig[10] == 'A' ? 'B' : 'A';
    }
    SECTION("sig, truncated") {
        auto& sig = o["attestation"].as_object()["sig"].as_string();
        sig.resize(sig.size() - 2);
    }
    SECTION("sig, respelled with non-zero unused bits (same bytes, another text)") {
        // 64 bytes take 86 characters whose last 4 bits are unused; setting one must not pass.
        constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        auto& sig = o["attestation"].as_object()["sig"].as_string();
        sig.back() = alphabet[alphabet.find(sig.back()) ^ 1];
    }
    SECTION("sig, not base64url") { o["attestation"].as_object()["sig"] = std::string(86, '+'); }
    SECTION("sig, replaced by another key's signature over the same block") {
        o["attestation"].as_object()["sig"] = to_json(signed_block(b)).at("attestation").at("sig");
    }

    CHECK(v.verify(through_json(o), tool, args, during) == provenance_verdict::bad_signature);
}

TEST_CASE("a key id no verifier trusts is an unknown key") {
    auto a = signer_a();
    auto b = signer_b();
    auto v = trusting({&b});
    CHECK(v.verify(signed_block(a), post_tool(), post_args(), during) == provenance_verdict::unknown_key);
}

TEST_CASE("a kid tampered to an untrusted id is an unknown key") {
    auto a = signer_a();
    auto v = trusting({&a});
    auto o = to_json(signed_block(a));
    o["attestation"].as_object()["kid"] = "k9";
    CHECK(v.verify(through_json(o), post_tool(), post_args(), during) == provenance_verdict::unknown_key);
}

TEST_CASE("an algorithm other than Ed25519 is an unknown key") {
    auto a = signer_a();
    auto v = trusting({&a});
    auto o = to_json(signed_block(a));
    o["attestation"].as_object()["alg"] = "EdDSA";
    CHECK(v.verify(through_json(o), post_tool(), post_args(), during) == provenance_verdict::unknown_key);
}

TEST_CASE("a block with no attestation is unsigned") {
    auto a = signer_a();
    auto v = trusting({&a});
    auto o = to_json(unsigned_block());
    CHECK_FALSE(o.contains("attestation"));
    CHECK(v.verify(through_json(o), post_tool(), post_args(), during) == provenance_verdict::unsigned_);
}

TEST_CASE("a block signed for one tool does not verify for another") {
    auto a = signer_a();
    auto v = trusting({&a});
    CHECK(v.verify(signed_block(a), refund_tool(), post_args(), during) == provenance_verdict::tool_mismatch);
}

TEST_CASE("a block signed for some arguments does not verify for others") {
    auto a = signer_a();
    auto v = trusting({&a});
    auto other = boost::json::parse(R"({"account":"ACC-1","amount":126})");
    CHECK(v.verify(signed_block(a), post_tool(), other, during) == provenance_verdict::arguments_mismatch);
}

TEST_CASE("a block is expired at exactly expires_at and valid one second before") {
    auto a = signer_a();
    auto v = trusting({&a});
    auto p = signed_block(a);
    CHECK(v.verify(p, post_tool(), post_args(), p.expires_at - 1s) == provenance_verdict::ok);
    CHECK(v.verify(p, post_tool(), post_args(), p.expires_at) == provenance_verdict::expired);
}

TEST_CASE("a block is not yet valid before issued_at and valid from issued_at") {
    auto a = signer_a();
    auto v = trusting({&a});
    auto p = signed_block(a);
    CHECK(v.verify(p, post_tool(), post_args(), p.issued_at - 1s) == provenance_verdict::not_yet_valid);
    CHECK(v.verify(p, post_tool(), post_args(), p.issued_at) == provenance_verdict::ok);
}

TEST_CASE("the verdicts come in order: who signed, then what, then when") {
    auto a = signer_a();
    auto v = trusting({&a});
    auto p = signed_block(a);
    auto other_args = boost::json::parse("{}");
    auto late = p.expires_at + 1h;
    CHECK(v.verify(p, refund_tool(), other_args, late) == provenance_verdict::tool_mismatch);
    CHECK(v.verify(p, post_tool(), other_args, late) == provenance_verdict::arguments_mismatch);
    auto tampered = p;
    tampered.nonce = "n-0002";
    CHECK(v.verify(tampered, refund_tool(), other_args, late) == provenance_verdict::bad_signature);
    CHECK(trusting({}).verify(tampered, refund_tool(), other_args, late) == provenance_verdict::unknown_key);
}

TEST_CASE("a verifier trusting two key ids accepts blocks from both signers during rotation") {
    auto a = signer_a();
    auto b = signer_b();
    auto both = trusting({&a, &b});
    CHECK(both.verify(signed_block(a), post_tool(), post_args(), during) == provenance_verdict::ok);
    CHECK(both.verify(signed_block(b), post_tool(), post_args(), during) == provenance_verdict::ok);
    auto only_new = trusting({&b});
    CHECK(only_new.verify(signed_block(a), post_tool(), post_args(), during) == provenance_verdict::unknown_key);
}

TEST_CASE("trusting the same key id twice is refused") {
    auto a = signer_a();
    auto b = signer_b();
    provenance_verifier v;
    REQUIRE(v.trust_raw("k1", a.public_key_raw()).has_value());
    auto again = v.trust_raw("k1", b.public_key_raw());
    REQUIRE(again.has_error());
    CHECK(again.error().code == "duplicate_key");
    CHECK_THAT(again.error().message, Catch::Contains("k1"));
}

TEST_CASE("a signer and a verifier load Ed25519 keys from PEM files written by OpenSSL") {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"),
                                                             &EVP_PKEY_free);
    REQUIRE(key);
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    REQUIRE(PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1);
    char* data = nullptr;
    std::string const pem(data, static_cast<std::size_t>(BIO_get_mem_data(bio.get(), &data)));
    REQUIRE(pem.starts_with("-----BEGIN PRIVATE KEY-----"));

    auto s = provenance_signer::from_pem("2026-11", pem);
    REQUIRE(s.has_value());
    std::string raw_public(32, '\0');
    std::size_t len = raw_public.size();
    REQUIRE(EVP_PKEY_get_raw_public_key(key.get(), reinterpret_cast<unsigned char*>(raw_public.data()), &len) == 1);
    CHECK(s->public_key_raw() == raw_public);

    provenance_verifier v;
    REQUIRE(v.trust_pem("2026-11", s->public_key_pem()).has_value());
    auto p = signed_block(*s);
    CHECK(v.verify(p, post_tool(), post_args(), during) == provenance_verdict::ok);
}

TEST_CASE("a malformed PEM signing key is refused with a message naming the key") {
    auto s = provenance_signer::from_pem(
        "k1", "-----BEGIN PRIVATE KEY-----\nnot base64 at all!\n-----END PRIVATE KEY-----\n");
    REQUIRE(s.has_error());
    CHECK(s.error().code == "bad_key");
    CHECK_THAT(s.error().message, Catch::Contains("\"k1\"") && Catch::Contains("PEM private key"));
}

TEST_CASE("a PEM key of another algorithm is refused as not Ed25519") {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"),
                                                             &EVP_PKEY_free);
    REQUIRE(key);
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    REQUIRE(PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1);
    char* data = nullptr;
    std::string const pem(data, static_cast<std::size_t>(BIO_get_mem_data(bio.get(), &data)));
    auto s = provenance_signer::from_pem("k1", pem);
    REQUIRE(s.has_error());
    CHECK(s.error().code == "bad_key");
    CHECK_THAT(s.error().message, Catch::Contains("not an Ed25519 key"));
}

TEST_CASE("an encrypted PEM signing key is refused instead of prompting for a passphrase") {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"),
                                                             &EVP_PKEY_free);
    REQUIRE(key);
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    char pass[] = "secret";
    REQUIRE(PEM_write_bio_PrivateKey(bio.get(), key.get(), EVP_aes_256_cbc(), reinterpret_cast<unsigned char*>(pass),
                                     6, nullptr, nullptr) == 1);
    char* data = nullptr;
    std::string const pem(data, static_cast<std::size_t>(BIO_get_mem_data(bio.get(), &data)));
    REQUIRE(pem.starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----"));
    auto s = provenance_signer::from_pem("k1", pem);
    REQUIRE(s.has_error());
    CHECK(s.error().code == "bad_key");
}

TEST_CASE("a malformed PEM public key is refused when trusting it") {
    provenance_verifier v;
    auto r = v.trust_pem("k1", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
    REQUIRE(r.has_error());
    CHECK(r.error().code == "bad_key");
    CHECK_THAT(r.error().message, Catch::Contains("PEM public key"));
}

TEST_CASE("from_json names each missing field") {
    auto a = signer_a();
    auto const full = to_json(signed_block(a));
    auto const [path, name] = GENERATE(table<std::string, std::string>({
        {"run_id", "run_id"},
        {"effect_key", "effect_key"},
        {"agent", "agent"},
        {"agent/name", "agent.name"},
        {"agent/digest", "agent.digest"},
        {"tool", "tool"},
        {"args_sha256", "args_sha256"},
        {"issued_at", "issued_at"},
        {"expires_at", "expires_at"},
        {"nonce", "nonce"},
        {"attestation/kid", "attestation.kid"},
        {"attestation/alg", "attestation.alg"},
        {"attestation/sig", "attestation.sig"},
    }));
    auto o = full;
    auto slash = path.find('/');
    if (slash == std::string::npos) o.erase(path);
    else o[path.substr(0, slash)].as_object().erase(path.substr(slash + 1));
    auto r = provenance_from_json(o);
    INFO(path);
    REQUIRE(r.has_error());
    CHECK(r.error().code == "missing_field");
    CHECK_THAT(r.error().message, Catch::Contains("\"" + name + "\""));
}

TEST_CASE("from_json names each mistyped field") {
    auto a = signer_a();
    auto const full = to_json(signed_block(a));
    auto const [path, name] = GENERATE(table<std::string, std::string>({
        {"run_id", "run_id"},
        {"agent", "agent"},
        {"agent/digest", "agent.digest"},
        {"issued_at", "issued_at"},
        {"nonce", "nonce"},
        {"attestation", "attestation"},
        {"attestation/sig", "attestation.sig"},
    }));
    auto o = full;
    auto slash = path.find('/');
    if (slash == std::string::npos) o[path] = 42;
    else o[path.substr(0, slash)].as_object()[path.substr(slash + 1)] = 42;
    auto r = provenance_from_json(o);
    INFO(path);
    REQUIRE(r.has_error());
    CHECK(r.error().code == "wrong_type");
    CHECK_THAT(r.error().message, Catch::Contains("\"" + name + "\""));
}

TEST_CASE("from_json refuses a time that is not RFC 3339 UTC to the second") {
    auto a = signer_a();
    auto o = to_json(signed_block(a));
    auto const bad = GENERATE(as<std::string>{}, "2026-11-30T08:00:00+00:00", "2026-11-30T08:00:00.5Z",
                              "2026-11-30 08:00:00Z", "2026-11-30T08:00:00z", "2026-02-30T08:00:00Z",
                              "2026-11-30T24:00:00Z", "2026-11-30T08:00:60Z", "");
    o["expires_at"] = bad;
    auto r = provenance_from_json(o);
    INFO(bad);
    REQUIRE(r.has_error());
    CHECK(r.error().code == "bad_time");
    CHECK_THAT(r.error().message, Catch::Contains("expires_at"));
}

TEST_CASE("from_json tolerates unknown keys and still verifies") {
    auto a = signer_a();
    auto v = trusting({&a});
    auto o = to_json(signed_block(a));
    o["future_field"] = boost::json::array{1, 2};
    o["attestation"].as_object()["x5u"] = "https://example.test/keys";
    auto p = provenance_from_json(o);
    REQUIRE(p.has_value());
    CHECK(v.verify(*p, post_tool(), post_args(), during) == provenance_verdict::ok);
}

TEST_CASE("from_json refuses a block that is not an object") {
    auto r = provenance_from_json(boost::json::value("signed"));
    REQUIRE(r.has_error());
    CHECK(r.error().code == "wrong_type");
}

TEST_CASE("make_provenance refuses a lifetime that is not positive") {
    auto r = make_provenance("run-7", "e", "teller", "d", post_tool(), post_args(), issued, 0s, "n");
    REQUIRE(r.has_error());
    CHECK(r.error().code == "bad_lifetime");
}

TEST_CASE("a block whose time cannot be written is not signed and is left untouched") {
    auto a = signer_a();
    auto p = unsigned_block();
    p.expires_at = sys_days{year{10000} / January / 1};
    auto r = a.sign(p);
    REQUIRE(r.has_error());
    CHECK(r.error().code == "bad_time");
    CHECK_FALSE(p.attestation.has_value());
}

TEST_CASE("signing the same block twice gives the same signature") {
    auto a = signer_a();
    CHECK(signed_block(a).attestation->sig == signed_block(a).attestation->sig);
}

TEST_CASE("attach_provenance puts the block under _meta beside existing entries") {
    auto a = signer_a();
    boost::json::object params{{"name", "post"}, {"arguments", post_args()},
                               {"_meta", boost::json::object{{"progressToken", 7}}}};
    attach_provenance(params, signed_block(a));
    auto const& meta = params.at("_meta").as_object();
    CHECK(meta.at("progressToken") == 7);
    REQUIRE(meta.contains(provenance_meta_key));
    CHECK(meta.at(provenance_meta_key).at("run_id") == "run-7");
}

TEST_CASE("a callee verifies the block carried in tools/call params") {
    auto a = signer_a();
    auto v = trusting({&a});
    boost::json::object params{{"name", "post"}, {"arguments", post_args()}};
    attach_provenance(params, signed_block(a));
    auto check = verify_call_params(v, params, post_tool(), during);
    REQUIRE(check.has_value());
    CHECK(check->verdict == provenance_verdict::ok);
    REQUIRE(check->block.has_value());
    CHECK(check->block->effect_key == "run-7/effect-3");

    params["arguments"].as_object()["amount"] = 9999;
    CHECK(verify_call_params(v, params, post_tool(), during)->verdict == provenance_verdict::arguments_mismatch);
}

TEST_CASE("tools/call params without a provenance block read as unsigned") {
    auto a = signer_a();
    auto v = trusting({&a});
    boost::json::object params{{"name", "post"}, {"arguments", post_args()}, {"_meta", boost::json::object{}}};
    auto check = verify_call_params(v, params, post_tool(), during);
    REQUIRE(check.has_value());
    CHECK(check->verdict == provenance_verdict::unsigned_);
    CHECK_FALSE(check->block.has_value());
}

TEST_CASE("a malformed provenance block in tools/call params is refused, not read as unsigned") {
    provenance_verifier v;
    boost::json::object const broken{{"run_id", 1}};
    boost::json::object params{{"name", "post"}, {"_meta", boost::json::object{{provenance_meta_key, broken}}}};
    auto check = verify_call_params(v, params, post_tool(), during);
    REQUIRE(check.has_error());
    CHECK(check.error().code == "wrong_type");
}

TEST_CASE("verdicts have stable names") {
    CHECK(to_string(provenance_verdict::ok) == "ok");
    CHECK(to_string(provenance_verdict::unsigned_) == "unsigned");
    CHECK(to_string(provenance_verdict::unknown_key) == "unknown_key");
    CHECK(to_string(provenance_verdict::bad_signature) == "bad_signature");
    CHECK(to_string(provenance_verdict::expired) == "expired");
    CHECK(to_string(provenance_verdict::not_yet_valid) == "not_yet_valid");
    CHECK(to_string(provenance_verdict::tool_mismatch) == "tool_mismatch");
    CHECK(to_string(provenance_verdict::arguments_mismatch) == "arguments_mismatch");
}
