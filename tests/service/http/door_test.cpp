// The front door of /mcp and /v1 as one table: requests, as Host / Origin / method / Authorization,
// against the pure decision, each row with the principal it is served as or the refusal it gets.
#include "service/http/door.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <variant>

using namespace airlock;
using namespace airlock::service;

namespace {

constexpr std::string_view alice_token = "door-test-token-alice";

door_policy policy(bool anonymous = false, bool preflight = true) {
    auto lookup = [](std::string_view t) -> std::optional<std::string> {
        if (t == alice_token) return std::string("alice");
        return std::nullopt;
    };
    return make_door_policy({"127.0.0.1:8080", "LOCALHOST:8080", "[::1]:8080"},
                            {"http://127.0.0.1:8080", "https://App.Example.com"}, lookup, anonymous, preflight);
}

using opt = std::optional<std::string_view>;

struct row {
    char const* what;
    opt host;
    opt origin;
    opt authorization;
    bool options = false;
    // expected: a principal, or a refusal of this kind
    std::optional<std::string> principal;
    std::optional<door_refusal_kind> refused;
};

constexpr opt none = std::nullopt;
std::string const bearer = "Bearer " + std::string(alice_token);

std::string verdict_text(door_verdict const& v) {
    if (auto const* a = std::get_if<door_admitted>(&v)) return "admitted as '" + a->principal + "'";
    if (std::holds_alternative<door_preflight>(v)) return "preflight";
    return "refused: " + std::get<door_refusal>(v).detail;
}

}  // namespace

TEST_CASE("the door admits or refuses each request of the table as /mcp always has") {
    std::string const tab = "Bearer\t" + std::string(alice_token);
    std::string const twice = "Bearer  " + std::string(alice_token);
    std::string const lower = "bearer " + std::string(alice_token);
    std::string const trailing = "Bearer " + std::string(alice_token) + "  \t";
    std::string const padded = " \tBearer " + std::string(alice_token);
    std::string const glued = "Bearer" + std::string(alice_token);
    using k = door_refusal_kind;
    row const rows[] = {
        // Host: with its port, any case, IPv6 in brackets; absent or foreign is refused
        {"a listed Host", "127.0.0.1:8080", none, bearer, false, "alice", {}},
        {"a listed Host in another case", "LocalHost:8080", none, bearer, false, "alice", {}},
        {"a listed Host with spaces around it", " localhost:8080\t", none, bearer, false, "alice", {}},
        {"an IPv6 loopback Host in brackets", "[::1]:8080", none, bearer, false, "alice", {}},
        {"an IPv6 Host without brackets", "::1:8080", none, bearer, false, {}, k::host_not_allowed},
        {"a listed Host without its port", "127.0.0.1", none, bearer, false, {}, k::host_not_allowed},
        {"a listed Host on another port", "127.0.0.1:8081", none, bearer, false, {}, k::host_not_allowed},
        {"a foreign Host (DNS rebinding)", "evil.example.com:8080", none, bearer, false, {}, k::host_not_allowed},
        {"an empty Host", "", none, bearer, false, {}, k::host_not_allowed},
        {"no Host", none, none, bearer, false, {}, k::host_missing},
        // Origin: absent is not a browser; listed in any case is served; null or foreign is refused
        {"no Origin", "127.0.0.1:8080", none, bearer, false, "alice", {}},
        {"a listed Origin", "127.0.0.1:8080", "http://127.0.0.1:8080", bearer, false, "alice", {}},
        {"a listed Origin in another case", "127.0.0.1:8080", "HTTPS://app.example.COM", bearer, false, "alice", {}},
        {"the null Origin", "127.0.0.1:8080", "null", bearer, false, {}, k::origin_not_allowed},
        {"an empty Origin", "127.0.0.1:8080", "", bearer, false, {}, k::origin_not_allowed},
        {"a foreign Origin", "127.0.0.1:8080", "http://evil.example.com", bearer, false, {}, k::origin_not_allowed},
        {"a listed Origin on another scheme", "127.0.0.1:8080", "https://127.0.0.1:8080", bearer, false, {},
         k::origin_not_allowed},
        {"a foreign Origin on a foreign Host: the Host is named", "evil.example.com", "http://evil.example.com", bearer,
         false, {}, k::host_not_allowed},
        // the bearer token's spellings
        {"Bearer, a space, the token", "127.0.0.1:8080", none, bearer, false, "alice", {}},
        {"Bearer, a TAB, the token", "127.0.0.1:8080", none, tab, false, "alice", {}},
        {"Bearer, two spaces, the token", "127.0.0.1:8080", none, twice, false, "alice", {}},
        {"a lower-case scheme", "127.0.0.1:8080", none, lower, false, "alice", {}},
        {"trailing spaces and tabs", "127.0.0.1:8080", none, trailing, false, "alice", {}},
        {"leading spaces and tabs", "127.0.0.1:8080", none, padded, false, "alice", {}},
        {"Bearer with no token", "127.0.0.1:8080", none, "Bearer", false, {}, k::not_bearer},
        {"Bearer and only spaces", "127.0.0.1:8080", none, "Bearer   ", false, {}, k::not_bearer},
        {"the token glued to the scheme", "127.0.0.1:8080", none, glued, false, {}, k::not_bearer},
        {"another scheme", "127.0.0.1:8080", none, "Basic YWxpY2U6c2VjcmV0", false, {}, k::not_bearer},
        {"an unknown token", "127.0.0.1:8080", none, "Bearer not-the-token", false, {}, k::unknown_token},
        {"the token in another case", "127.0.0.1:8080", none, "Bearer DOOR-TEST-TOKEN-ALICE", false, {}, k::unknown_token},
        {"no Authorization", "127.0.0.1:8080", none, none, false, {}, k::token_required},
        {"an empty Authorization", "127.0.0.1:8080", none, "", false, {}, k::not_bearer},
        // a CORS preflight: past Host and Origin, answered without credentials
        {"a preflight without credentials", "127.0.0.1:8080", "https://app.example.com", none, true, {}, {}},
        {"a preflight from a foreign Origin", "127.0.0.1:8080", "http://evil.example.com", none, true, {},
         k::origin_not_allowed},
    };
    auto const p = policy();
    for (auto const& r : rows) {
        door_request req;
        req.host = r.host;
        req.origin = r.origin;
        req.authorization = r.authorization;
        req.is_options = r.options;
        req.client = "192.0.2.7";
        auto v = pass_door(p, req);
        INFO(r.what << " -> " << verdict_text(v));
        if (r.refused) {
            REQUIRE(std::holds_alternative<door_refusal>(v));
            CHECK(std::get<door_refusal>(v).kind == *r.refused);
        } else if (r.principal) {
            REQUIRE(std::holds_alternative<door_admitted>(v));
            CHECK(std::get<door_admitted>(v).principal == *r.principal);
            CHECK_FALSE(std::get<door_admitted>(v).anonymous);
        } else {
            CHECK(std::holds_alternative<door_preflight>(v));
        }
    }
}

TEST_CASE("a Host or Origin refusal is a 403 without a challenge; a credentials refusal is a 401 with one") {
    auto const p = policy();
    door_request req;
    req.client = "192.0.2.7";
    req.host = "evil.example.com";
    auto host = std::get<door_refusal>(pass_door(p, req));
    CHECK(host.status == 403);
    CHECK(host.code == core::errc::forbidden_host);
    CHECK(host.www_authenticate.empty());
    CHECK(host.detail == "this Host is not allowed");

    req.host = "127.0.0.1:8080";
    req.origin = "null";
    auto origin = std::get<door_refusal>(pass_door(p, req));
    CHECK(origin.status == 403);
    CHECK(origin.code == core::errc::forbidden_origin);
    CHECK(origin.detail == "this Origin is not allowed");

    req.origin = std::nullopt;
    auto missing = std::get<door_refusal>(pass_door(p, req));
    CHECK(missing.status == 401);
    CHECK(missing.code == core::errc::unauthorized);
    CHECK(missing.www_authenticate == R"(Bearer realm="airlock")");
    CHECK(missing.detail == "a bearer token is required");
}

TEST_CASE("once a token was presented, the challenge says it is invalid_token, and the token is never repeated") {
    auto const p = policy();
    for (std::string_view auth : {"Bearer not-the-token", "Basic YWxpY2U6c2VjcmV0", "Bearer"}) {
        door_request req;
        req.host = "127.0.0.1:8080";
        req.authorization = auth;
        req.client = "192.0.2.7";
        auto r = std::get<door_refusal>(pass_door(p, req));
        INFO(auth);
        CHECK(r.status == 401);
        CHECK(r.www_authenticate == R"(Bearer realm="airlock", error="invalid_token")");
        CHECK(r.detail.find("not-the-token") == std::string::npos);
        CHECK(r.log_message.find("not-the-token") == std::string::npos);
    }
}

TEST_CASE("the refusals a client can repeat are logged under a key naming the client; the others are not") {
    auto const p = policy();
    door_request req;
    req.client = "192.0.2.7";
    req.host = "evil.example.com:8080";
    auto host = std::get<door_refusal>(pass_door(p, req));
    CHECK(host.log);
    CHECK(host.log_key == "host 192.0.2.7");
    CHECK(host.log_message == "refused a request for Host 'evil.example.com:8080' (DNS rebinding protection)");

    req.host = "127.0.0.1:8080";
    req.origin = "http://evil.example.com";
    auto origin = std::get<door_refusal>(pass_door(p, req));
    CHECK(origin.log_key == "origin 192.0.2.7");
    CHECK(origin.log_message == "refused a request from Origin 'http://evil.example.com'");

    req.origin = std::nullopt;
    req.authorization = "Basic x";
    auto scheme = std::get<door_refusal>(pass_door(p, req));
    CHECK(scheme.log_key == "scheme 192.0.2.7");
    CHECK(scheme.log_message == "refused a request from 192.0.2.7 with a non-bearer Authorization header");

    req.authorization = "Bearer nope";
    auto token = std::get<door_refusal>(pass_door(p, req));
    CHECK(token.log_key == "token 192.0.2.7");
    CHECK(token.log_message == "refused a request from 192.0.2.7 with an unknown bearer token");

    req.authorization = std::nullopt;
    CHECK_FALSE(std::get<door_refusal>(pass_door(p, req)).log);
    req.host = std::nullopt;
    CHECK_FALSE(std::get<door_refusal>(pass_door(p, req)).log);
}

TEST_CASE("with anonymous access a request without credentials is served as nobody, one with a bad token is not") {
    auto const p = policy(true);
    door_request req;
    req.host = "127.0.0.1:8080";
    auto anon = pass_door(p, req);
    REQUIRE(std::holds_alternative<door_admitted>(anon));
    CHECK(std::get<door_admitted>(anon).anonymous);
    CHECK(std::get<door_admitted>(anon).principal.empty());

    req.authorization = "Bearer not-the-token";
    CHECK(std::get<door_refusal>(pass_door(p, req)).kind == door_refusal_kind::unknown_token);
}

TEST_CASE("without a token lookup the door refuses everyone unless anonymous access is allowed") {
    door_request req;
    req.authorization = bearer;
    auto closed = make_door_policy({}, {}, nullptr, false, true);
    auto r = std::get<door_refusal>(pass_door(closed, req));
    CHECK(r.kind == door_refusal_kind::no_tokens_configured);
    CHECK(r.www_authenticate == R"(Bearer realm="airlock")");

    auto open = make_door_policy({}, {}, nullptr, true, true);
    CHECK(std::get<door_admitted>(pass_door(open, req)).anonymous);
}

TEST_CASE("with no hosts listed any Host is served, and the Origin is still judged") {
    auto p = make_door_policy({}, {"https://app.example.com"}, nullptr, true, true);
    door_request req;
    CHECK(std::holds_alternative<door_admitted>(pass_door(p, req)));
    req.host = "anything.example:1";
    CHECK(std::holds_alternative<door_admitted>(pass_door(p, req)));
    req.origin = "https://other.example.com";
    CHECK(std::get<door_refusal>(pass_door(p, req)).kind == door_refusal_kind::origin_not_allowed);
}

TEST_CASE("where the policy answers no preflight, an OPTIONS request needs credentials like any other") {
    auto const p = policy(false, false);
    door_request req;
    req.host = "127.0.0.1:8080";
    req.origin = "https://app.example.com";
    req.is_options = true;
    CHECK(std::get<door_refusal>(pass_door(p, req)).kind == door_refusal_kind::token_required);
    req.authorization = bearer;
    CHECK(std::get<door_admitted>(pass_door(p, req)).principal == "alice");
}

TEST_CASE("with OAuth configured, a static token still admits its principal and any other token goes to the verifier") {
    auto p = policy();
    std::vector<std::string> asked;
    p.oauth = [&](std::string_view token, std::string_view) -> std::variant<door_admitted, door_refusal> {
        asked.emplace_back(token);
        if (token == "eyJ.good.jwt") return door_admitted{"bob", false, token_identity{"https://idp", "u-1", "j-1", {}}};
        door_refusal r;
        r.kind = door_refusal_kind::invalid_token;
        r.status = 401;
        r.code = core::errc::unauthorized;
        return r;
    };
    p.challenge = R"(resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp")";
    door_request req;
    req.host = "127.0.0.1:8080";
    req.client = "192.0.2.7";
    req.authorization = bearer;
    auto a = std::get<door_admitted>(pass_door(p, req));
    CHECK(a.principal == "alice");
    CHECK_FALSE(a.identity);
    CHECK(asked.empty());  // a static token never reaches the verifier

    req.authorization = "Bearer eyJ.good.jwt";
    auto b = std::get<door_admitted>(pass_door(p, req));
    CHECK(b.principal == "bob");
    REQUIRE(b.identity);
    CHECK(b.identity->subject == "u-1");

    req.authorization = "Bearer eyJ.bad.jwt";
    CHECK(std::get<door_refusal>(pass_door(p, req)).kind == door_refusal_kind::invalid_token);
    CHECK(asked == std::vector<std::string>{"eyJ.good.jwt", "eyJ.bad.jwt"});
}

TEST_CASE("with OAuth configured, every 401 challenge says where the resource metadata is") {
    auto p = policy();
    p.oauth = [](std::string_view, std::string_view) -> std::variant<door_admitted, door_refusal> {
        return door_admitted{"bob", false, {}};
    };
    p.challenge = R"(resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="mcp:tools")";
    door_request req;
    req.host = "127.0.0.1:8080";
    req.client = "192.0.2.7";
    auto missing = std::get<door_refusal>(pass_door(p, req));
    CHECK(missing.status == 401);
    CHECK(missing.www_authenticate ==
          R"(Bearer realm="airlock", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="mcp:tools")");
    req.authorization = "Basic x";
    auto scheme = std::get<door_refusal>(pass_door(p, req));
    CHECK(scheme.www_authenticate ==
          R"(Bearer realm="airlock", error="invalid_token", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="mcp:tools")");
}

TEST_CASE("an access token in the URL is refused with 400 invalid_request, whatever the header holds") {
    auto const p = policy(true);
    for (std::string_view target : {"/mcp?access_token=abc", "/v1/runs?limit=2&access_token=", "/mcp?a=1&access_token=x&b=2"}) {
        INFO(target);
        http_request r{http::verb::post, target, 11};
        r.set(http::field::host, "127.0.0.1:8080");
        r.set(http::field::authorization, bearer);
        auto v = pass_door(p, read_door_request(r));
        REQUIRE(std::holds_alternative<door_refusal>(v));
        auto const& refused = std::get<door_refusal>(v);
        CHECK(refused.kind == door_refusal_kind::token_in_query);
        CHECK(refused.status == 400);
        CHECK(refused.www_authenticate == R"(Bearer realm="airlock", error="invalid_request")");
        CHECK(refused.detail.find("abc") == std::string::npos);
    }
    // A parameter that only contains the name is not one.
    for (std::string_view target : {"/mcp?my_access_token=1", "/mcp?x=access_token", "/mcp"}) {
        INFO(target);
        http_request r{http::verb::post, target, 11};
        r.set(http::field::host, "127.0.0.1:8080");
        r.set(http::field::authorization, bearer);
        CHECK(std::holds_alternative<door_admitted>(pass_door(p, read_door_request(r))));
    }
}
