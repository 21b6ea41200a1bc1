#pragma once
// Key ids: the one a configured or generated Ed25519 key signs under, and what a key id may hold.
// Here rather than in `airlock keygen` because the config reader checks and derives them too.

#include <string>
#include <string_view>

namespace airlock::service {

// The key id of an Ed25519 public key when none is configured: "ed25519-" followed by the first 16
// hex digits of SHA-256 of the raw 32-byte key. The same scheme as config.hpp's key_id_of, so the id
// the gateway signs under, the one keygen prints and the one the upstream example derives agree.
std::string derived_key_id(std::string_view raw_public_key);

// Why `kid` cannot be a key id (empty, longer than 128 bytes, or not printable ASCII without
// spaces), or an empty string when it can.
std::string key_id_problem(std::string_view kid);

}  // namespace airlock::service
