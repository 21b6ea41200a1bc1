#include "core/sha256.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace airlock::core {

namespace {
EVP_MD_CTX* as_ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }
}  // namespace

sha256_hasher::sha256_hasher() : ctx_(EVP_MD_CTX_new()) {
    // Allocation or init failure here means OpenSSL itself is unusable: a bug-tier error.
    if (!ctx_ || EVP_DigestInit_ex(as_ctx(ctx_), EVP_sha256(), nullptr) != 1) {
        EVP_MD_CTX_free(as_ctx(ctx_));
        throw std::runtime_error("OpenSSL: cannot initialise SHA-256");
    }
}

sha256_hasher::~sha256_hasher() { EVP_MD_CTX_free(as_ctx(ctx_)); }

sha256_hasher& sha256_hasher::update(std::string_view bytes) {
    return update(reinterpret_cast<std::uint8_t const*>(bytes.data()), bytes.size());
}

sha256_hasher& sha256_hasher::update(std::uint8_t const* data, std::size_t size) {
    if (EVP_DigestUpdate(as_ctx(ctx_), data, size) != 1) throw std::runtime_error("OpenSSL: SHA-256 update failed");
    return *this;
}

sha256_digest sha256_hasher::finish() {
    sha256_digest out{};
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(as_ctx(ctx_), out.data(), &len) != 1 || len != out.size())
        throw std::runtime_error("OpenSSL: SHA-256 final failed");
    return out;
}

sha256_digest sha256(std::string_view bytes) { return sha256_hasher{}.update(bytes).finish(); }

std::string to_hex(std::uint8_t const* data, std::size_t size) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(size * 2);
    for (std::size_t i = 0; i < size; ++i) {
        out.push_back(digits[data[i] >> 4]);
        out.push_back(digits[data[i] & 0xf]);
    }
    return out;
}

std::string to_hex(sha256_digest const& d) { return to_hex(d.data(), d.size()); }

std::string sha256_hex(std::string_view bytes) { return to_hex(sha256(bytes)); }

sha256_digest hmac_sha256(std::array<std::uint8_t, 32> const& key, std::string_view message) {
    std::array<std::uint8_t, 64> ipad{}, opad{};
    for (std::size_t i = 0; i < ipad.size(); ++i) {
        std::uint8_t k = i < key.size() ? key[i] : 0;
        ipad[i] = static_cast<std::uint8_t>(k ^ 0x36);
        opad[i] = static_cast<std::uint8_t>(k ^ 0x5c);
    }
    auto inner = sha256_hasher{}.update(ipad.data(), ipad.size()).update(message).finish();
    return sha256_hasher{}.update(opad.data(), opad.size()).update(inner.data(), inner.size()).finish();
}

bool equal_constant_time(std::string_view a, std::string_view b) noexcept {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
    return diff == 0;
}

}  // namespace airlock::core
