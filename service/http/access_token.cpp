#include "service/http/access_token.hpp"

#include "core/ascii.hpp"
#include "core/sha256.hpp"

#include <boost/json/value.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

namespace airlock::service {

namespace {

using sys_clock = std::chrono::system_clock;
namespace json = boost::json;

token_refusal refuse(token_fault f, std::string detail) { return {f, std::move(detail), "", ""}; }

// Token text in a log line: bounded, control characters replaced. The token chose it, not us.
std::string loggable(std::string_view s, std::size_t limit = 200) {
    std::string out;
    for (char c : s.substr(0, limit)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    if (s.size() > limit) out += "...";
    return out;
}

std::string quoted(std::string_view s) { return "\"" + loggable(s) + "\""; }

// RFC 7519 NumericDate: a JSON number, integer or not; never a string, never infinite.
enum class numeric { absent, invalid, ok };
numeric numeric_date(boost::json::object const& o, std::string_view name, double& out) {
    auto const* v = o.if_contains(name);
    if (!v) return numeric::absent;
    if (v->is_int64()) out = static_cast<double>(v->get_int64());
    else if (v->is_uint64()) out = static_cast<double>(v->get_uint64());
    else if (v->is_double()) out = v->get_double();
    else return numeric::invalid;
    return std::isfinite(out) ? numeric::ok : numeric::invalid;
}

// An optional string claim: absent → "", present but not a string → nullopt.
std::optional<std::string> string_claim(boost::json::object const& o, std::string_view name) {
    auto const* v = o.if_contains(name);
    if (!v) return std::string();
    if (!v->is_string()) return std::nullopt;
    return std::string(v->get_string());
}

void split_spaces(std::string_view s, std::vector<std::string>& out) {
    while (!s.empty()) {
        auto space = s.find(' ');
        auto word = s.substr(0, space);
        if (!word.empty()) out.emplace_back(word);
        if (space == std::string_view::npos) break;
        s.remove_prefix(space + 1);
    }
}

bool typ_allowed(boost::json::object const& header) {
    auto const* typ = header.if_contains("typ");
    if (!typ) return true;
    if (!typ->is_string()) return false;
    std::string_view t = typ->get_string();
    return core::iequals(t, "JWT") || core::iequals(t, "at+jwt") || core::iequals(t, "application/at+jwt");
}

// The key a token's signature must be checked with: by kid when it names one, else the one key
// that fits the alg. Returns the refusal when there is none, or more than one to choose from.
std::variant<jose::jwk const*, token_refusal> choose_key(jose::key_set const& set, jose::compact_jws const& jws) {
    auto alg = jose::to_string(jws.algorithm);
    auto usable = [&](jose::jwk const& k) { return k.key && k.key->fits(jws.algorithm) && (!k.alg || *k.alg == jws.algorithm); };
    if (!jws.kid.empty()) {
        bool named = false;
        for (auto const& k : set.keys) {
            if (k.kid != jws.kid) continue;
            named = true;
            if (usable(k)) return &k;
        }
        if (named)
            return refuse(token_fault::bad_alg, "the key " + quoted(jws.kid) + " may not verify " + std::string(alg));
        return refuse(token_fault::unknown_kid, "the issuer has no key " + quoted(jws.kid));
    }
    jose::jwk const* found = nullptr;
    for (auto const& k : set.keys) {
        if (!usable(k)) continue;
        if (found)
            return refuse(token_fault::unknown_kid,
                          "the token names no kid and the issuer has more than one " + std::string(alg) + " key");
        found = &k;
    }
    if (!found) return refuse(token_fault::unknown_kid, "the token names no kid and the issuer has no " + std::string(alg) + " key");
    return found;
}

// exp (required) not past, nbf and iat not in the future, each within the skew; `exp` is set.
std::optional<token_refusal> check_times(json::object const& claims, sys_clock::time_point now,
                                         std::chrono::seconds skew_s, double& exp) {
    auto now_s = std::chrono::duration<double>(now.time_since_epoch()).count();
    auto skew = static_cast<double>(skew_s.count());
    switch (numeric_date(claims, "exp", exp)) {
    case numeric::absent: return refuse(token_fault::malformed, "the token has no exp");
    case numeric::invalid: return refuse(token_fault::malformed, "the token's exp is not a number");
    case numeric::ok: break;
    }
    if (!(exp > now_s - skew)) return refuse(token_fault::expired, "the token expired");
    for (auto name : {"nbf", "iat"}) {
        double t = 0;
        switch (numeric_date(claims, name, t)) {
        case numeric::absent: continue;
        case numeric::invalid: return refuse(token_fault::malformed, "the token's " + std::string(name) + " is not a number");
        case numeric::ok: break;
        }
        if (t > now_s + skew)
            return refuse(token_fault::not_yet_valid, "the token's " + std::string(name) + " is in the future");
    }
    return std::nullopt;
}

// aud (a string or an array) names one of the rules' audiences.
std::optional<token_refusal> check_audience(json::object const& claims, token_rules const& rules) {
    std::vector<std::string_view> aud;
    if (auto const* a = claims.if_contains("aud")) {
        if (a->is_string()) aud.push_back(a->get_string());
        else if (a->is_array())
            for (auto const& e : a->get_array())
                if (e.is_string()) aud.push_back(e.get_string());
    }
    if (aud.empty()) return refuse(token_fault::bad_audience, "the token names no audience");
    bool ours = std::any_of(aud.begin(), aud.end(), [&](std::string_view a) {
        return std::find(rules.audiences.begin(), rules.audiences.end(), a) != rules.audiences.end();
    });
    if (!ours) return refuse(token_fault::bad_audience, "the token's audience is not this server");
    return std::nullopt;

}

// sub, the token id (jti, else a digest of the token), the client and the scopes (scope or scp).
std::optional<token_refusal> read_identity(json::object const& claims, std::string_view token, access_claims& out) {
    auto sub = string_claim(claims, "sub");
    auto jti = string_claim(claims, "jti");
    auto client_id = string_claim(claims, "client_id");
    auto azp = string_claim(claims, "azp");
    if (!sub || !jti || !client_id || !azp)
        return refuse(token_fault::malformed, "the token's sub, jti, client_id or azp is not a string");
    out.subject = std::move(*sub);
    out.token_id = !jti->empty() ? std::move(*jti) : "sha256:" + core::sha256_hex(token).substr(0, 16);
    out.client_id = !client_id->empty() ? std::move(*client_id) : std::move(*azp);
    if (auto const* scope = claims.if_contains("scope")) {
        if (!scope->is_string()) return refuse(token_fault::malformed, "the token's scope is not a string");
        split_spaces(scope->get_string(), out.scopes);
    } else if (auto const* scp = claims.if_contains("scp")) {
        if (scp->is_string()) split_spaces(scp->get_string(), out.scopes);
        else if (scp->is_array()) {
            for (auto const& s : scp->get_array()) {
                if (!s.is_string()) return refuse(token_fault::malformed, "the token's scp holds a non-string");
                out.scopes.emplace_back(s.get_string());
            }
        } else return refuse(token_fault::malformed, "the token's scp is not a string or an array");
    }
    return std::nullopt;
}

// What the token says it is, for the refusal's log fields; filled as validation reads it.
struct token_names {
    std::string issuer;
    std::string kid;
};

std::variant<access_claims, token_refusal> validate(std::string_view token, token_rules const& rules,
                                                     key_source const& keys, sys_clock::time_point now,
                                                     token_names& names) {
    if (token.size() > max_access_token_bytes)
        return refuse(token_fault::malformed, "the token is " + std::to_string(token.size()) + " bytes, more than " +
                                                  std::to_string(max_access_token_bytes));
    auto parsed = jose::parse_compact(token, max_access_token_bytes);
    if (!parsed)
        return refuse(parsed.error().code == "bad_alg" ? token_fault::bad_alg : token_fault::malformed,
                      parsed.error().message);
    auto& jws = *parsed;
    names.kid = loggable(jws.kid);
    if (!typ_allowed(jws.header)) return refuse(token_fault::malformed, "the token's typ is not JWT or at+jwt");

    if (std::find(rules.algorithms.begin(), rules.algorithms.end(), jws.algorithm) == rules.algorithms.end())
        return refuse(token_fault::bad_alg, "the token's alg " + std::string(jose::to_string(jws.algorithm)) + " is not allowed");

    auto const& claims = jws.payload;
    auto iss = string_claim(claims, "iss");
    if (!iss || iss->empty()) return refuse(token_fault::bad_issuer, "the token names no issuer");
    names.issuer = loggable(*iss);
    if (std::find(rules.issuers.begin(), rules.issuers.end(), *iss) == rules.issuers.end())
        return refuse(token_fault::bad_issuer, "the token's issuer " + quoted(*iss) + " is not configured");

    auto set = keys ? keys(*iss) : nullptr;
    if (!set) return refuse(token_fault::unknown_kid, "the keys of issuer " + quoted(*iss) + " are not known yet");
    auto chosen = choose_key(*set, jws);
    if (auto* r = std::get_if<token_refusal>(&chosen)) return std::move(*r);
    auto const& key = *std::get<jose::jwk const*>(chosen);
    if (!jose::verify_signature(jws, key))
        return refuse(token_fault::bad_signature, "the token's " + std::string(jose::to_string(jws.algorithm)) +
                                                      " signature does not verify with key " + quoted(key.kid));

    // From here on the claims are the issuer's own words.
    double exp = 0;
    if (auto r = check_times(claims, now, rules.skew, exp)) return std::move(*r);
    if (auto r = check_audience(claims, rules)) return std::move(*r);
    access_claims out;
    out.issuer = *iss;
    if (auto r = read_identity(claims, token, out)) return std::move(*r);
    // system_clock counts nanoseconds: past about year 2262 a time_point overflows, so clamp.
    constexpr double latest = 9.0e9;
    out.expires = sys_clock::time_point(std::chrono::duration_cast<sys_clock::duration>(
        std::chrono::duration<double>(std::min(exp, latest))));
    out.claims = std::move(jws.payload);
    return out;
}

}  // namespace

std::variant<access_claims, token_refusal> validate_introspection(json::object answer, std::string_view token,
                                                                 std::string const& issuer, token_rules const& rules,
                                                                 sys_clock::time_point now) {
    auto const* active = answer.if_contains("active");
    if (!active || !active->is_bool() || !active->get_bool())
        return refuse(token_fault::inactive, "the issuer says the token is not active");
    if (auto iss = string_claim(answer, "iss"); !iss || (answer.contains("iss") && *iss != issuer))
        return refuse(token_fault::bad_issuer, "the introspection answer names another issuer");
    double exp = 0;
    if (auto r = check_times(answer, now, rules.skew, exp)) return std::move(*r);
    if (auto r = check_audience(answer, rules)) return std::move(*r);
    access_claims out;
    out.issuer = issuer;
    if (auto r = read_identity(answer, token, out)) return std::move(*r);
    constexpr double latest = 9.0e9;
    out.expires = sys_clock::time_point(std::chrono::duration_cast<sys_clock::duration>(
        std::chrono::duration<double>(std::min(exp, latest))));
    out.claims = std::move(answer);
    return out;
}

std::string_view to_string(token_fault f) {
    switch (f) {
    case token_fault::malformed: return "malformed";
    case token_fault::bad_alg: return "bad_alg";
    case token_fault::bad_issuer: return "bad_issuer";
    case token_fault::unknown_kid: return "unknown_kid";
    case token_fault::bad_signature: return "bad_signature";
    case token_fault::expired: return "expired";
    case token_fault::not_yet_valid: return "not_yet_valid";
    case token_fault::bad_audience: return "bad_audience";
    case token_fault::inactive: return "inactive";
    case token_fault::unavailable: return "unavailable";
    }
    return "malformed";
}

std::variant<access_claims, token_refusal> validate_access_token(std::string_view token, token_rules const& rules,
                                                                 key_source const& keys, sys_clock::time_point now) {
    token_names names;
    auto v = validate(token, rules, keys, now, names);
    if (auto* r = std::get_if<token_refusal>(&v)) {
        r->issuer = std::move(names.issuer);
        r->kid = std::move(names.kid);
    }
    return v;
}

}  // namespace airlock::service
