#pragma once
// A test-only JWT issuer: fresh OpenSSL key pairs (RSA, P-256/384/521, Ed25519), their public
// JWKs, compact JWS signed with any JOSE alg, and the deliberately bad tokens an attacker would
// send (alg none, HS256 keyed with the RSA public key, a payload or header swapped under a kept
// signature). It shares no code with service/http/jose, so a bug there cannot hide here too.

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

struct evp_pkey_st;

namespace airlock::testing {

class signing_key {
public:
    static signing_key rsa(int bits = 2048);
    static signing_key ec(std::string const& crv);  // "P-256", "P-384" or "P-521"
    static signing_key ed25519();

    signing_key(signing_key&& other) noexcept;
    signing_key& operator=(signing_key&& other) noexcept;
    signing_key(signing_key const&) = delete;
    signing_key& operator=(signing_key const&) = delete;
    ~signing_key();

    // The public half as a JWK (kty and n/e or crv/x/y), with kid and alg when they are not empty.
    boost::json::object public_jwk(std::string const& kid = "", std::string const& alg = "") const;
    // The JOSE signature bytes of `input` under `alg` ("RS256" … "EdDSA"; ES* as raw r||s). For PS*,
    // pss_salt_bytes other than -1 (the hash length, as JOSE requires) makes a non-conforming signature.
    std::string sign(std::string_view alg, std::string_view input, int pss_salt_bytes = -1) const;
    // The public key as PEM text: what a confused verifier would take as an HMAC secret.
    std::string public_pem() const;

private:
    explicit signing_key(evp_pkey_st* pkey, std::string crv) noexcept : pkey_(pkey), crv_(std::move(crv)) {}
    evp_pkey_st* pkey_ = nullptr;
    std::string crv_;
};

std::string b64url(std::string_view bytes);
std::string b64url_json(boost::json::object const& o);

// header.payload.signature, signed with `key` under header["alg"].
std::string sign_token(signing_key const& key, boost::json::object const& header, boost::json::object const& payload);
// header.payload. with alg "none" and an empty signature.
std::string unsigned_token(boost::json::object const& payload);
// An HS256 token keyed with `secret` (say, signing_key::public_pem()).
std::string hs256_token(std::string_view secret, boost::json::object header, boost::json::object const& payload);
// The same token with its payload (or header) replaced and its signature kept.
std::string with_payload(std::string const& token, boost::json::object const& payload);
std::string with_header(std::string const& token, boost::json::object const& header);
// {"keys": [...]}, serialised.
std::string jwks_json(std::vector<boost::json::object> const& keys);

}  // namespace airlock::testing
