#include "service/http/oauth_guard.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace airlock::service {

namespace {

namespace json = boost::json;

// What a client is told about a token that did not validate: a fixed phrase per class, never a
// value from the token (RFC 6750 §3 error_description).
std::string_view description(token_fault f) {
    switch (f) {
        case token_fault::malformed: return "the access token is not a signed JWT airlock can read";
        case token_fault::bad_alg: return "the access token is signed with an algorithm airlock does not accept";
        case token_fault::bad_issuer: return "the access token was not issued by an authorization server of this resource";
        case token_fault::unknown_kid: return "the access token is signed with a key its issuer does not publish";
        case token_fault::bad_signature: return "the access token's signature does not verify";
        case token_fault::expired: return "the access token has expired";
        case token_fault::not_yet_valid: return "the access token is not valid yet";
        case token_fault::bad_audience: return "the access token was issued for another resource";
        case token_fault::inactive: return "the authorization server says the access token is not active";
        case token_fault::unavailable: return "the authorization server could not be asked about the access token";
    }
    return "the access token is not valid";
}

std::string joined(std::vector<std::string> const& words) {
    std::string out;
    for (auto const& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
}

// A claim's value as the strings a mapping can match: a string, a number or a boolean as written,
// each string of an array (group and role claims).
std::vector<std::string> claim_values(json::value const& v) {
    std::vector<std::string> out;
    auto one = [&](json::value const& x) {
        if (x.is_string()) out.emplace_back(x.get_string());
        else if (x.is_int64()) out.push_back(std::to_string(x.get_int64()));
        else if (x.is_uint64()) out.push_back(std::to_string(x.get_uint64()));
        else if (x.is_bool()) out.push_back(x.get_bool() ? "true" : "false");
    };
    if (auto const* a = v.if_array()) {
        for (auto const& x : *a) one(x);
    } else {
        one(v);
    }
    return out;
}

}  // namespace

oauth_guard::oauth_guard(oauth_guard_options options, key_source keys, clock_fn clock, result_fn on_result,
                         unknown_kid_fn on_unknown_kid)
    : options_(std::move(options)), keys_(std::move(keys)), clock_(std::move(clock)), on_result_(std::move(on_result)),
      on_unknown_kid_(std::move(on_unknown_kid)) {
    if (!clock_) clock_ = [] { return std::chrono::system_clock::now(); };
}

std::string oauth_guard::challenge() const {
    std::string c = "resource_metadata=\"" + options_.resource_metadata_url + "\"";
    if (!options_.required_scopes.empty()) c += ", scope=\"" + joined(options_.required_scopes) + "\"";
    return c;
}

token_verifier oauth_guard::verifier(std::shared_ptr<oauth_guard const> guard) {
    return [guard = std::move(guard)](std::string_view token, std::string_view client) {
        return guard->check(token, client);
    };
}

door_refusal oauth_guard::refuse(token_refusal const& r, std::string_view client) const {
    if (on_result_) on_result_(to_string(r.fault));
    door_refusal out;
    out.kind = door_refusal_kind::invalid_token;
    out.status = 401;
    out.code = core::errc::unauthorized;
    out.detail = std::string(description(r.fault));
    out.www_authenticate = R"(Bearer realm="airlock", error="invalid_token", error_description=")" + out.detail +
                           "\", " + challenge();
    out.log = true;
    out.log_key = "oauth " + std::string(to_string(r.fault)) + " " + std::string(client);
    out.log_message = "refused a request from " + std::string(client) + " with an OAuth token: " + r.detail;
    return out;
}

std::optional<std::string> oauth_guard::principal_of(access_claims const& claims) const {
    auto const* v = claims.claims.if_contains(options_.principal_claim);
    if (!v) return std::nullopt;
    std::set<std::string> found;
    for (auto const& value : claim_values(*v))
        if (auto it = options_.principals.find(value); it != options_.principals.end()) found.insert(it->second);
    // Two values naming two principals (a user in two mapped groups): neither is chosen, since
    // choosing would hand one of them grants the configuration never gave this subject alone.
    if (found.size() != 1) return std::nullopt;
    return *found.begin();
}

std::variant<door_admitted, door_refusal> oauth_guard::check(std::string_view token, std::string_view client) const {
    auto verdict = validate_access_token(token, options_.rules, keys_, clock_());
    if (auto const* refused = std::get_if<token_refusal>(&verdict)) {
        if (refused->fault == token_fault::unknown_kid && on_unknown_kid_ && !refused->issuer.empty())
            on_unknown_kid_(refused->issuer);
        return refuse(*refused, client);
    }
    return admit(std::get<access_claims>(verdict), client);
}

std::variant<door_admitted, door_refusal> oauth_guard::admit(access_claims const& claims, std::string_view client) const {
    std::vector<std::string> missing;
    for (auto const& s : options_.required_scopes)
        if (std::find(claims.scopes.begin(), claims.scopes.end(), s) == claims.scopes.end()) missing.push_back(s);
    if (!missing.empty()) {
        if (on_result_) on_result_("insufficient_scope");
        door_refusal out;
        out.kind = door_refusal_kind::insufficient_scope;
        out.status = 403;
        out.code = core::errc::forbidden;
        out.detail = "the access token lacks the scope " + joined(missing);
        // The scopes the request needs, all of them: a client asks for these when it re-authorizes.
        out.www_authenticate = R"(Bearer realm="airlock", error="insufficient_scope", scope=")" +
                               joined(options_.required_scopes) + "\", resource_metadata=\"" +
                               options_.resource_metadata_url + "\"";
        out.log = true;
        out.log_key = "scope " + std::string(client);
        out.log_message = "refused a request from " + std::string(client) + ": the token of '" + claims.subject +
                          "' (issuer " + claims.issuer + ") lacks the scope " + joined(missing);
        return out;
    }
    auto principal = principal_of(claims);
    if (!principal) {
        if (on_result_) on_result_("unmapped_subject");
        door_refusal out;
        out.kind = door_refusal_kind::unmapped_subject;
        out.status = 403;
        out.code = core::errc::forbidden;
        out.detail = "the token's subject is not served by this airlock";
        out.log = true;
        out.log_key = "unmapped " + std::string(client);
        out.log_message = "refused a request from " + std::string(client) + ": no principal is mapped to " +
                          options_.principal_claim + " of '" + claims.subject + "' (issuer " + claims.issuer +
                          "); map it under auth.oauth.principals";
        return out;
    }
    if (on_result_) on_result_("ok");
    door_admitted in;
    in.principal = std::move(*principal);
    in.identity = token_identity{claims.issuer, claims.subject, claims.token_id, claims.scopes};
    return in;
}

}  // namespace airlock::service
