#include "service/http/jose.hpp"

#include "core/base64url.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <variant>

namespace airlock::service::jose {

namespace {

// ---- OpenSSL ownership ----

struct pkey_deleter {
    void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct pkey_ctx_deleter {
    void operator()(EVP_PKEY_CTX* p) const noexcept { EVP_PKEY_CTX_free(p); }
};
struct md_ctx_deleter {
    void operator()(EVP_MD_CTX* p) const noexcept { EVP_MD_CTX_free(p); }
};
struct bn_deleter {
    void operator()(BIGNUM* p) const noexcept { BN_free(p); }
};
struct param_bld_deleter {
    void operator()(OSSL_PARAM_BLD* p) const noexcept { OSSL_PARAM_BLD_free(p); }
};
struct param_deleter {
    void operator()(OSSL_PARAM* p) const noexcept { OSSL_PARAM_free(p); }
};
struct ecdsa_sig_deleter {
    void operator()(ECDSA_SIG* p) const noexcept { ECDSA_SIG_free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_deleter>;
using pkey_ctx_ptr = std::unique_ptr<EVP_PKEY_CTX, pkey_ctx_deleter>;
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, md_ctx_deleter>;
using bn_ptr = std::unique_ptr<BIGNUM, bn_deleter>;
using param_bld_ptr = std::unique_ptr<OSSL_PARAM_BLD, param_bld_deleter>;
using param_ptr = std::unique_ptr<OSSL_PARAM, param_deleter>;
using ecdsa_sig_ptr = std::unique_ptr<ECDSA_SIG, ecdsa_sig_deleter>;

// OpenSSL queues errors per thread; a failure already turned into a skip or a false must not linger
// and be blamed on the next, unrelated OpenSSL call on this thread.
struct clear_openssl_errors {
    ~clear_openssl_errors() { ERR_clear_error(); }
};

unsigned char const* bytes(std::string const& s) noexcept { return reinterpret_cast<unsigned char const*>(s.data()); }

// ---- algorithms ----

enum class family { rsa_pkcs1, rsa_pss, ecdsa, eddsa };

struct alg_info {
    alg a;
    std::string_view name;
    family fam;
    char const* digest;       // null for EdDSA, which hashes inside the signature scheme
    std::string_view curve;   // the JWK crv an ES* key must have
    std::size_t coordinate;   // bytes of one ECDSA coordinate (r, s, x, y)
};

constexpr std::array<alg_info, 10> algs{{
    {alg::rs256, "RS256", family::rsa_pkcs1, "SHA256", "", 0},
    {alg::rs384, "RS384", family::rsa_pkcs1, "SHA384", "", 0},
    {alg::rs512, "RS512", family::rsa_pkcs1, "SHA512", "", 0},
    {alg::ps256, "PS256", family::rsa_pss, "SHA256", "", 0},
    {alg::ps384, "PS384", family::rsa_pss, "SHA384", "", 0},
    {alg::ps512, "PS512", family::rsa_pss, "SHA512", "", 0},
    {alg::es256, "ES256", family::ecdsa, "SHA256", "P-256", 32},
    {alg::es384, "ES384", family::ecdsa, "SHA384", "P-384", 48},
    {alg::es512, "ES512", family::ecdsa, "SHA512", "P-521", 66},
    {alg::eddsa, "EdDSA", family::eddsa, nullptr, "Ed25519", 0},
}};

alg_info const& info(alg a) noexcept { return algs[static_cast<std::size_t>(a)]; }

// ---- JWK → public key ----

struct curve_info {
    std::string_view crv;
    char const* group;
    std::size_t coordinate;
};
constexpr std::array<curve_info, 3> curves{{
    {"P-256", "prime256v1", 32},
    {"P-384", "secp384r1", 48},
    {"P-521", "secp521r1", 66},
}};

// A key member's reason to be skipped, or the key.
struct built_key {
    std::shared_ptr<public_key const> key;
    std::string why_not;
};

built_key skip(std::string why) { return {nullptr, std::move(why)}; }

std::optional<std::string> string_member(boost::json::object const& o, std::string_view name) {
    auto const* v = o.if_contains(name);
    if (!v || !v->is_string()) return std::nullopt;
    return std::string(v->get_string());
}

// A base64url member that must be present; the reason when it is absent or not base64url.
std::optional<std::string> b64_member(boost::json::object const& o, std::string_view name, std::string& why) {
    auto const* v = o.if_contains(name);
    if (!v) {
        why = "it has no \"" + std::string(name) + "\"";
        return std::nullopt;
    }
    if (!v->is_string()) {
        why = "its \"" + std::string(name) + "\" is not a string";
        return std::nullopt;
    }
    auto decoded = base64url_decode(v->get_string());
    if (!decoded || decoded->empty()) {
        why = "its \"" + std::string(name) + "\" is not base64url";
        return std::nullopt;
    }
    return decoded;
}

pkey_ptr from_params(char const* type, OSSL_PARAM_BLD* bld) {
    param_ptr params(OSSL_PARAM_BLD_to_param(bld));
    pkey_ctx_ptr ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
    if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1) return nullptr;
    EVP_PKEY* raw = nullptr;
    if (EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) return nullptr;
    return pkey_ptr(raw);
}

built_key rsa_key(boost::json::object const& o) {
    std::string why;
    auto n = b64_member(o, "n", why);
    if (!n) return skip(why);
    auto e = b64_member(o, "e", why);
    if (!e) return skip(why);
    bn_ptr n_bn(BN_bin2bn(bytes(*n), static_cast<int>(n->size()), nullptr));
    bn_ptr e_bn(BN_bin2bn(bytes(*e), static_cast<int>(e->size()), nullptr));
    if (!n_bn || !e_bn) return skip("OpenSSL could not read its modulus");
    int bits = BN_num_bits(n_bn.get());
    if (bits < min_rsa_bits)
        return skip("its RSA modulus of " + std::to_string(bits) + " bits is below " + std::to_string(min_rsa_bits));
    // An even or unit exponent is no RSA key; a huge one is a way to make every verification slow.
    if (!BN_is_odd(e_bn.get()) || BN_is_one(e_bn.get()) || BN_num_bits(e_bn.get()) > 64)
        return skip("its RSA exponent is not usable");
    param_bld_ptr bld(OSSL_PARAM_BLD_new());
    if (!bld || OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, n_bn.get()) != 1 ||
        OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, e_bn.get()) != 1)
        return skip("OpenSSL could not build it");
    auto pkey = from_params("RSA", bld.get());
    if (!pkey) return skip("OpenSSL refused it as an RSA public key");
    return {std::make_shared<public_key const>(pkey.release(), "RSA", "", bits), ""};
}

built_key ec_key(boost::json::object const& o) {
    auto crv = string_member(o, "crv");
    if (!crv) return skip("it has no \"crv\"");
    auto c = std::find_if(curves.begin(), curves.end(), [&](curve_info const& ci) { return ci.crv == *crv; });
    if (c == curves.end()) return skip("its curve \"" + *crv + "\" is not P-256, P-384 or P-521");
    std::string why;
    auto x = b64_member(o, "x", why);
    if (!x) return skip(why);
    auto y = b64_member(o, "y", why);
    if (!y) return skip(why);
    // RFC 7518 section 6.2.1.2: each coordinate is the full field size, leading zeros included.
    if (x->size() != c->coordinate || y->size() != c->coordinate)
        return skip("its coordinates are not " + std::to_string(c->coordinate) + " bytes each");
    std::string point;
    point.reserve(1 + 2 * c->coordinate);
    point += '\x04';  // SEC 1 uncompressed point
    point += *x;
    point += *y;
    param_bld_ptr bld(OSSL_PARAM_BLD_new());
    if (!bld || OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, c->group, 0) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) != 1)
        return skip("OpenSSL could not build it");
    auto pkey = from_params("EC", bld.get());
    if (!pkey) return skip("its point is not on " + *crv);
    // fromdata decodes the point; the explicit check also rejects the point at infinity and points
    // outside the prime-order subgroup, whatever the provider's decoder lets through.
    pkey_ctx_ptr check(EVP_PKEY_CTX_new_from_pkey(nullptr, pkey.get(), nullptr));
    if (!check || EVP_PKEY_public_check(check.get()) != 1) return skip("its point is not on " + *crv);
    int bits = EVP_PKEY_get_bits(pkey.get());
    return {std::make_shared<public_key const>(pkey.release(), "EC", *crv, bits), ""};
}

built_key okp_key(boost::json::object const& o) {
    auto crv = string_member(o, "crv");
    if (!crv) return skip("it has no \"crv\"");
    if (*crv != "Ed25519") return skip("its OKP curve \"" + *crv + "\" is not Ed25519");
    std::string why;
    auto x = b64_member(o, "x", why);
    if (!x) return skip(why);
    if (x->size() != 32) return skip("its Ed25519 key is not 32 bytes");
    pkey_ptr pkey(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, bytes(*x), x->size()));
    if (!pkey) return skip("OpenSSL refused it as an Ed25519 public key");
    return {std::make_shared<public_key const>(pkey.release(), "OKP", "Ed25519", 256), ""};
}

// The reason a JWK cannot be used, or the usable jwk.
std::variant<jwk, std::string> read_jwk(boost::json::value const& v) {
    if (!v.is_object()) return std::string("it is not a JSON object");
    auto const& o = v.get_object();
    jwk out;
    if (auto const* kid = o.if_contains("kid")) {
        if (!kid->is_string()) return std::string("its \"kid\" is not a string");
        out.kid = std::string(kid->get_string());
    }
    if (auto const* use = o.if_contains("use")) {
        if (!use->is_string()) return std::string("its \"use\" is not a string");
        out.use = std::string(use->get_string());
        if (out.use != "sig") return "its use is \"" + out.use + "\", not \"sig\"";
    }
    if (auto const* ops = o.if_contains("key_ops")) {
        bool verifies = false;
        if (ops->is_array())
            for (auto const& op : ops->get_array()) verifies = verifies || (op.is_string() && op.get_string() == "verify");
        if (!verifies) return std::string("its key_ops do not include \"verify\"");
    }
    if (auto const* a = o.if_contains("alg")) {
        if (!a->is_string()) return std::string("its \"alg\" is not a string");
        out.alg = alg_from_string(a->get_string());
        if (!out.alg) return "its alg \"" + std::string(a->get_string()) + "\" is not one airlock verifies";
    }
    auto const* kty = o.if_contains("kty");
    if (!kty || !kty->is_string()) return std::string("it has no \"kty\"");
    // Private members (d, p, q, dp, dq, qi, oth, k) are never read: only the public half is built.
    built_key built;
    if (kty->get_string() == "RSA") built = rsa_key(o);
    else if (kty->get_string() == "EC") built = ec_key(o);
    else if (kty->get_string() == "OKP") built = okp_key(o);
    else return "its kty \"" + std::string(kty->get_string()) + "\" is not RSA, EC or OKP";
    if (!built.key) return built.why_not;
    if (out.alg && !built.key->fits(*out.alg))
        return "its alg " + std::string(to_string(*out.alg)) + " does not fit a " + std::string(built.key->kty()) + " key";
    out.key = std::move(built.key);
    return out;
}

// An attacker-chosen string in a log sentence: bounded, and without control characters.
std::string in_quotes(std::string_view s) {
    std::string out = "\"";
    for (char c : s.substr(0, 64)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    if (s.size() > 64) out += "...";
    return out + "\"";
}

// ---- compact JWS ----

constexpr std::size_t max_header_depth = 4;
constexpr std::size_t max_payload_depth = 16;

core::error malformed(std::string message) { return core::make_error("malformed", std::move(message)); }

std::optional<boost::json::object> json_object_part(std::string_view part, std::size_t depth) {
    auto decoded = base64url_decode(part);
    if (!decoded) return std::nullopt;
    boost::json::parse_options opts;
    opts.max_depth = depth;
    boost::system::error_code ec;
    auto v = boost::json::parse(*decoded, ec, {}, opts);
    if (ec || !v.is_object()) return std::nullopt;
    return std::move(v.get_object());
}

bool verify_ecdsa(EVP_MD_CTX* ctx, alg_info const& ai, std::string const& sig, std::string const& input) {
    // JOSE sends r||s, each the coordinate size; OpenSSL verifies the DER ECDSA-Sig-Value.
    if (sig.size() != 2 * ai.coordinate) return false;
    ecdsa_sig_ptr es(ECDSA_SIG_new());
    if (!es) return false;
    BIGNUM* r = BN_bin2bn(bytes(sig), static_cast<int>(ai.coordinate), nullptr);
    BIGNUM* s = BN_bin2bn(bytes(sig) + ai.coordinate, static_cast<int>(ai.coordinate), nullptr);
    if (!r || !s || ECDSA_SIG_set0(es.get(), r, s) != 1) {
        BN_free(r);
        BN_free(s);
        return false;
    }
    unsigned char* der = nullptr;
    int der_len = i2d_ECDSA_SIG(es.get(), &der);
    if (der_len <= 0) return false;
    int ok = EVP_DigestVerify(ctx, der, static_cast<std::size_t>(der_len), bytes(input), input.size());
    OPENSSL_free(der);
    return ok == 1;
}

}  // namespace


std::optional<alg> alg_from_string(std::string_view name) {
    for (auto const& ai : algs)
        if (ai.name == name) return ai.a;
    return std::nullopt;
}

std::string_view to_string(alg a) { return info(a).name; }

public_key::public_key(evp_pkey_st* pkey, std::string kty, std::string crv, int bits) noexcept
    : pkey_(pkey), kty_(std::move(kty)), crv_(std::move(crv)), bits_(bits) {}

public_key::~public_key() { EVP_PKEY_free(pkey_); }

bool public_key::fits(alg a) const noexcept {
    auto const& ai = info(a);
    switch (ai.fam) {
    case family::rsa_pkcs1:
    case family::rsa_pss: return kty_ == "RSA";
    case family::ecdsa: return kty_ == "EC" && crv_ == ai.curve;
    case family::eddsa: return kty_ == "OKP" && crv_ == "Ed25519";
    }
    return false;
}

jwk const* key_set::find(std::string_view kid) const noexcept {
    for (auto const& k : keys)
        if (k.kid == kid) return &k;
    return nullptr;
}

core::result<key_set> parse_jwks(std::string_view json) {
    clear_openssl_errors clear;
    if (json.size() > max_jwks_bytes)
        return core::make_error("invalid_jwks", "the JWKS is " + std::to_string(json.size()) + " bytes, more than " +
                                                    std::to_string(max_jwks_bytes));
    boost::json::parse_options opts;
    opts.max_depth = 8;  // a JWKS is an object of an array of objects, x5c arrays at most
    boost::system::error_code ec;
    auto doc = boost::json::parse(json, ec, {}, opts);
    if (ec) return core::make_error("invalid_jwks", "the JWKS is not JSON: " + ec.message());
    if (!doc.is_object()) return core::make_error("invalid_jwks", "the JWKS is not a JSON object");
    auto const* keys = doc.get_object().if_contains("keys");
    if (!keys || !keys->is_array()) return core::make_error("invalid_jwks", "the JWKS has no \"keys\" array");
    auto const& arr = keys->get_array();
    if (arr.size() > max_jwks_keys)
        return core::make_error("invalid_jwks", "the JWKS has " + std::to_string(arr.size()) + " keys, more than " +
                                                    std::to_string(max_jwks_keys));
    key_set out;
    for (std::size_t i = 0; i < arr.size(); ++i) {
        auto read = read_jwk(arr[i]);
        if (auto* k = std::get_if<jwk>(&read)) {
            out.keys.push_back(std::move(*k));
            continue;
        }
        std::string name = "key " + std::to_string(i);
        if (arr[i].is_object())
            if (auto kid = string_member(arr[i].get_object(), "kid")) name += " (kid " + in_quotes(*kid) + ")";
        out.skipped.push_back(name + " is skipped: " + std::get<std::string>(read));
    }
    return out;
}

core::result<compact_jws> parse_compact(std::string_view token, std::size_t max_bytes) {
    if (token.size() > max_bytes)
        return malformed("the token is " + std::to_string(token.size()) + " bytes, more than " + std::to_string(max_bytes));
    auto dots = std::count(token.begin(), token.end(), '.');
    if (dots == 4) return malformed("the token is an encrypted JWE, which airlock does not decrypt");
    if (dots != 2) return malformed("the token is not three dot-separated parts");
    auto first = token.find('.');
    auto second = token.find('.', first + 1);
    auto header_part = token.substr(0, first);
    auto payload_part = token.substr(first + 1, second - first - 1);
    auto signature_part = token.substr(second + 1);
    // The header is read before the other parts are required, so that alg "none" (whose signature
    // is empty) is refused for what it is.
    if (header_part.empty()) return malformed("the token has an empty part");
    auto header = json_object_part(header_part, max_header_depth);
    if (!header) return malformed("the token's header is not a base64url JSON object");
    auto const* a = header->if_contains("alg");
    if (!a || !a->is_string()) return malformed("the token's header has no alg");
    auto algorithm = alg_from_string(a->get_string());
    if (!algorithm)
        return core::make_error("bad_alg", "the token's alg " + in_quotes(a->get_string()) + " is not one airlock verifies");
    if (header->contains("crit"))
        return malformed("the token's header has crit, and airlock understands no JWS extension");
    // RFC 7797's unencoded payload only makes sense with crit; alone it is a token to refuse, not guess at.
    if (header->contains("b64")) return malformed("the token's header has b64");
    std::string kid;
    if (auto const* k = header->if_contains("kid")) {
        if (!k->is_string()) return malformed("the token's kid is not a string");
        kid = std::string(k->get_string());
    }

    if (payload_part.empty() || signature_part.empty()) return malformed("the token has an empty part");

    auto payload = json_object_part(payload_part, max_payload_depth);
    if (!payload) return malformed("the token's payload is not a base64url JSON object");
    auto signature = base64url_decode(signature_part);
    if (!signature) return malformed("the token's signature is not base64url");

    compact_jws out{std::move(*header), *algorithm, std::move(kid), std::move(*payload),
                    std::string(token.substr(0, second)), std::move(*signature)};
    return out;
}

bool verify_signature(compact_jws const& jws, jwk const& key) {
    try {
        clear_openssl_errors clear;
        if (!key.key || !key.key->native() || !key.key->fits(jws.algorithm)) return false;
        if (key.alg && *key.alg != jws.algorithm) return false;
        auto const& ai = info(jws.algorithm);
        md_ctx_ptr ctx(EVP_MD_CTX_new());
        if (!ctx) return false;
        EVP_PKEY_CTX* pctx = nullptr;  // owned by ctx
        if (EVP_DigestVerifyInit_ex(ctx.get(), &pctx, ai.digest, nullptr, nullptr, key.key->native(), nullptr) != 1)
            return false;
        switch (ai.fam) {
        case family::rsa_pss:
            // RFC 7518 section 3.5: MGF1 with the same hash, salt as long as the hash.
            if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
                EVP_PKEY_CTX_set_rsa_mgf1_md_name(pctx, ai.digest, nullptr) != 1 ||
                EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1)
                return false;
            [[fallthrough]];
        case family::rsa_pkcs1:
        case family::eddsa:
            return EVP_DigestVerify(ctx.get(), bytes(jws.signature), jws.signature.size(), bytes(jws.signing_input),
                                    jws.signing_input.size()) == 1;
        case family::ecdsa: return verify_ecdsa(ctx.get(), ai, jws.signature, jws.signing_input);
        }
        return false;
    } catch (...) {
        return false;
    }
}

}  // namespace airlock::service::jose
