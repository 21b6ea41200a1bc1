#include "core/provenance.hpp"

#include "core/base64url.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <array>
#include <cstdio>
#include <utility>

namespace airlock::core {

namespace {

constexpr std::string_view domain_separator = "airlock/provenance/v1";
constexpr std::string_view ed25519_alg = "Ed25519";
constexpr std::size_t ed25519_key_size = 32;
constexpr std::size_t ed25519_sig_size = 64;

EVP_PKEY* as_pkey(void* p) noexcept { return static_cast<EVP_PKEY*>(p); }

// OpenSSL queues errors per thread; a failure we have already turned into a result must not linger
// and be misreported by the next, unrelated OpenSSL caller on this thread.
void drop_openssl_errors() noexcept { ERR_clear_error(); }

struct bio_deleter {
    void operator()(BIO* b) const noexcept { BIO_free(b); }
};
struct md_ctx_deleter {
    void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};
using bio_ptr = std::unique_ptr<BIO, bio_deleter>;
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, md_ctx_deleter>;

bio_ptr memory_bio(std::string_view text) {
    return bio_ptr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Without a callback OpenSSL would prompt on the terminal for an encrypted key's passphrase; a
// service must fail instead of blocking on a tty nobody watches.
int refuse_passphrase(char*, int, int, void*) { return -1; }

bool is_ed25519(EVP_PKEY const* k) noexcept { return EVP_PKEY_get_id(k) == EVP_PKEY_ED25519; }

// ---- RFC 3339 UTC times, whole seconds ----

// Four-digit years only: RFC 3339 has no other spelling, and a time outside them is a bug upstream.
bool representable(std::chrono::sys_seconds t) noexcept {
    using namespace std::chrono;
    constexpr sys_seconds lowest{sys_days{year{0} / January / 1}};
    constexpr sys_seconds beyond{sys_days{year{10000} / January / 1}};
    return t >= lowest && t < beyond;
}

std::optional<std::string> format_time(std::chrono::sys_seconds t) {
    using namespace std::chrono;
    if (!representable(t)) return std::nullopt;
    auto const day = floor<days>(t);
    year_month_day const ymd{day};
    hh_mm_ss const hms{t - day};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                  static_cast<int>(hms.seconds().count()));
    return std::string(buf);
}

// Only the exact form the signer writes is read back. Any other spelling of the same instant
// (offsets, fractions, lower-case 'z') would re-serialise differently and fail the signature
// anyway; refusing it here says why instead of reporting bad_signature.
std::optional<std::chrono::sys_seconds> parse_time(std::string_view s) {
    using namespace std::chrono;
    constexpr std::string_view shape = "dddd-dd-ddTdd:dd:ddZ";
    if (s.size() != shape.size()) return std::nullopt;
    for (std::size_t i = 0; i < s.size(); ++i) {
        bool const ok = shape[i] == 'd' ? (s[i] >= '0' && s[i] <= '9') : s[i] == shape[i];
        if (!ok) return std::nullopt;
    }
    auto num = [&](std::size_t pos, std::size_t len) {
        int n = 0;
        for (std::size_t i = pos; i < pos + len; ++i) n = n * 10 + (s[i] - '0');
        return n;
    };
    year_month_day const ymd{year{num(0, 4)}, month{static_cast<unsigned>(num(5, 2))},
                             day{static_cast<unsigned>(num(8, 2))}};
    int const hh = num(11, 2), mm = num(14, 2), ss = num(17, 2);
    // A leap second (ss == 60) has no sys_seconds value; refusing beats silently shifting it.
    if (!ymd.ok() || hh > 23 || mm > 59 || ss > 59) return std::nullopt;
    return sys_seconds{sys_days{ymd}} + hours{hh} + minutes{mm} + seconds{ss};
}

// ---- the JSON shape ----

// Every field but the signature. Including kid and alg means a signature cannot be relabelled with
// another key id (even one bound to the same key material, as during a re-labelling) or algorithm.
result<boost::json::object> signed_fields(provenance const& p) {
    auto issued = format_time(p.issued_at);
    if (!issued) return make_error("bad_time", "provenance issued_at is outside years 0000-9999");
    auto expires = format_time(p.expires_at);
    if (!expires) return make_error("bad_time", "provenance expires_at is outside years 0000-9999");
    boost::json::object o;
    o["run_id"] = p.run_id;
    o["effect_key"] = p.effect_key;
    o["agent"] = boost::json::object{{"name", p.agent_name}, {"digest", p.agent_digest}};
    o["tool"] = p.tool;
    o["args_sha256"] = p.args_sha256;
    o["issued_at"] = *issued;
    o["expires_at"] = *expires;
    o["nonce"] = p.nonce;
    if (p.attestation) o["attestation"] = boost::json::object{{"kid", p.attestation->kid}, {"alg", p.attestation->alg}};
    return o;
}

result<std::string> signing_payload(provenance const& p) {
    auto fields = signed_fields(p);
    if (!fields) return fields.error();
    auto text = canonical(*fields);
    if (!text) return text.error();
    std::string out;
    out.reserve(domain_separator.size() + 1 + text->size());
    out += domain_separator;
    out += '\0';
    out += *text;
    return out;
}

// A context set up to sign with `key`, or null when OpenSSL refuses.
EVP_MD_CTX* ed25519_sign_context(EVP_PKEY* key) {
    md_ctx_ptr ctx(EVP_MD_CTX_new());
    // Ed25519 hashes internally (PureEdDSA), so the digest argument must be NULL.
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key) != 1) {
        drop_openssl_errors();
        return nullptr;
    }
    return ctx.release();
}

// `prepared`, when set, is a context from ed25519_sign_context for `key`: copying it skips the
// algorithm lookup and key setup that starting afresh costs (a good part of a signature's time).
// The copy only reads it, so one prepared context serves every thread.
result<std::string> ed25519_sign_bytes(EVP_PKEY* key, EVP_MD_CTX const* prepared, std::string_view message) {
    md_ctx_ptr ctx;
    if (prepared) {
        ctx.reset(EVP_MD_CTX_new());
        if (ctx && EVP_MD_CTX_copy_ex(ctx.get(), prepared) != 1) {
            drop_openssl_errors();
            ctx.reset();
        }
    }
    if (!ctx) ctx.reset(ed25519_sign_context(key));
    if (!ctx) return make_error("signing_failed", "Ed25519 signing could not start");
    std::string sig(ed25519_sig_size, '\0');
    std::size_t sig_len = sig.size();
    if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &sig_len,
                       reinterpret_cast<unsigned char const*>(message.data()), message.size()) != 1 ||
        sig_len != ed25519_sig_size) {
        drop_openssl_errors();
        return make_error("signing_failed", "Ed25519 signing failed");
    }
    return sig;
}

bool ed25519_verify_bytes(EVP_PKEY* key, std::string_view message, std::string_view sig) {
    md_ctx_ptr ctx(EVP_MD_CTX_new());
    bool const good = ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key) == 1 &&
                      EVP_DigestVerify(ctx.get(), reinterpret_cast<unsigned char const*>(sig.data()), sig.size(),
                                       reinterpret_cast<unsigned char const*>(message.data()), message.size()) == 1;
    if (!good) drop_openssl_errors();
    return good;
}

result<EVP_PKEY*> key_from_seed(std::string const& kid, std::string_view seed32) {
    if (seed32.size() != ed25519_key_size)
        return make_error("bad_key", "signing key \"" + kid + "\": an Ed25519 seed is 32 bytes, got " +
                                         std::to_string(seed32.size()));
    EVP_PKEY* key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr,
                                                 reinterpret_cast<unsigned char const*>(seed32.data()), seed32.size());
    if (!key) {
        drop_openssl_errors();
        return make_error("bad_key", "signing key \"" + kid + "\": OpenSSL refused the seed");
    }
    return key;
}

// The signature covers SHA-256(payload), a fixed 32-byte message, not the payload itself (issue 3):
// a verifier written elsewhere must hash the same bytes before its Ed25519 check.
std::string payload_digest(std::string const& payload) {
    auto const d = sha256(payload);
    return std::string(reinterpret_cast<char const*>(d.data()), d.size());
}

// ---- reading the block ----

std::string field_name(std::string_view parent, std::string_view key) {
    return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
}

result<std::string> text_field(boost::json::object const& o, std::string_view parent, std::string_view key) {
    auto const* v = o.if_contains(key);
    if (!v) return make_error("missing_field", "provenance field \"" + field_name(parent, key) + "\" is missing");
    if (!v->is_string())
        return make_error("wrong_type", "provenance field \"" + field_name(parent, key) + "\" must be a string");
    return std::string(v->get_string());
}

result<boost::json::object const*> object_field(boost::json::object const& o, std::string_view key) {
    auto const* v = o.if_contains(key);
    if (!v) return make_error("missing_field", "provenance field \"" + std::string(key) + "\" is missing");
    if (!v->is_object())
        return make_error("wrong_type", "provenance field \"" + std::string(key) + "\" must be an object");
    return &v->get_object();
}

result<std::chrono::sys_seconds> time_field(boost::json::object const& o, std::string_view key) {
    auto text = text_field(o, "", key);
    if (!text) return text.error();
    auto t = parse_time(*text);
    if (!t)
        return make_error("bad_time", "provenance field \"" + std::string(key) +
                                          "\" must be an RFC 3339 UTC time like 2026-11-30T08:00:00Z");
    return *t;
}

}  // namespace

std::string_view to_string(provenance_verdict v) noexcept {
    switch (v) {
        case provenance_verdict::ok: return "ok";
        case provenance_verdict::unsigned_: return "unsigned";
        case provenance_verdict::unknown_key: return "unknown_key";
        case provenance_verdict::bad_signature: return "bad_signature";
        case provenance_verdict::expired: return "expired";
        case provenance_verdict::not_yet_valid: return "not_yet_valid";
        case provenance_verdict::tool_mismatch: return "tool_mismatch";
        case provenance_verdict::arguments_mismatch: return "arguments_mismatch";
    }
    return "unknown";
}

std::string provenance_signing_payload(provenance const& p) { return signing_payload(p).value(); }

// ---- signer ----

result<provenance_signer> provenance_signer::from_pem(std::string kid, std::string_view pem) {
    if (kid.empty()) return make_error("bad_key", "signing key id is empty");
    auto bio = memory_bio(pem);
    EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, refuse_passphrase, nullptr) : nullptr;
    if (!key) {
        drop_openssl_errors();
        return make_error("bad_key", "signing key \"" + kid +
                                         "\": not an unencrypted PEM private key"
                                         " (expected -----BEGIN PRIVATE KEY-----)");
    }
    if (!is_ed25519(key)) {
        EVP_PKEY_free(key);
        return make_error("bad_key", "signing key \"" + kid + "\": not an Ed25519 key");
    }
    return provenance_signer(std::move(kid), key);
}

result<provenance_signer> provenance_signer::from_raw_seed(std::string kid, std::string_view seed32) {
    if (kid.empty()) return make_error("bad_key", "signing key id is empty");
    auto key = key_from_seed(kid, seed32);
    if (!key) return key.error();
    return provenance_signer(std::move(kid), *key);
}

provenance_signer::provenance_signer(std::string kid, void* pkey)
    : kid_(std::move(kid)), pkey_(pkey), prepared_(ed25519_sign_context(as_pkey(pkey))) {}

provenance_signer::provenance_signer(provenance_signer&& other) noexcept
    : kid_(std::move(other.kid_)),
      pkey_(std::exchange(other.pkey_, nullptr)),
      prepared_(std::exchange(other.prepared_, nullptr)) {}

provenance_signer& provenance_signer::operator=(provenance_signer&& other) noexcept {
    if (this != &other) {
        EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(prepared_));
        EVP_PKEY_free(as_pkey(pkey_));
        kid_ = std::move(other.kid_);
        pkey_ = std::exchange(other.pkey_, nullptr);
        prepared_ = std::exchange(other.prepared_, nullptr);
    }
    return *this;
}

provenance_signer::~provenance_signer() {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(prepared_));
    EVP_PKEY_free(as_pkey(pkey_));
}

result<void> provenance_signer::sign(provenance& p) const {
    provenance draft = p;
    draft.attestation = core::attestation{kid_, std::string(ed25519_alg), {}};
    auto payload = signing_payload(draft);
    if (!payload) return payload.error();
    auto sig = ed25519_sign_bytes(as_pkey(pkey_), static_cast<EVP_MD_CTX const*>(prepared_), payload_digest(*payload));
    if (!sig) return sig.error();
    draft.attestation->sig = base64url_encode(*sig);
    // Only now touch the caller's block: a failed signing leaves it exactly as it was.
    p.attestation = std::move(draft.attestation);
    return {};
}

std::string provenance_signer::public_key_raw() const {
    std::string out(ed25519_key_size, '\0');
    std::size_t len = out.size();
    if (EVP_PKEY_get_raw_public_key(as_pkey(pkey_), reinterpret_cast<unsigned char*>(out.data()), &len) != 1) {
        drop_openssl_errors();
        throw std::runtime_error("Ed25519 public key could not be extracted");
    }
    out.resize(len);
    return out;
}

std::string provenance_signer::public_key_pem() const {
    bio_ptr bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_PUBKEY(bio.get(), as_pkey(pkey_)) != 1) {
        drop_openssl_errors();
        throw std::runtime_error("Ed25519 public key could not be written as PEM");
    }
    char* data = nullptr;
    long const len = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(len));
}

// ---- verifier ----

provenance_verifier::provenance_verifier() = default;

provenance_verifier::provenance_verifier(provenance_verifier&& other) noexcept
    : keys_(std::exchange(other.keys_, {})) {}

provenance_verifier& provenance_verifier::operator=(provenance_verifier&& other) noexcept {
    if (this != &other) {
        for (auto& [kid, key] : keys_) EVP_PKEY_free(as_pkey(key));
        keys_ = std::exchange(other.keys_, {});
    }
    return *this;
}

provenance_verifier::~provenance_verifier() {
    for (auto& [kid, key] : keys_) EVP_PKEY_free(as_pkey(key));
}

namespace {

// A key id names exactly one key: trusting it twice is a configuration mistake, and silently
// keeping either key would make one signer's blocks fail for no visible reason.
result<void> check_new_kid(std::map<std::string, void*> const& keys, std::string const& kid) {
    if (kid.empty()) return make_error("bad_key", "trusted key id is empty");
    if (keys.contains(kid)) return make_error("duplicate_key", "key id \"" + kid + "\" is already trusted");
    return {};
}

}  // namespace

result<void> provenance_verifier::trust_pem(std::string kid, std::string_view public_pem) {
    if (auto r = check_new_kid(keys_, kid); !r) return r;
    auto bio = memory_bio(public_pem);
    EVP_PKEY* key = bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, refuse_passphrase, nullptr) : nullptr;
    if (!key) {
        drop_openssl_errors();
        return make_error("bad_key",
                          "trusted key \"" + kid + "\": not a PEM public key (expected -----BEGIN PUBLIC KEY-----)");
    }
    if (!is_ed25519(key)) {
        EVP_PKEY_free(key);
        return make_error("bad_key", "trusted key \"" + kid + "\": not an Ed25519 key");
    }
    keys_.emplace(std::move(kid), key);
    return {};
}

result<void> provenance_verifier::trust_raw(std::string kid, std::string_view public_key32) {
    if (auto r = check_new_kid(keys_, kid); !r) return r;
    if (public_key32.size() != ed25519_key_size)
        return make_error("bad_key", "trusted key \"" + kid + "\": an Ed25519 public key is 32 bytes, got " +
                                         std::to_string(public_key32.size()));
    EVP_PKEY* key = EVP_PKEY_new_raw_public_key(
        EVP_PKEY_ED25519, nullptr, reinterpret_cast<unsigned char const*>(public_key32.data()), public_key32.size());
    if (!key) {
        drop_openssl_errors();
        return make_error("bad_key", "trusted key \"" + kid + "\": OpenSSL refused the public key");
    }
    keys_.emplace(std::move(kid), key);
    return {};
}

// The order is part of the contract: who signed is settled before anything the signature covers is
// believed, and the binding to this call (tool, arguments) before time, so a replay to another tool
// reads as a mismatch even when it is also stale.
provenance_verdict provenance_verifier::verify(provenance const& p, tool_id const& tool,
                                               boost::json::value const& arguments,
                                               std::chrono::sys_seconds now) const {
    if (!p.attestation) return provenance_verdict::unsigned_;
    auto const& att = *p.attestation;
    auto const key = keys_.find(att.kid);
    if (att.alg != ed25519_alg || key == keys_.end()) return provenance_verdict::unknown_key;

    auto const sig = base64url_decode(att.sig);
    if (!sig || sig->size() != ed25519_sig_size) return provenance_verdict::bad_signature;
    auto const payload = signing_payload(p);
    if (!payload) return provenance_verdict::bad_signature;
    if (!ed25519_verify_bytes(as_pkey(key->second), payload_digest(*payload), *sig))
        return provenance_verdict::bad_signature;

    if (p.tool != tool.uri()) return provenance_verdict::tool_mismatch;
    auto const args = canonical(arguments);
    if (!args || sha256_hex(*args) != p.args_sha256) return provenance_verdict::arguments_mismatch;

    if (now < p.issued_at) return provenance_verdict::not_yet_valid;
    if (now >= p.expires_at) return provenance_verdict::expired;
    return provenance_verdict::ok;
}

// ---- building and (de)serialising ----

result<provenance> make_provenance(std::string run_id, std::string effect_key, std::string agent_name,
                                   std::string agent_digest, tool_id const& tool,
                                   boost::json::value const& arguments, std::chrono::sys_seconds issued_at,
                                   std::chrono::seconds lifetime, std::string nonce) {
    if (lifetime <= std::chrono::seconds{0})
        return make_error("bad_lifetime", "provenance lifetime must be positive, got " +
                                              std::to_string(lifetime.count()) + "s");
    auto const expires_at = issued_at + lifetime;
    if (!representable(issued_at) || !representable(expires_at))
        return make_error("bad_time", "provenance issued_at/expires_at is outside years 0000-9999");
    auto args = canonical(arguments);
    if (!args) return make_error(args.error().code, "provenance arguments: " + args.error().message);
    provenance p;
    p.run_id = std::move(run_id);
    p.effect_key = std::move(effect_key);
    p.agent_name = std::move(agent_name);
    p.agent_digest = std::move(agent_digest);
    p.tool = tool.uri();
    p.args_sha256 = sha256_hex(*args);
    p.issued_at = issued_at;
    p.expires_at = expires_at;
    p.nonce = std::move(nonce);
    return p;
}

boost::json::object to_json(provenance const& p) {
    boost::json::object o;
    o["run_id"] = p.run_id;
    o["effect_key"] = p.effect_key;
    o["agent"] = boost::json::object{{"name", p.agent_name}, {"digest", p.agent_digest}};
    o["tool"] = p.tool;
    o["args_sha256"] = p.args_sha256;
    // An unrepresentable time is written as null rather than a made-up string, so reading it back
    // fails loudly (make_provenance and sign never produce one).
    if (auto t = format_time(p.issued_at)) o["issued_at"] = *t; else o["issued_at"] = nullptr;
    if (auto t = format_time(p.expires_at)) o["expires_at"] = *t; else o["expires_at"] = nullptr;
    o["nonce"] = p.nonce;
    if (p.attestation)
        o["attestation"] = boost::json::object{
            {"kid", p.attestation->kid}, {"alg", p.attestation->alg}, {"sig", p.attestation->sig}};
    return o;
}

// Unknown keys are tolerated so a later version can add fields; a verifier that ignores them still
// checks the signature, which then fails if those fields were meant to be covered.
result<provenance> provenance_from_json(boost::json::value const& v) {
    if (!v.is_object()) return make_error("wrong_type", "provenance block must be a JSON object");
    auto const& o = v.get_object();
    provenance p;
    auto take = [&](std::string& out, std::string_view parent, boost::json::object const& from,
                    std::string_view key) -> std::optional<error> {
        auto s = text_field(from, parent, key);
        if (!s) return s.error();
        out = std::move(*s);
        return std::nullopt;
    };
    if (auto e = take(p.run_id, "", o, "run_id")) return *e;
    if (auto e = take(p.effect_key, "", o, "effect_key")) return *e;
    auto agent = object_field(o, "agent");
    if (!agent) return agent.error();
    if (auto e = take(p.agent_name, "agent", **agent, "name")) return *e;
    if (auto e = take(p.agent_digest, "agent", **agent, "digest")) return *e;
    if (auto e = take(p.tool, "", o, "tool")) return *e;
    if (auto e = take(p.args_sha256, "", o, "args_sha256")) return *e;
    auto issued = time_field(o, "issued_at");
    if (!issued) return issued.error();
    p.issued_at = *issued;
    auto expires = time_field(o, "expires_at");
    if (!expires) return expires.error();
    p.expires_at = *expires;
    if (auto e = take(p.nonce, "", o, "nonce")) return *e;
    // Absent means unsigned, which verify reports; present but broken is a malformed block.
    if (o.contains("attestation")) {
        auto att = object_field(o, "attestation");
        if (!att) return att.error();
        core::attestation a;
        if (auto e = take(a.kid, "attestation", **att, "kid")) return *e;
        if (auto e = take(a.alg, "attestation", **att, "alg")) return *e;
        if (auto e = take(a.sig, "attestation", **att, "sig")) return *e;
        p.attestation = std::move(a);
    }
    return p;
}

result<std::string> ed25519_sign_raw(std::string_view seed32, std::string_view message) {
    // The same key construction and primitive the signer uses for blocks, minus hashing and
    // domain separation.
    auto key = key_from_seed("raw", seed32);
    if (!key) return key.error();
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> owned(*key, &EVP_PKEY_free);
    return ed25519_sign_bytes(owned.get(), nullptr, message);
}

void attach_provenance(boost::json::object& params, provenance const& p) {
    auto& meta = params["_meta"];
    if (!meta.is_object()) meta = boost::json::object{};
    meta.get_object()[provenance_meta_key] = to_json(p);
}

result<std::optional<provenance>> provenance_from_params(boost::json::value const& params) {
    if (!params.is_object()) return make_error("wrong_type", "tools/call params must be a JSON object");
    auto const* meta = params.get_object().if_contains("_meta");
    if (!meta) return std::optional<provenance>{};
    if (!meta->is_object()) return make_error("wrong_type", "params._meta must be a JSON object");
    auto const* block = meta->get_object().if_contains(provenance_meta_key);
    if (!block) return std::optional<provenance>{};
    auto p = provenance_from_json(*block);
    if (!p) return p.error();
    return std::optional<provenance>(std::move(*p));
}

result<provenance_check> verify_call_params(provenance_verifier const& verifier, boost::json::value const& params,
                                            tool_id const& tool, std::chrono::sys_seconds now) {
    auto block = provenance_from_params(params);
    if (!block) return block.error();
    if (!*block) return provenance_check{provenance_verdict::unsigned_, std::nullopt};
    boost::json::value const no_arguments = boost::json::object{};
    auto const* args = params.get_object().if_contains("arguments");
    auto const verdict = verifier.verify(**block, tool, args ? *args : no_arguments, now);
    return provenance_check{verdict, std::move(*block)};
}

}  // namespace airlock::core
