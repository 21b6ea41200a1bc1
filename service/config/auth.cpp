#include "service/config/sections.hpp"

#include "service/config/reader.hpp"

#include "core/ascii.hpp"

#include <algorithm>

namespace airlock::service::config_detail {

namespace {

// The signature algorithms a resource server may accept. "none" and the HMAC family are refused by
// name: an HMAC "verified" with a public key is how a forged token passes (algorithm confusion).
constexpr std::string_view known_algorithms[] = {"RS256", "RS384", "RS512", "PS256", "PS384",
                                                 "PS512", "ES256", "ES384", "ES512", "EdDSA"};

// An absolute http(s) URL without query or fragment; https unless its host is this machine.
// `what` names the value in messages ("the resource", "the issuer").
std::optional<mcp::http_endpoint> read_url(reader& r, YAML::Node const& n, std::string const& path, std::string_view what,
                                           std::string& out) {
    auto text = r.text(n, path);
    if (!text) return std::nullopt;
    auto e = mcp::parse_http_url(*text);
    if (!e) {
        r.fail("invalid_url", path + ": " + e.error().message);
        return std::nullopt;
    }
    if (text->find('#') != std::string::npos || text->find('?') != std::string::npos) {
        r.fail("invalid_url", path + " is " + in_quotes(*text) + "; " + std::string(what) +
                                  " is a URL without a query or a fragment");
        return std::nullopt;
    }
    if (e->scheme != "https" && !is_loopback(e->host)) {
        r.fail("invalid_url", path + " is " + in_quotes(*text) + "; " + std::string(what) +
                                  " must be https:// (plain http is accepted only for this machine: localhost, "
                                  "127.0.0.0/8, ::1)");
        return std::nullopt;
    }
    out = *text;
    return *e;
}

void read_issuer(reader& r, YAML::Node const& n, std::string const& p, oauth_config& o) {
    oauth_issuer_config ic;
    YAML::Node url = n;
    if (n.IsMap()) {
        if (!r.mapping(n, p, {"issuer", "tls"})) return;
        url = n["issuer"];
        if (!url) {
            r.fail("missing_field", p + " needs issuer (the authorization server's issuer URL)");
            return;
        }
    }
    auto const ip = n.IsMap() ? p + ".issuer" : p;
    auto e = read_url(r, url, ip, "an issuer", ic.issuer);
    if (!e) return;
    ic.destination = core::remote_destination{e->scheme, core::ascii_lowercase(e->host), e->port};
    if (n.IsMap())
        if (auto const v = n["tls"]) read_tls(r, v, p + ".tls", ic.issuer, ic.issuer, ic.verify_peer, ic.ca_file);
    for (auto const& other : o.issuers)
        if (other.issuer == ic.issuer) {
            r.fail("duplicate_issuer", ip + " names " + in_quotes(ic.issuer) + " a second time");
            return;
        }
    o.issuers.push_back(std::move(ic));
}

// A string or a list of strings; each must be non-blank and hold no space (scopes, audiences).
std::optional<std::vector<std::string>> read_words(reader& r, YAML::Node const& n, std::string const& path,
                                                   std::string_view what) {
    std::vector<std::pair<std::string, std::string>> items;
    if (n.IsScalar()) {
        auto s = r.text(n, path);
        if (!s) return std::nullopt;
        items.emplace_back(path, *s);
    } else if (auto list = r.strings(n, path)) {
        items = std::move(*list);
    } else {
        return std::nullopt;
    }
    std::vector<std::string> out;
    for (auto const& [ip, v] : items) {
        if (std::any_of(v.begin(), v.end(), [](char c) { return c == ' ' || c == '\t' || c == '"' || c == '\\'; })) {
            r.fail("invalid_value", ip + " is " + in_quotes(v) + "; " + std::string(what) +
                                        " holds no spaces, quotes or backslashes");
            return std::nullopt;
        }
        if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
    return out;
}

void read_algorithms(reader& r, YAML::Node const& n, std::string const& p, oauth_config& o) {
    auto list = r.strings(n, p);
    if (!list) return;
    std::vector<std::string> out;
    for (auto const& [ip, a] : *list) {
        if (core::iequals(a, "none") || core::ascii_lowercase(a).starts_with("hs")) {
            r.fail("invalid_value", ip + " is " + in_quotes(a) +
                                        "; unsigned and HMAC-signed tokens are never accepted (a resource server "
                                        "holds no shared secret; use RS256, PS256, ES256 or EdDSA)");
            continue;
        }
        if (std::find(std::begin(known_algorithms), std::end(known_algorithms), a) == std::end(known_algorithms)) {
            std::string known;
            for (auto k : known_algorithms) known += (known.empty() ? "" : ", ") + std::string(k);
            r.fail("invalid_value", ip + " is " + in_quotes(a) + "; expected one of: " + known);
            continue;
        }
        if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
    }
    if (list->empty()) r.fail("invalid_value", p + " is empty; name at least one algorithm");
    o.algorithms = std::move(out);
}

void read_introspection(reader& r, YAML::Node const& n, std::string const& p, oauth_config& o) {
    if (!r.mapping(n, p, {"issuer", "endpoint", "client_id", "client_secret"})) return;
    oauth_config::introspection_config ic;
    if (auto const v = n["issuer"]) {
        if (auto s = r.text(v, p + ".issuer")) ic.issuer = *s;
    } else if (o.issuers.size() == 1) {
        ic.issuer = o.issuers[0].issuer;
    } else if (!o.issuers.empty()) {
        r.fail("missing_field", p + " needs issuer: which of the issuers answers for opaque tokens");
    }
    if (!ic.issuer.empty() && std::none_of(o.issuers.begin(), o.issuers.end(), [&](auto const& i) { return i.issuer == ic.issuer; }))
        r.fail("invalid_value", p + ".issuer is " + in_quotes(ic.issuer) + ", which auth.oauth's issuers do not list");
    if (auto const v = n["endpoint"]) read_url(r, v, p + ".endpoint", "the introspection endpoint", ic.endpoint);
    if (auto const v = n["client_id"]) {
        if (auto s = r.text(v, p + ".client_id")) ic.client_id = *s;
    } else {
        r.fail("missing_field", p + " needs client_id: airlock's own client at the authorization server");
    }
    if (auto const v = n["client_secret"]; !v) {
        r.fail("missing_field", p + " needs client_secret: {file: PATH} or {env: NAME}");
    } else if (!v.IsMap()) {
        r.fail("wrong_type", p + ".client_secret must be {file: PATH} or {env: NAME}; a secret is never written in the "
                                 "configuration");
    } else if (auto s = read_secret_value(r, v, p + ".client_secret")) {
        ic.client_secret = *s;
    }
    o.introspection = std::move(ic);
}

// upstream name → scope. Each scope is advertised: scopes_supported gains those it does not list.
void read_upstream_scopes(reader& r, YAML::Node const& n, std::string const& p, oauth_config& o) {
    auto entries = r.entries(n, p);
    if (!entries) return;
    // Unset, scopes_supported defaults to required_scopes; listing an upstream's keeps those.
    if (o.scopes_supported.empty()) o.scopes_supported = o.required_scopes;
    for (auto const& [server, scope] : *entries) {
        auto ep = child_path(p, server);
        auto words = read_words(r, scope, ep, "a scope");
        if (!words) continue;
        if (words->size() != 1) {
            r.fail("invalid_value", ep + " names " + std::to_string(words->size()) + " scopes; an upstream needs exactly one");
            continue;
        }
        auto const& s = words->front();
        o.upstream_scopes.emplace(server, s);
        if (std::find(o.scopes_supported.begin(), o.scopes_supported.end(), s) == o.scopes_supported.end())
            o.scopes_supported.push_back(s);
    }
}

void read_oauth(reader& r, YAML::Node const& n, std::string const& p, oauth_config& o) {
    if (!r.mapping(n, p,
                   {"resource", "issuer", "issuers", "audience", "scopes_supported", "required_scopes", "algorithms",
                    "clock_skew", "principal_claim", "principals", "upstream_scopes", "jwks_refresh", "jwks_max_age",
                    "introspection"}))
        return;
    if (auto const v = n["resource"]) {
        read_url(r, v, p + ".resource", "the resource", o.resource);
    } else {
        r.fail("missing_field", p + " needs resource: the URL clients reach /mcp at (e.g. "
                                    "\"https://airlock.example.com/mcp\"); tokens must be issued for it");
    }
    auto const one = n["issuer"];
    auto const many = n["issuers"];
    if (one && many) {
        r.fail("conflicting_fields", p + " sets both issuer and issuers; list them all under issuers");
    } else if (one) {
        read_issuer(r, one, p + ".issuer", o);
    } else if (many) {
        if (r.sequence(many, p + ".issuers"))
            for (std::size_t i = 0; i < many.size(); ++i) read_issuer(r, many[i], index_path(p + ".issuers", i), o);
        if (many.IsSequence() && many.size() == 0) r.fail("invalid_value", p + ".issuers is empty; name the issuer");
    } else {
        r.fail("missing_field", p + " needs issuer: the authorization server whose tokens airlock accepts");
    }
    if (auto const v = n["audience"]) {
        if (auto a = read_words(r, v, p + ".audience", "an audience")) o.audiences = std::move(*a);
    }
    if (o.audiences.empty() && !o.resource.empty()) o.audiences.push_back(o.resource);
    if (auto const v = n["scopes_supported"]) {
        if (auto s = read_words(r, v, p + ".scopes_supported", "a scope")) o.scopes_supported = std::move(*s);
    }
    if (auto const v = n["required_scopes"]) {
        if (auto s = read_words(r, v, p + ".required_scopes", "a scope")) o.required_scopes = std::move(*s);
    }
    for (auto const& s : o.required_scopes)
        if (!o.scopes_supported.empty() &&
            std::find(o.scopes_supported.begin(), o.scopes_supported.end(), s) == o.scopes_supported.end())
            r.warn(p + ".required_scopes names " + in_quotes(s) + ", which scopes_supported does not list: clients "
                       "that ask for the supported scopes will be refused");
    if (auto const v = n["algorithms"]) read_algorithms(r, v, p + ".algorithms", o);
    if (auto const v = n["clock_skew"]) {
        if (auto d = r.duration(v, p + ".clock_skew", std::chrono::milliseconds(0))) {
            if (*d > std::chrono::minutes(5))
                r.fail("invalid_value", p + ".clock_skew is " + format_duration(*d) + "; at most 5m (a token would "
                                            "outlive its expiry by that much)");
            else
                o.clock_skew = std::chrono::duration_cast<std::chrono::seconds>(*d);
        }
    }
    if (auto const v = n["jwks_refresh"]) {
        if (auto d = r.duration(v, p + ".jwks_refresh", std::chrono::milliseconds(1'000))) o.jwks_refresh = *d;
    }
    if (auto const v = n["jwks_max_age"]) {
        if (auto d = r.duration(v, p + ".jwks_max_age", std::chrono::milliseconds(1'000))) o.jwks_max_age = *d;
    }
    if (o.jwks_max_age < o.jwks_refresh)
        r.fail("invalid_value", p + ".jwks_max_age (" + format_duration(o.jwks_max_age) + ") is shorter than jwks_refresh (" +
                                    format_duration(o.jwks_refresh) + "); keys must outlive the wait for their refresh");
    if (auto const v = n["introspection"]) read_introspection(r, v, p + ".introspection", o);
    if (auto const v = n["principal_claim"]) {
        if (auto c = r.text(v, p + ".principal_claim")) o.principal_claim = *c;
    }
    if (auto const v = n["principals"]) {
        if (auto entries = r.entries(v, p + ".principals")) {
            for (auto const& [value, name] : *entries) {
                auto ep = child_path(p + ".principals", value);
                if (auto s = r.text(name, ep)) o.principals.emplace(value, *s);
            }
        }
    } else {
        r.fail("missing_field", p + " needs principals: which value of the " + in_quotes(o.principal_claim) +
                                    " claim is served as which principal (a subject with no mapping is refused)");
    }
    if (auto const v = n["upstream_scopes"]) read_upstream_scopes(r, v, p + ".upstream_scopes", o);
}

}  // namespace

void read_auth(reader& r, YAML::Node const& n, auth_config& a) {
    if (!r.mapping(n, "auth", {"oauth"})) return;
    if (auto const v = n["oauth"]; v && !v.IsNull()) {
        oauth_config o;
        read_oauth(r, v, "auth.oauth", o);
        a.oauth = std::move(o);
    }
}

}  // namespace airlock::service::config_detail
