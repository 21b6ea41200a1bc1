#pragma once
// The signing keys of the authorization servers airlock accepts tokens from: each issuer's metadata
// discovered (RFC 8414, then OpenID Connect discovery; `issuer` compared exactly), its JWKS fetched
// over airlock's own HTTP client under the egress rules, cached, fetched again every `refresh` and
// — rate-limited — when a token names a key id the cache lacks. Across an outage the last keys
// serve until `max_age` after they were fetched; then the issuer's tokens are refused (fail closed)
// and readiness says why.

#include "core/policy.hpp"
#include "service/http/jose.hpp"
#include "service/http/oauth_fetch.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

struct oauth_keys_options {
    std::vector<oauth_issuer_source> issuers;
    core::egress_allowlist egress;  // the metadata and JWKS URLs must be destinations it permits
    std::chrono::milliseconds refresh{300'000};       // keys are fetched again this often
    std::chrono::milliseconds max_age{3'600'000};     // the longest keys serve after their last fetch
    std::chrono::milliseconds min_refetch{10'000};    // an unknown kid makes a fetch at most this often
    std::chrono::milliseconds fetch_deadline{10'000};  // one metadata or JWKS request
    std::size_t max_document_bytes = 256 * 1024;
};

class oauth_keys : public std::enable_shared_from_this<oauth_keys> {
public:
    struct issuer_state {
        std::string issuer;
        bool ready = false;          // keys are held and not past max_age
        std::size_t keys = 0;        // usable keys held
        std::string jwks_uri;        // from the metadata, once discovered
        std::string problem;         // the last fetch's failure, "" after a success
        std::optional<std::chrono::system_clock::time_point> fetched;  // the last successful fetch
    };

    oauth_keys(boost::asio::any_io_executor exec, oauth_keys_options options);

    // Fetches every issuer's keys once, then keeps them fresh until stop(). Returns after the first
    // round (each issuer fetched or failed, within fetch_deadline per request).
    boost::asio::awaitable<void> async_start();
    void stop();

    // The issuer's keys, while they are not past max_age; null otherwise (or for an unknown issuer).
    std::shared_ptr<jose::key_set const> keys_for(std::string_view issuer) const;
    // A token named a key id the cached keys lack: fetch again soon, at most once per min_refetch.
    void refetch(std::string const& issuer);

    std::vector<issuer_state> states() const;

private:
    struct held;
    boost::asio::awaitable<void> async_fetch(std::size_t index);
    boost::asio::awaitable<void> async_keep_fresh();

    boost::asio::any_io_executor exec_;
    oauth_keys_options options_;
    mutable std::mutex mutex_;
    std::vector<std::shared_ptr<held>> held_;  // one per issuer, in options_.issuers' order
    bool stopped_ = false;
    std::shared_ptr<void> wake_;  // the refresh loop's timer (a steady_timer), cancelled to wake it
};

// Where an issuer's metadata may be, in the order they are tried: RFC 8414 (path inserted after
// /.well-known/oauth-authorization-server), OpenID Connect with the path inserted, then OpenID
// Connect appended to the issuer's path.
std::vector<std::string> metadata_urls(std::string_view issuer);

}  // namespace airlock::service
