#pragma once
// Signed provenance for one tool call: who asked (run, agent, manifest digest), for what (tool,
// SHA-256 of the canonical arguments), when, signed with Ed25519 under a key id.

#include "core/error.hpp"
#include "core/tool_id.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::core {

// The key under params._meta that carries the block.
inline constexpr std::string_view provenance_meta_key = "dev.airlock/provenance";

struct attestation {
    std::string kid;
    std::string alg = "Ed25519";
    std::string sig;  // base64url without padding, over SHA-256 of the domain-separated payload
};

struct provenance {
    std::string run_id;
    std::string effect_key;
    std::string agent_name;
    std::string agent_digest;
    std::string tool;         // tool://server/name
    std::string args_sha256;  // hex SHA-256 of the canonical arguments
    std::chrono::sys_seconds issued_at;
    std::chrono::sys_seconds expires_at;
    std::string nonce;
    std::optional<core::attestation> attestation;  // absent: sent unsigned, never self-invented
};

enum class provenance_verdict {
    ok, unsigned_, unknown_key, bad_signature, expired, not_yet_valid, tool_mismatch, arguments_mismatch
};
std::string_view to_string(provenance_verdict v) noexcept;

// The bytes that are hashed and signed: "airlock/provenance/v1" ‖ 0x00 ‖ canonical fields (all but
// attestation.sig). Throws error_exception for a time outside years 0000-9999 or a non-UTF-8 string.
std::string provenance_signing_payload(provenance const& p);

// An Ed25519 private key with its key id. Loaded from a PEM (PKCS#8) file's contents.
class provenance_signer {
public:
    static result<provenance_signer> from_pem(std::string kid, std::string_view pem);
    static result<provenance_signer> from_raw_seed(std::string kid, std::string_view seed32);
    provenance_signer(provenance_signer&&) noexcept;
    provenance_signer& operator=(provenance_signer&&) noexcept;
    ~provenance_signer();

    std::string const& kid() const noexcept { return kid_; }
    // Fills p.attestation. Refuses only when OpenSSL fails.
    result<void> sign(provenance& p) const;
    // The raw 32-byte public key.
    std::string public_key_raw() const;
    std::string public_key_pem() const;

private:
    provenance_signer(std::string kid, void* pkey);
    std::string kid_;
    void* pkey_ = nullptr;      // EVP_PKEY
    void* prepared_ = nullptr;  // EVP_MD_CTX already set up to sign with pkey_, copied per signature
};

// Trusts a set of public keys by key id; rotation = trusting two.
class provenance_verifier {
public:
    provenance_verifier();
    provenance_verifier(provenance_verifier&&) noexcept;
    provenance_verifier& operator=(provenance_verifier&&) noexcept;
    ~provenance_verifier();

    result<void> trust_pem(std::string kid, std::string_view public_pem);
    result<void> trust_raw(std::string kid, std::string_view public_key32);

    provenance_verdict verify(provenance const& p, tool_id const& tool, boost::json::value const& arguments,
                              std::chrono::sys_seconds now) const;

private:
    std::map<std::string, void*> keys_;  // kid → EVP_PKEY
};

// Builds an unsigned block; args_sha256 is computed from the canonical arguments.
result<provenance> make_provenance(std::string run_id, std::string effect_key, std::string agent_name,
                                   std::string agent_digest, tool_id const& tool,
                                   boost::json::value const& arguments, std::chrono::sys_seconds issued_at,
                                   std::chrono::seconds lifetime, std::string nonce);

boost::json::object to_json(provenance const& p);
result<provenance> provenance_from_json(boost::json::value const& v);

// Signs `message` itself (no hashing, no domain separation) with the key whose 32-byte seed is given:
// plain RFC 8032 Ed25519, so the known-answer vectors can check the primitive the signer uses.
result<std::string> ed25519_sign_raw(std::string_view seed32, std::string_view message);

// Puts the block under params._meta["dev.airlock/provenance"], creating _meta when absent.
void attach_provenance(boost::json::object& params, provenance const& p);
// The block in a tools/call params object; nullopt when params carry none. Malformed blocks refuse.
result<std::optional<provenance>> provenance_from_params(boost::json::value const& params);

// What a callee (or `airlock verify-provenance`) needs from one tools/call params object: the block
// found there, if any, and the verdict on it against params.arguments (absent arguments read as {}).
struct provenance_check {
    provenance_verdict verdict;
    std::optional<provenance> block;
};
result<provenance_check> verify_call_params(provenance_verifier const& verifier, boost::json::value const& params,
                                            tool_id const& tool, std::chrono::sys_seconds now);

}  // namespace airlock::core
