#pragma once
// The OAuth side of the front door, as one pure decision: a presented access token → the
// principal it is served as, or the refusal (401 invalid_token, 403 insufficient_scope, 403 for a
// subject no principal is mapped to). The keys come from a key_source (service/http/oauth_keys
// fetches and caches them); the clock is injected. No sockets.

#include "service/http/access_token.hpp"
#include "service/http/door.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace airlock::service {

struct oauth_guard_options {
    token_rules rules;
    std::string principal_claim = "sub";             // its value names the principal
    std::map<std::string, std::string> principals;   // that value → principal name
    std::vector<std::string> required_scopes;        // every request needs all of them
    std::string resource_metadata_url;               // absolute; said in every challenge
};

class oauth_guard {
public:
    using clock_fn = std::function<std::chrono::system_clock::time_point()>;
    // Told the result of every check: "ok" or a token_fault's name, "insufficient_scope",
    // "unmapped_subject" (metric labels, bounded).
    using result_fn = std::function<void(std::string_view result)>;
    // Told of a token signed with a key id its issuer's cached keys do not hold: the keys may have
    // rotated (the fetcher decides how often it looks again).
    using unknown_kid_fn = std::function<void(std::string const& issuer)>;

    oauth_guard(oauth_guard_options options, key_source keys, clock_fn clock = {}, result_fn on_result = {},
                unknown_kid_fn on_unknown_kid = {});

    std::variant<door_admitted, door_refusal> check(std::string_view token, std::string_view client) const;
    // The halves of check(), for a token validated elsewhere (an opaque one, by introspection):
    // valid claims → the principal or a 403; a refusal → the 401.
    std::variant<door_admitted, door_refusal> admit(access_claims const& claims, std::string_view client) const;
    door_refusal refuse(token_refusal const& r, std::string_view client) const;

    // `resource_metadata="…", scope="…"`: what every 401 adds to `Bearer realm="airlock"`.
    std::string challenge() const;
    token_rules const& rules() const { return options_.rules; }

    // The door's verifier: check() behind a function (the guard is shared, never copied).
    static token_verifier verifier(std::shared_ptr<oauth_guard const> guard);

private:
    std::optional<std::string> principal_of(access_claims const& claims) const;

    oauth_guard_options options_;
    key_source keys_;
    clock_fn clock_;
    result_fn on_result_;
    unknown_kid_fn on_unknown_kid_;
};

}  // namespace airlock::service
