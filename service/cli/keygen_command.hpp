#pragma once
// `airlock keygen --out DIR [--kid KID]`: creates the Ed25519 key pair airlock signs provenance
// with — DIR/provenance.key (PKCS#8 PEM, mode 0600), DIR/provenance.pub (SubjectPublicKeyInfo PEM)
// and DIR/provenance.kid (the key id, one line) — and prints the key id. Never overwrites.

#include "core/error.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

int run_keygen(std::vector<std::string> const& args);

// The key id of an Ed25519 public key when none is configured: "ed25519-" followed by the first 16
// hex digits of SHA-256 of the raw 32-byte key. The same scheme as config.hpp's key_id_of, so the id
// the gateway signs under, the one keygen prints and the one the upstream example derives agree.
std::string derived_key_id(std::string_view raw_public_key);

// derived_key_id of the key in a PEM public key (or, for convenience, a PEM private key).
core::result<std::string> derived_key_id_of_pem(std::string_view pem);

// Why `kid` cannot be a key id (empty, longer than 128 bytes, or not printable ASCII without
// spaces), or an empty string when it can.
std::string key_id_problem(std::string_view kid);

}  // namespace airlock::service
