#include "tests/support/jwt_signer.hpp"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>
#include <stdexcept>

namespace airlock::testing {

namespace {

[[noreturn]] void fail(std::string const& what) { throw std::runtime_error("jwt_signer: " + what); }

unsigned char const* bytes(std::string_view s) { return reinterpret_cast<unsigned char const*>(s.data()); }

std::string bn_bytes(EVP_PKEY* pkey, char const* name, int pad_to) {
    BIGNUM* bn = nullptr;
    if (EVP_PKEY_get_bn_param(pkey, name, &bn) != 1) fail(std::string("no ") + name);
    int size = pad_to > 0 ? pad_to : BN_num_bytes(bn);
    std::string out(static_cast<std::size_t>(size), '\0');
    int written = pad_to > 0 ? BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), size)
                             : BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
    BN_free(bn);
    if (written != size) fail("cannot write a number");
    return out;
}

int coordinate_size(std::string const& crv) { return crv == "P-256" ? 32 : crv == "P-384" ? 48 : 66; }

char const* digest_of(std::string_view alg) {
    if (alg == "EdDSA") return nullptr;
    auto bits = alg.substr(2);
    return bits == "256" ? "SHA256" : bits == "384" ? "SHA384" : "SHA512";
}

std::string split_part(std::string const& token, int index) {
    std::size_t start = 0;
    for (int i = 0; i < index; ++i) start = token.find('.', start) + 1;
    auto end = token.find('.', start);
    return token.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

signing_key signing_key::rsa(int bits) {
    auto* k = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<std::size_t>(bits));
    if (!k) fail("RSA keygen");
    return signing_key(k, "");
}

signing_key signing_key::ec(std::string const& crv) {
    auto* k = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", crv.c_str());
    if (!k) fail("EC keygen on " + crv);
    return signing_key(k, crv);
}

signing_key signing_key::ed25519() {
    auto* k = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    if (!k) fail("Ed25519 keygen");
    return signing_key(k, "Ed25519");
}

signing_key::signing_key(signing_key&& other) noexcept : pkey_(other.pkey_), crv_(std::move(other.crv_)) {
    other.pkey_ = nullptr;
}

signing_key& signing_key::operator=(signing_key&& other) noexcept {
    std::swap(pkey_, other.pkey_);
    std::swap(crv_, other.crv_);
    return *this;
}

signing_key::~signing_key() { EVP_PKEY_free(pkey_); }

boost::json::object signing_key::public_jwk(std::string const& kid, std::string const& alg) const {
    boost::json::object jwk;
    if (crv_.empty()) {
        jwk["kty"] = "RSA";
        jwk["n"] = b64url(bn_bytes(pkey_, OSSL_PKEY_PARAM_RSA_N, 0));
        jwk["e"] = b64url(bn_bytes(pkey_, OSSL_PKEY_PARAM_RSA_E, 0));
    } else if (crv_ == "Ed25519") {
        std::string x(32, '\0');
        std::size_t len = x.size();
        if (EVP_PKEY_get_raw_public_key(pkey_, reinterpret_cast<unsigned char*>(x.data()), &len) != 1) fail("raw key");
        jwk["kty"] = "OKP";
        jwk["crv"] = "Ed25519";
        jwk["x"] = b64url(x);
    } else {
        jwk["kty"] = "EC";
        jwk["crv"] = crv_;
        jwk["x"] = b64url(bn_bytes(pkey_, OSSL_PKEY_PARAM_EC_PUB_X, coordinate_size(crv_)));
        jwk["y"] = b64url(bn_bytes(pkey_, OSSL_PKEY_PARAM_EC_PUB_Y, coordinate_size(crv_)));
    }
    if (!kid.empty()) jwk["kid"] = kid;
    if (!alg.empty()) jwk["alg"] = alg;
    return jwk;
}

std::string signing_key::sign(std::string_view alg, std::string_view input, int pss_salt_bytes) const {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_PKEY_CTX* pctx = nullptr;
    if (EVP_DigestSignInit_ex(ctx.get(), &pctx, digest_of(alg), nullptr, nullptr, pkey_, nullptr) != 1)
        fail("sign init for " + std::string(alg));
    if (alg.substr(0, 2) == "PS") {
        if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
            EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, pss_salt_bytes < 0 ? RSA_PSS_SALTLEN_DIGEST : pss_salt_bytes) != 1)
            fail("PSS parameters");
    }
    std::size_t len = 0;
    if (EVP_DigestSign(ctx.get(), nullptr, &len, bytes(input), input.size()) != 1) fail("sign size");
    std::string sig(len, '\0');
    if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, bytes(input), input.size()) != 1)
        fail("sign");
    sig.resize(len);
    if (alg.substr(0, 2) != "ES") return sig;
    // OpenSSL signs ECDSA in DER; JOSE wants r and s side by side, each the coordinate size.
    auto const* p = bytes(sig);
    ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    if (!es) fail("DER ECDSA signature");
    int n = coordinate_size(crv_);
    std::string raw(static_cast<std::size_t>(2 * n), '\0');
    auto* out = reinterpret_cast<unsigned char*>(raw.data());
    BN_bn2binpad(ECDSA_SIG_get0_r(es), out, n);
    BN_bn2binpad(ECDSA_SIG_get0_s(es), out + n, n);
    ECDSA_SIG_free(es);
    return raw;
}

std::string signing_key::public_pem() const {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    if (PEM_write_bio_PUBKEY(bio.get(), pkey_) != 1) fail("PEM");
    char* data = nullptr;
    long len = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(len));
}

std::string b64url(std::string_view in) {
    // A plain lookup per 6 bits, written apart from service/http/jose's encoder on purpose.
    static constexpr char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        unsigned v = (unsigned(static_cast<unsigned char>(in[i])) << 16) |
                     (unsigned(static_cast<unsigned char>(in[i + 1])) << 8) | static_cast<unsigned char>(in[i + 2]);
        for (int shift = 18; shift >= 0; shift -= 6) out += table[(v >> shift) & 63];
    }
    auto rest = in.size() - i;
    if (rest > 0) {
        unsigned v = unsigned(static_cast<unsigned char>(in[i])) << 16;
        if (rest == 2) v |= unsigned(static_cast<unsigned char>(in[i + 1])) << 8;
        out += table[(v >> 18) & 63];
        out += table[(v >> 12) & 63];
        if (rest == 2) out += table[(v >> 6) & 63];
    }
    return out;
}

std::string b64url_json(boost::json::object const& o) { return b64url(boost::json::serialize(o)); }

std::string sign_token(signing_key const& key, boost::json::object const& header, boost::json::object const& payload) {
    auto input = b64url_json(header) + "." + b64url_json(payload);
    std::string alg(header.at("alg").as_string());
    return input + "." + b64url(key.sign(alg, input));
}

std::string unsigned_token(boost::json::object const& payload) {
    return b64url_json({{"alg", "none"}, {"typ", "JWT"}}) + "." + b64url_json(payload) + ".";
}

std::string hs256_token(std::string_view secret, boost::json::object header, boost::json::object const& payload) {
    header["alg"] = "HS256";
    auto input = b64url_json(header) + "." + b64url_json(payload);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), bytes(input), input.size(), mac, &len))
        fail("HMAC");
    return input + "." + b64url(std::string_view(reinterpret_cast<char const*>(mac), len));
}

std::string with_payload(std::string const& token, boost::json::object const& payload) {
    return split_part(token, 0) + "." + b64url_json(payload) + "." + split_part(token, 2);
}

std::string with_header(std::string const& token, boost::json::object const& header) {
    return b64url_json(header) + "." + split_part(token, 1) + "." + split_part(token, 2);
}

std::string jwks_json(std::vector<boost::json::object> const& keys) {
    boost::json::array arr;
    for (auto const& k : keys) arr.push_back(k);
    return boost::json::serialize(boost::json::object{{"keys", arr}});
}

}  // namespace airlock::testing
