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

}  // namespace airlock::core
