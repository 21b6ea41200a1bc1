#pragma once
// The front door of /mcp and /v1, as one pure decision: from a request's Host, Origin, method and
// credentials, and the hosts, origins and principals the caller built from its config, to the
// principal it is served as or the refusal to send. No sockets, no config types: each endpoint
// answers in its own shape (JSON-RPC at /mcp, problem+json at /v1) and logs through its own
// throttle; what is refused, with which status and challenge, is decided here once.
//
// The order is fixed: Host (DNS rebinding protection), then Origin, then - past an allowed Origin -
// a CORS preflight, which carries no credentials, then the credentials. Today those are a bearer
// token; OAuth lands in check_credentials.

#include "core/errc.hpp"
#include "service/http/http_server.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace airlock::service {

// A presented token → the principal it was issued to; nullopt for a token nobody issued.
using token_lookup = std::function<std::optional<std::string>(std::string_view token)>;

struct door_admitted;
struct door_refusal;
// An OAuth access token (not one of the static tokens) → its principal or the refusal
// (service/http/oauth_guard); `client` is the client's address, for the log.
using token_verifier =
    std::function<std::variant<door_admitted, door_refusal>(std::string_view token, std::string_view client)>;
// An opaque OAuth access token (not a JWT) → its principal or the refusal, by asking the
// authorization server (RFC 7662); the door awaits it (async_pass_door).
using token_introspection = std::function<boost::asio::awaitable<std::variant<door_admitted, door_refusal>>(
    std::string token, std::string client)>;

struct door_policy {
    // "host:port" spellings a Host header may take, lowercased; empty: any Host (over a unix socket,
    // or on a public address nobody named, the Host cannot be judged).
    std::vector<std::string> hosts;
    // Origins a request may come from, lowercased; a request without Origin is not a browser's.
    std::vector<std::string> origins;
    token_lookup authenticate;     // null: no tokens are configured
    token_verifier oauth;          // null: auth.oauth is not configured
    token_introspection introspect;  // null: opaque tokens are refused (only JWTs are validated)
    // Said in every 401 challenge after `Bearer realm="airlock"` when OAuth is configured:
    // `resource_metadata="<absolute URL>", scope="..."` (RFC 9728 §5.1), so a client knows where to log in.
    std::string challenge;
    bool allow_anonymous = false;  // a request without credentials is served, as nobody
    bool answers_preflight = false;  // an OPTIONS request is a CORS preflight, answered before credentials
};

// The Host values and Origins accepted by default for a server listening on `host`:`port` (empty
// for a host that is not loopback).
std::vector<std::string> default_allowed_hosts(std::string_view listen_host, std::uint16_t port);
std::vector<std::string> default_allowed_origins(std::string_view listen_host, std::uint16_t port);
// 127.0.0.0/8, ::1 or "localhost".
bool is_loopback_host(std::string_view host) noexcept;

// What a browser may send and read at an endpoint that answers CORS preflights.
struct cors_rules {
    std::string_view allow;            // the Allow header of a preflight: every method, OPTIONS included
    std::string_view methods;          // Access-Control-Allow-Methods
    std::string_view default_headers;  // allowed when the browser does not list what it will send
    std::string_view expose;           // Access-Control-Expose-Headers: what a script may read
};

// The answer to an allowed preflight (door_preflight): 204 saying what a browser at `origin` may
// send. It carries no credentials and was judged only by Host and Origin.
http_response preflight_response(http_request const& req, std::string_view origin, cors_rules const& rules);
// Lets a browser script at an allowed `origin` read a reply.
void allow_origin(http::response_header<>& head, std::string_view origin, cors_rules const& rules);

// The 401 challenge for a policy: `Bearer realm="airlock"`, then `error="invalid_token"` once a
// token was presented, then the policy's OAuth parameters.
std::string bearer_challenge(door_policy const& policy, bool token_given);

// The OAuth side of a door (auth.oauth): how an access token is verified, and what each 401 adds.
struct door_oauth {
    token_verifier verify;  // null: OAuth is not configured
    token_introspection introspect;  // null: no introspection configured
    std::string challenge;  // resource_metadata="...", scope="..."
};

// Gives a policy the OAuth side of the door.
void apply_oauth(door_policy& policy, door_oauth const& oauth);

// Builds a policy, lowercasing the hosts and origins as the door compares them.
door_policy make_door_policy(std::vector<std::string> hosts, std::vector<std::string> origins,
                             token_lookup authenticate, bool allow_anonymous, bool answers_preflight);

// What the door reads of a request. nullopt: the header is absent (an empty one is present).
struct door_request {
    std::optional<std::string_view> host;
    std::optional<std::string_view> origin;
    std::optional<std::string_view> authorization;
    bool is_options = false;    // the method is OPTIONS
    bool token_in_query = false;  // the target's query has an access_token parameter
    std::string_view client;    // the client's address, for the log line
};

enum class door_refusal_kind {
    host_missing,          // no Host header where Hosts are judged
    host_not_allowed,
    origin_not_allowed,
    no_tokens_configured,  // nobody can authenticate, and anonymous access is off
    token_required,        // no Authorization header, and anonymous access is off
    not_bearer,            // an Authorization header that is not "Bearer <token>"
    unknown_token,
    token_in_query,        // an access_token query parameter (RFC 6750 §2.3 is not accepted)
    invalid_token,         // an OAuth token that did not validate (expired, wrong audience, ...)
    opaque_token,          // a token that is no JWT, for introspection: pass_door refuses it (401),
                           // async_pass_door asks the authorization server
    insufficient_scope,    // a valid OAuth token without the scopes the request needs: 403
    unmapped_subject,      // a valid OAuth token whose claim names no principal: 403
};

struct door_refusal {
    door_refusal_kind kind;
    unsigned status = 0;         // 403 for Host and Origin, 401 for credentials
    core::errc code;             // forbidden_host, forbidden_origin or unauthorized
    std::string detail;          // "this Origin is not allowed"; never shows the token
    std::string www_authenticate;  // the challenge of a 401; "" for a 403
    // A refusal a client can repeat in a loop is logged, at most once per interval per log_key;
    // the caller prefixes the message with its own name ("mcp: ").
    bool log = false;
    std::string log_key;      // the event and the client address: "token 10.0.0.7"
    std::string log_message;  // "refused a request from 10.0.0.7 with an unknown bearer token"
};

// Who an OAuth token was issued to, as the journal records it: never the token itself.
struct token_identity {
    std::string issuer;
    std::string subject;
    std::string token_id;  // jti, else a digest of the token
    std::vector<std::string> scopes;
};

struct door_admitted {
    std::string principal;  // "" when served anonymously
    bool anonymous = false;
    std::optional<token_identity> identity;  // set when an OAuth token admitted the request
};

// An allowed OPTIONS request where the policy answers preflights: no credentials were asked for.
struct door_preflight {};

// What the journal keeps of an OAuth token that admitted a request: {"method": "oauth", "issuer",
// "subject", "token_id", "scopes"} - never the token. Empty for a static token or an anonymous caller.
boost::json::object journal_identity(door_admitted const& a);

// How a refusal's status reads at the start of a message: "Unauthorized: ", "Forbidden: ", ...
std::string refusal_words(unsigned status);

// The door's view of an HTTP request: its Host, Origin and Authorization headers, its method and the
// client's address. The views point into `req`.
door_request read_door_request(http_request const& req);

using door_verdict = std::variant<door_admitted, door_preflight, door_refusal>;

// Host and Origin only: nullopt when both are allowed.
std::optional<door_refusal> check_host_origin(door_policy const& policy, door_request const& req);
// The credentials only: the principal, or the 401.
std::variant<door_admitted, door_refusal> check_credentials(door_policy const& policy, door_request const& req);
// The whole door, in order.
door_verdict pass_door(door_policy const& policy, door_request const& req);
// The same, waiting for the authorization server's answer about an opaque token.
boost::asio::awaitable<door_verdict> async_pass_door(door_policy const& policy, door_request req);

}  // namespace airlock::service
