#include "service/app/oauth.hpp"

#include <spdlog/spdlog.h>

namespace airlock::service {

namespace {

boost::asio::awaitable<std::variant<door_admitted, door_refusal>> async_introspected(
    std::shared_ptr<token_introspector> intro, std::shared_ptr<oauth_guard const> guard, std::string token,
    std::string client) {
    auto v = co_await intro->async_introspect(std::move(token));
    if (auto* r = std::get_if<token_refusal>(&v)) {
        if (r->fault == token_fault::unavailable) spdlog::warn("oauth: {}", r->detail);
        co_return guard->refuse(*r, client);
    }
    co_return guard->admit(std::get<access_claims>(v), client);
}

}  // namespace

std::shared_ptr<oauth_parts> make_oauth(config const& c, boost::asio::any_io_executor exec,
                                        std::shared_ptr<airlock_metrics> metrics) {
    if (!c.auth.oauth) return nullptr;
    auto const& o = *c.auth.oauth;
    auto parts = std::make_shared<oauth_parts>();

    oauth_keys_options ko;
    for (auto const& i : o.issuers) ko.issuers.push_back({i.issuer, i.verify_peer, i.ca_file});
    ko.egress = c.egress;
    ko.refresh = o.jwks_refresh;
    ko.max_age = o.jwks_max_age;
    parts->keys = std::make_shared<oauth_keys>(exec, std::move(ko));

    oauth_guard_options go;
    for (auto const& i : o.issuers) go.rules.issuers.push_back(i.issuer);
    go.rules.audiences = o.audiences;
    go.rules.algorithms.clear();
    for (auto const& a : o.algorithms)
        if (auto alg = jose::alg_from_string(a)) go.rules.algorithms.push_back(*alg);
    go.rules.skew = o.clock_skew;
    go.principal_claim = o.principal_claim;
    go.principals = o.principals;
    go.required_scopes = o.required_scopes;
    go.resource_metadata_url = resource_metadata_url(o.resource);
    // The keys are held weakly: the guard lives in the doors, which outlive nothing they need.
    std::weak_ptr<oauth_keys> weak = parts->keys;
    auto keys = [weak](std::string_view issuer) -> std::shared_ptr<jose::key_set const> {
        auto k = weak.lock();
        return k ? k->keys_for(issuer) : nullptr;
    };
    auto counted = [metrics](std::string_view result) {
        if (metrics) metrics->oauth_authentications.with({result}).inc();
    };
    auto rotated = [weak](std::string const& issuer) {
        if (auto k = weak.lock()) k->refetch(issuer);
    };
    parts->guard = std::make_shared<oauth_guard const>(std::move(go), std::move(keys), nullptr, std::move(counted),
                                                       std::move(rotated));
    parts->door = door_oauth{oauth_guard::verifier(parts->guard), nullptr, parts->guard->challenge()};

    if (o.introspection) {
        introspection_options io;
        for (auto const& i : o.issuers)
            if (i.issuer == o.introspection->issuer) io.issuer = {i.issuer, i.verify_peer, i.ca_file};
        io.endpoint = o.introspection->endpoint;
        io.client_id = o.introspection->client_id;
        io.client_secret = o.introspection->client_secret;
        io.egress = c.egress;
        io.rules = parts->guard->rules();
        parts->introspector = std::make_shared<token_introspector>(exec, std::move(io));
        // Not a coroutine lambda: its captures would live in a closure the std::function owns, not in
        // the coroutine's frame. The free coroutine below takes them by value.
        parts->door.introspect = [intro = parts->introspector, guard = parts->guard](std::string token, std::string client) {
            return async_introspected(intro, guard, std::move(token), std::move(client));
        };
    }

    parts->metadata.resource = o.resource;
    for (auto const& i : o.issuers) parts->metadata.authorization_servers.push_back(i.issuer);
    parts->metadata.scopes_supported = o.scopes_supported;
    if (parts->metadata.scopes_supported.empty()) parts->metadata.scopes_supported = o.required_scopes;
    return parts;
}

}  // namespace airlock::service
