#include "service/config/sections.hpp"

#include "service/config/reader.hpp"
#include "service/config/keys.hpp"
#include "service/config/secrets.hpp"

namespace airlock::service::config_detail {

std::optional<signing_config> read_signing(reader& r, YAML::Node const& n) {
    std::string const p = "signing";
    if (!r.mapping(n, p, {"key_file", "kid", "lifetime", "create_if_missing"})) return std::nullopt;
    auto before = r.problems.size();
    signing_config s;
    if (auto const v = n["kid"]) {
        if (auto k = r.string(v, p + ".kid")) {
            if (auto problem = key_id_problem(*k); !problem.empty()) r.fail("invalid_value", p + ".kid: " + problem);
            else s.kid = *k;
        }
    }
    if (auto const v = n["lifetime"]) {
        if (auto d = r.duration(v, p + ".lifetime", milliseconds(1000))) {
            if (d->count() % 1000 != 0)
                r.fail("invalid_value", p + ".lifetime must be whole seconds (provenance times are in seconds)");
            else
                s.lifetime = std::chrono::duration_cast<std::chrono::seconds>(*d);
        }
    }
    if (auto const v = n["create_if_missing"]) {
        if (auto b = r.boolean(v, p + ".create_if_missing")) s.create_if_missing = *b;
    }
    auto kp = p + ".key_file";
    auto const v = n["key_file"];
    if (!v) {
        r.fail("missing_field", kp + " is required (leave the signing section out to send calls unsigned)");
        return std::nullopt;
    }
    auto path = r.path(v, kp);
    if (!path) return std::nullopt;
    s.key_file = *path;
    std::error_code ec;
    if (!fs::exists(*path, ec) && s.create_if_missing) {
        if (r.problems.size() != before) return std::nullopt;
        return s;  // created at start by create_missing_secrets
    }
    auto got = r.file(v, kp, max_secret_bytes);
    if (!got) return std::nullopt;
    auto signer = core::provenance_signer::from_pem(s.kid.empty() ? "unnamed" : s.kid, got->second);
    if (!signer) {
        r.fail("invalid_key", kp + ": " + show_path(*path) + " is not a PEM (PKCS#8) Ed25519 private key (" +
                                  signer.error().message + ")");
        return std::nullopt;
    }
    if (s.kid.empty()) {
        s.kid = key_id_of(signer->public_key_raw());
        signer = core::provenance_signer::from_pem(s.kid, got->second);
    }
    if (readable_by_others(*path)) r.warn(kp + " " + show_path(*path) + " can be read by group or others");
    if (r.problems.size() != before) return std::nullopt;
    s.signer = std::make_shared<core::provenance_signer const>(std::move(*signer));
    return s;
}

}  // namespace airlock::service::config_detail
