#pragma once
// `airlock keygen --out DIR [--kid KID]`: creates the Ed25519 key pair airlock signs provenance
// with — DIR/provenance.key (PKCS#8 PEM, mode 0600), DIR/provenance.pub (SubjectPublicKeyInfo PEM)
// and DIR/provenance.kid (the key id, one line) — and prints the key id. Never overwrites.

#include "core/error.hpp"
#include "service/config/keys.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

int run_keygen(std::vector<std::string> const& args);

// derived_key_id of the key in a PEM public key (or, for convenience, a PEM private key).
core::result<std::string> derived_key_id_of_pem(std::string_view pem);

}  // namespace airlock::service
