#pragma once
// Validating a JWT access token (RFC 9068 profile, OAuth 2.1 section 5.2) as a resource server: from
// the bearer token, the configured issuers and audiences, the issuers' keys and the time, to the
// token's claims or the reason it is refused. Pure: the keys come through key_source (the caller
// fetches and caches JWKS), the clock is an argument.
//
// The checks run in a fixed order, so a refusal names the first thing wrong: parse → alg allowed →
// issuer → key → signature → exp → nbf/iat → audience. Nothing a signature has not vouched for
// (times, audience) is judged before the signature, except the issuer, which chooses the keys.

#include "service/http/jose.hpp"

#include <boost/json/object.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace airlock::service {

struct token_rules {
    std::vector<std::string> issuers;      // exact strings; a token's iss must equal one
    std::vector<std::string> audiences;    // aud (string or array) must contain one of these
    std::vector<jose::alg> algorithms{jose::alg::rs256, jose::alg::ps256, jose::alg::es256, jose::alg::eddsa};
    std::chrono::seconds skew{60};
};

// inactive and unavailable are introspection's (an opaque token): the authorization server said it
// is not active, or could not be asked.
enum class token_fault { malformed, bad_alg, bad_issuer, unknown_kid, bad_signature, expired,
                         not_yet_valid, bad_audience, inactive, unavailable };

// "malformed", "bad_alg", ...: stable, for metric labels.
std::string_view to_string(token_fault f);

struct access_claims {
    std::string issuer, subject, token_id;   // token_id: jti, else "sha256:" + first 16 hex of sha256(token)
    std::string client_id;                    // client_id or azp, when present
    std::vector<std::string> scopes;          // from `scope` (space-separated) or `scp` (array or string)
    boost::json::object claims;               // the whole payload, for claim → principal mapping
    std::chrono::system_clock::time_point expires;
};

struct token_refusal {
    token_fault fault;
    std::string detail;   // a sentence for the log; never the token or its signature
    std::string issuer;   // the token's iss, when it had one (bounded, for the log)
    std::string kid;      // the token's kid, when it had one (bounded, for the log)
};

// The verified key set of a configured issuer; null when its keys are not known (yet).
using key_source = std::function<std::shared_ptr<jose::key_set const>(std::string_view issuer)>;

inline constexpr std::size_t max_access_token_bytes = 16384;

std::variant<access_claims, token_refusal> validate_access_token(std::string_view token, token_rules const& rules,
                                                                 key_source const& keys,
                                                                 std::chrono::system_clock::time_point now);

// An opaque token's introspection answer (RFC 7662) from `issuer`, checked as a JWT's claims are:
// `active` true, `iss` (when present) the issuer, `exp` required and not past, `nbf`/`iat` not
// ahead, `aud` naming one of the audiences; no signature (the issuer itself answered).
std::variant<access_claims, token_refusal> validate_introspection(boost::json::object answer, std::string_view token,
                                                                 std::string const& issuer, token_rules const& rules,
                                                                 std::chrono::system_clock::time_point now);

}  // namespace airlock::service
