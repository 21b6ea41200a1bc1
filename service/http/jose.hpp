#pragma once
// JOSE for a resource server, without I/O: strict base64url, the signature algorithms airlock
// verifies, a JWKS read into OpenSSL public keys, a compact JWS taken apart and its signature
// checked. Which keys to trust and which claims to require is access_token's business.
//
// Only public keys are ever built: a private member in a JWK is ignored, never loaded. Symmetric
// algorithms (HS*) and "none" are not algorithms here at all, so no code path can confuse an RSA
// public key with an HMAC secret.

#include "core/base64url.hpp"
#include "core/error.hpp"

#include <boost/json/object.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct evp_pkey_st;  // OpenSSL's EVP_PKEY, kept out of this header

namespace airlock::service::jose {

// RFC 4648 section 5 without padding. Decoding refuses '=', '+', '/', whitespace, a length of 1
// modulo 4 and non-zero trailing bits (two spellings of the same bytes would otherwise both verify).
using core::base64url_decode;
using core::base64url_encode;

enum class alg { rs256, rs384, rs512, ps256, ps384, ps512, es256, es384, es512, eddsa };

// "RS256" → alg::rs256; "none", "HS256" and anything unknown → nullopt. Case-sensitive (RFC 7515).
std::optional<alg> alg_from_string(std::string_view name);
std::string_view to_string(alg a);

// A verification key: an owned OpenSSL public key and what kind it is.
class public_key {
public:
    // Takes ownership of `pkey`. kty is "RSA", "EC" or "OKP"; crv is "" for RSA.
    public_key(evp_pkey_st* pkey, std::string kty, std::string crv, int bits) noexcept;
    ~public_key();
    public_key(public_key const&) = delete;
    public_key& operator=(public_key const&) = delete;

    std::string_view kty() const noexcept { return kty_; }
    std::string_view crv() const noexcept { return crv_; }
    int bits() const noexcept { return bits_; }  // RSA modulus size, or the curve's field size
    evp_pkey_st* native() const noexcept { return pkey_; }

    // Whether a token signed with `a` may be checked with this key (RSA for RS*/PS*, EC on the
    // alg's own curve for ES*, OKP Ed25519 for EdDSA).
    bool fits(alg a) const noexcept;

private:
    evp_pkey_st* pkey_;
    std::string kty_;
    std::string crv_;
    int bits_;
};

struct jwk {
    std::string kid;          // "" when the JWK has none
    std::optional<jose::alg> alg;   // the JWK's own "alg", when it names one
    std::string use;          // "" or "sig"
    std::shared_ptr<public_key const> key;
};

struct key_set {
    std::vector<jwk> keys;
    std::vector<std::string> skipped;  // one sentence per key that could not be used, and why

    // The first key with this kid; null when none has it.
    jwk const* find(std::string_view kid) const noexcept;
};

inline constexpr std::size_t max_jwks_bytes = 256 * 1024;
inline constexpr std::size_t max_jwks_keys = 100;
inline constexpr int min_rsa_bits = 2048;

// A JWKS document (RFC 7517 section 5). A key airlock cannot use is skipped with a reason; a document
// that is not a JWKS at all is an `invalid_jwks` error.
core::result<key_set> parse_jwks(std::string_view json);

struct compact_jws {
    boost::json::object header;
    alg algorithm;
    std::string kid;             // "" when the header has none
    boost::json::object payload;
    std::string signing_input;   // the first two parts and their dot, as the signer saw them
    std::string signature;       // decoded bytes
};

inline constexpr std::size_t max_token_bytes = 16384;

// A compact JWS (RFC 7515 section 7.1) whose payload is a JSON object. Error codes: "bad_alg" for an
// algorithm that is not one of alg's (none, HS*, unknown), "malformed" for everything else. A 5-part
// JWE and any `crit` header are refused: airlock decrypts nothing and understands no extension.
core::result<compact_jws> parse_compact(std::string_view token, std::size_t max_bytes = max_token_bytes);

// Whether the signature is the key's over the signing input. False, never an exception, for a key
// that does not fit the token's alg, a JWK whose own alg differs, or any OpenSSL failure.
bool verify_signature(compact_jws const& jws, jwk const& key);

}  // namespace airlock::service::jose
