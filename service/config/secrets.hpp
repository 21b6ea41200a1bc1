#pragma once
// The configuration's secrets: hiding every one of them from output, and creating the signing key
// and tokens that create_if_missing asks for.

#include "service/config/config.hpp"

#include "core/error.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace airlock::service {

// Registers every secret the configuration holds with core::secrets, from then on hidden in every
// output: principals' and the metrics token, providers' API keys, c.secrets, and the base64 lines
// of the signing key and of the TLS private key.
void register_secrets(config const& c);

// Writes what create_if_missing asked for and is missing: an Ed25519 signing key (PKCS#8 PEM, with
// its public key beside it at public_key_path) and random bearer tokens, each secret created with
// mode 0600 and never overwritten. Fills in c.
core::result<void> create_missing_secrets(config& c);

// Where create_missing_secrets puts the public key of a created signing key: the key file with the
// extension ".pub" (keys/provenance.key → keys/provenance.pub, as `airlock keygen` names them).
std::filesystem::path public_key_path(std::filesystem::path const& key_file);

// The key id used when signing.kid is not configured: "ed25519-" and the first 16 hex digits of the
// SHA-256 of the raw 32-byte public key.
std::string key_id_of(std::string_view public_key_raw);

}  // namespace airlock::service
