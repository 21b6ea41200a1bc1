#pragma once
// SHA-256 digests (OpenSSL EVP) and their lowercase hex form.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace airlock::core {

using sha256_digest = std::array<std::uint8_t, 32>;

// Incremental hashing, for inputs assembled from parts (domain separators, chained hashes).
class sha256_hasher {
public:
    sha256_hasher();
    ~sha256_hasher();
    sha256_hasher(sha256_hasher const&) = delete;
    sha256_hasher& operator=(sha256_hasher const&) = delete;

    sha256_hasher& update(std::string_view bytes);
    sha256_hasher& update(std::uint8_t const* data, std::size_t size);
    sha256_digest finish();

private:
    void* ctx_;  // EVP_MD_CTX, kept opaque so OpenSSL headers stay out of core's interface
};

sha256_digest sha256(std::string_view bytes);
std::string to_hex(std::uint8_t const* data, std::size_t size);
std::string to_hex(sha256_digest const& d);
std::string sha256_hex(std::string_view bytes);

// HMAC-SHA256 (RFC 2104) under a 32-byte key: what airlock seals its opaque tokens with.
sha256_digest hmac_sha256(std::array<std::uint8_t, 32> const& key, std::string_view message);
// Whether two strings are equal, in time that depends on their lengths only (for MAC tags).
bool equal_constant_time(std::string_view a, std::string_view b) noexcept;

}  // namespace airlock::core
