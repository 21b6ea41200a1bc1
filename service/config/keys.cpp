#include "service/config/keys.hpp"

#include "core/sha256.hpp"

namespace airlock::service {

namespace {

constexpr std::size_t max_kid_bytes = 128;

}  // namespace

std::string derived_key_id(std::string_view raw_public_key) {
    return "ed25519-" + core::sha256_hex(raw_public_key).substr(0, 16);
}

std::string key_id_problem(std::string_view kid) {
    if (kid.empty()) return "the key id is empty";
    if (kid.size() > max_kid_bytes) return "the key id is longer than " + std::to_string(max_kid_bytes) + " bytes";
    for (char c : kid)
        if (c < 0x21 || c > 0x7e) return "the key id may hold only printable ASCII without spaces";
    return {};
}

}  // namespace airlock::service
