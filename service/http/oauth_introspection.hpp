#pragma once
// Opaque access tokens (not JWTs), asked of their authorization server by RFC 7662 introspection:
// a POST of the token, authenticated as airlock's own client (client_secret_basic), the answer
// checked like a JWT's claims (service/http/access_token). Answers are cached by the token's
// digest — an active one at most `cache_ttl` and never past its expiry, a refusal `negative_ttl` —
// so a busy client costs one request to the authorization server a minute, not one per call.

#include "service/http/access_token.hpp"
#include "service/http/oauth_fetch.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>

namespace airlock::service {

struct introspection_options {
    oauth_issuer_source issuer;  // whose opaque tokens these are, and how to reach it
    std::string endpoint;        // "": the issuer's metadata's introspection_endpoint
    std::string client_id;
    std::string client_secret;   // SECRET
    core::egress_allowlist egress;
    token_rules rules;
    std::chrono::milliseconds deadline{5'000};
    std::chrono::seconds cache_ttl{60};
    std::chrono::seconds negative_ttl{10};
    std::size_t max_cached = 10'000;
};

class token_introspector : public std::enable_shared_from_this<token_introspector> {
public:
    using clock_fn = std::function<std::chrono::system_clock::time_point()>;
    token_introspector(boost::asio::any_io_executor exec, introspection_options options, clock_fn clock = {});

    boost::asio::awaitable<std::variant<access_claims, token_refusal>> async_introspect(std::string token);

    // Whether `token` is shaped like a JWT (three dots-separated base64url parts): those are validated
    // locally; anything else is introspected.
    static bool looks_like_jwt(std::string_view token) noexcept;

private:
    using verdict = std::variant<access_claims, token_refusal>;
    struct cached {
        verdict v;
        std::chrono::system_clock::time_point until;
    };
    boost::asio::awaitable<core::result<std::string>> async_endpoint();
    void remember(std::string const& key, verdict const& v, std::chrono::system_clock::time_point now);

    boost::asio::any_io_executor exec_;
    introspection_options options_;
    clock_fn clock_;
    std::mutex mutex_;
    std::string endpoint_;  // discovered once
    std::unordered_map<std::string, cached> cache_;
};

}  // namespace airlock::service
