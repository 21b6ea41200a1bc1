#include "service/http/oauth_keys.hpp"

#include "core/ascii.hpp"
#include "service/http/oauth_fetch.hpp"
#include "mcp/client/spawn_logged.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;
using std::chrono::milliseconds;

struct oauth_keys::held {
    std::shared_ptr<jose::key_set const> keys;
    std::string jwks_uri;
    std::string problem = "not fetched yet";
    std::optional<std::chrono::system_clock::time_point> fetched;
    std::chrono::steady_clock::time_point fetched_steady{};
    std::optional<std::chrono::steady_clock::time_point> last_refetch;  // asked for by an unknown kid
    bool fetching = false;
};

std::vector<std::string> metadata_urls(std::string_view issuer) {
    // The issuer is scheme://authority[/path]: the well-known segment goes after the authority.
    auto const scheme_end = issuer.find("://");
    auto const path_at = scheme_end == std::string_view::npos ? std::string_view::npos : issuer.find('/', scheme_end + 3);
    std::string origin(issuer.substr(0, path_at));
    std::string path(path_at == std::string_view::npos ? std::string_view{} : issuer.substr(path_at));
    while (!path.empty() && path.back() == '/') path.pop_back();
    std::vector<std::string> out{origin + "/.well-known/oauth-authorization-server" + path,
                                 origin + "/.well-known/openid-configuration" + path};
    if (!path.empty()) out.push_back(origin + path + "/.well-known/openid-configuration");
    return out;
}

oauth_keys::oauth_keys(asio::any_io_executor exec, oauth_keys_options options)
    : exec_(std::move(exec)), options_(std::move(options)) {
    for (std::size_t i = 0; i < options_.issuers.size(); ++i) held_.push_back(std::make_shared<held>());
}

asio::awaitable<void> oauth_keys::async_start() {
    for (std::size_t i = 0; i < options_.issuers.size(); ++i) co_await async_fetch(i);
    auto self = shared_from_this();
    mcp::spawn_logged(exec_, [](std::shared_ptr<oauth_keys> s) -> asio::awaitable<void> {
        co_await s->async_keep_fresh();
    }(self), "oauth key refresh");
}

void oauth_keys::stop() {
    std::shared_ptr<void> wake;
    {
        std::lock_guard lock(mutex_);
        stopped_ = true;
        wake = wake_;
    }
    if (wake) asio::post(exec_, [wake] { static_cast<asio::steady_timer*>(wake.get())->cancel(); });
}

asio::awaitable<void> oauth_keys::async_keep_fresh() {
    auto timer = std::make_shared<asio::steady_timer>(exec_);
    {
        std::lock_guard lock(mutex_);
        if (stopped_) co_return;
        wake_ = timer;
    }
    for (;;) {
        // Wakes at the next refresh, or early when a refetch is asked for.
        timer->expires_after(std::min(options_.refresh, options_.min_refetch));
        co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
        {
            std::lock_guard lock(mutex_);
            if (stopped_) co_return;
        }
        auto const now = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < held_.size(); ++i) {
            bool due = false;
            {
                std::lock_guard lock(mutex_);
                auto const& h = *held_[i];
                due = !h.fetched || now - h.fetched_steady >= options_.refresh ||
                      (h.last_refetch && *h.last_refetch > h.fetched_steady) ||
                      // a failed fetch is tried again at the refetch pace, not once a refresh period
                      (!h.problem.empty() && now - h.fetched_steady >= options_.min_refetch);
            }
            if (due) co_await async_fetch(i);
        }
    }
}

void oauth_keys::refetch(std::string const& issuer) {
    std::shared_ptr<void> wake;
    {
        std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < options_.issuers.size(); ++i) {
            if (options_.issuers[i].issuer != issuer) continue;
            auto& h = *held_[i];
            auto const now = std::chrono::steady_clock::now();
            // Rate-limited: a flood of tokens with made-up key ids makes one fetch per min_refetch.
            if (h.last_refetch && now - *h.last_refetch < options_.min_refetch) return;
            if (h.fetched && now - h.fetched_steady < options_.min_refetch) return;
            h.last_refetch = now;
            wake = wake_;
        }
    }
    if (wake) asio::post(exec_, [wake] { static_cast<asio::steady_timer*>(wake.get())->cancel(); });
}

asio::awaitable<void> oauth_keys::async_fetch(std::size_t index) {
    auto const& src = options_.issuers[index];
    auto h = held_[index];
    {
        std::lock_guard lock(mutex_);
        if (h->fetching) co_return;
        h->fetching = true;
    }
    std::string jwks_uri;
    std::string problem;
    // Discovery: the first metadata document found decides; its issuer must be ours, exactly.
    for (auto const& url : metadata_urls(src.issuer)) {
        // Named, not a braced temporary in the co_await: GCC 12 destroys such a temporary twice.
        oauth_request doc_request{url};
        auto doc = co_await async_fetch_json(exec_, std::move(doc_request), src, options_.egress, options_.fetch_deadline, options_.max_document_bytes);
        if (!doc) {
            problem = doc.error().message;
            continue;
        }
        auto const* iss = doc->if_contains("issuer");
        if (!iss || !iss->is_string() || iss->get_string() != src.issuer) {
            problem = url + " names another issuer than " + src.issuer + " (the metadata must name it exactly)";
            break;
        }
        auto const* j = doc->if_contains("jwks_uri");
        if (!j || !j->is_string() || j->get_string().empty()) {
            problem = url + " has no jwks_uri";
            break;
        }
        jwks_uri = std::string(j->get_string());
        problem.clear();
        break;
    }
    std::shared_ptr<jose::key_set const> keys;
    if (!jwks_uri.empty()) {
        // Named, not a braced temporary in the co_await: GCC 12 destroys such a temporary twice.
        oauth_request doc_request{jwks_uri};
        auto doc = co_await async_fetch_json(exec_, std::move(doc_request), src, options_.egress, options_.fetch_deadline,
                                     options_.max_document_bytes);
        if (!doc) {
            problem = doc.error().message;
        } else {
            auto parsed = jose::parse_jwks(json::serialize(*doc));
            if (!parsed) {
                problem = jwks_uri + ": " + parsed.error().message;
            } else {
                for (auto const& why : parsed->skipped)
                    spdlog::warn("oauth: issuer {}: a key of {} is skipped: {}", src.issuer, jwks_uri, why);
                if (parsed->keys.empty()) problem = jwks_uri + " holds no key airlock can use";
                else keys = std::make_shared<jose::key_set const>(std::move(*parsed));
            }
        }
    }
    std::size_t count = 0;
    {
        std::lock_guard lock(mutex_);
        h->fetching = false;
        if (!jwks_uri.empty()) h->jwks_uri = jwks_uri;
        h->fetched_steady = std::chrono::steady_clock::now();
        if (keys) {
            count = keys->keys.size();
            h->keys = std::move(keys);
            h->fetched = std::chrono::system_clock::now();
            h->problem.clear();
        } else {
            h->problem = problem;
            // The keys fetched before still serve until max_age (keys_for), then not.
        }
    }
    if (count)
        spdlog::info("oauth: issuer {}: {} signing key(s) from {}", src.issuer, count, jwks_uri);
    else
        spdlog::warn("oauth: issuer {}: its keys could not be fetched: {}", src.issuer, problem);
}

std::shared_ptr<jose::key_set const> oauth_keys::keys_for(std::string_view issuer) const {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < options_.issuers.size(); ++i) {
        if (options_.issuers[i].issuer != issuer) continue;
        auto const& h = *held_[i];
        if (!h.keys || !h.fetched) return nullptr;
        if (std::chrono::system_clock::now() - *h.fetched > options_.max_age) return nullptr;  // fail closed
        return h.keys;
    }
    return nullptr;
}

std::vector<oauth_keys::issuer_state> oauth_keys::states() const {
    std::vector<issuer_state> out;
    auto const now = std::chrono::system_clock::now();
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < options_.issuers.size(); ++i) {
        auto const& h = *held_[i];
        issuer_state s;
        s.issuer = options_.issuers[i].issuer;
        s.jwks_uri = h.jwks_uri;
        s.fetched = h.fetched;
        s.keys = h.keys ? h.keys->keys.size() : 0;
        bool const fresh = h.keys && h.fetched && now - *h.fetched <= options_.max_age;
        s.ready = fresh;
        s.problem = h.problem;
        if (h.keys && !fresh)
            s.problem = "its keys are older than " + std::to_string(options_.max_age.count() / 1000) +
                        " s and could not be fetched again" + (h.problem.empty() ? "" : ": " + h.problem);
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace airlock::service
