#include "service/http/oauth_introspection.hpp"

#include "core/sha256.hpp"
#include "service/http/oauth_keys.hpp"

#include <openssl/evp.h>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;
using sys_clock = std::chrono::system_clock;

namespace {

// application/x-www-form-urlencoded, and the client credentials of RFC 6749 §2.3.1 (which are
// form-encoded before they are joined and base64-encoded).
std::string form_encode(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

std::string basic_credentials(std::string const& id, std::string const& secret) {
    auto const plain = form_encode(id) + ":" + form_encode(secret);
    std::string out(4 * ((plain.size() + 2) / 3), '\0');
    auto n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                             reinterpret_cast<unsigned char const*>(plain.data()), static_cast<int>(plain.size()));
    out.resize(static_cast<std::size_t>(n));
    return "Basic " + out;
}

token_refusal unavailable(std::string detail) { return {token_fault::unavailable, std::move(detail), "", ""}; }

}  // namespace

token_introspector::token_introspector(asio::any_io_executor exec, introspection_options options, clock_fn clock)
    : exec_(std::move(exec)), options_(std::move(options)), clock_(std::move(clock)), endpoint_(options_.endpoint) {
    if (!clock_) clock_ = [] { return sys_clock::now(); };
}

bool token_introspector::looks_like_jwt(std::string_view token) noexcept {
    return std::count(token.begin(), token.end(), '.') == 2;
}

asio::awaitable<core::result<std::string>> token_introspector::async_endpoint() {
    {
        std::lock_guard lock(mutex_);
        if (!endpoint_.empty()) co_return endpoint_;
    }
    std::string problem = "no metadata found";
    for (auto const& url : metadata_urls(options_.issuer.issuer)) {
        // Named, not a braced temporary in the co_await: GCC 12 destroys such a temporary twice.
        oauth_request doc_request{url};
        auto doc = co_await async_fetch_json(exec_, std::move(doc_request), options_.issuer, options_.egress, options_.deadline, 256 * 1024);
        if (!doc) {
            problem = doc.error().message;
            continue;
        }
        auto const* iss = doc->if_contains("issuer");
        auto const* ep = doc->if_contains("introspection_endpoint");
        if (!iss || !iss->is_string() || iss->get_string() != options_.issuer.issuer)
            co_return core::make_error("oauth_fetch", url + " names another issuer");
        if (!ep || !ep->is_string() || ep->get_string().empty())
            co_return core::make_error("oauth_fetch", url + " lists no introspection_endpoint (configure one)");
        std::lock_guard lock(mutex_);
        endpoint_ = std::string(ep->get_string());
        co_return endpoint_;
    }
    co_return core::make_error("oauth_fetch", problem);
}

void token_introspector::remember(std::string const& key, verdict const& v, sys_clock::time_point now) {
    auto until = now + options_.negative_ttl;
    if (auto const* c = std::get_if<access_claims>(&v)) until = std::min(now + options_.cache_ttl, c->expires);
    if (auto const* r = std::get_if<token_refusal>(&v); r && r->fault == token_fault::unavailable) return;  // ask again
    std::lock_guard lock(mutex_);
    if (cache_.size() >= options_.max_cached) {
        std::erase_if(cache_, [&](auto const& kv) { return kv.second.until <= now; });
        if (cache_.size() >= options_.max_cached) cache_.clear();  // bounded: a flood of tokens costs fetches, not memory
    }
    cache_[key] = cached{v, until};
}

asio::awaitable<std::variant<access_claims, token_refusal>> token_introspector::async_introspect(std::string token) {
    auto const key = core::sha256_hex(token);
    auto const now = clock_();
    {
        std::lock_guard lock(mutex_);
        if (auto it = cache_.find(key); it != cache_.end() && it->second.until > now) co_return it->second.v;
    }
    auto self = shared_from_this();
    auto endpoint = co_await async_endpoint();
    if (!endpoint) co_return unavailable("introspection: " + endpoint.error().message);
    oauth_request rq{*endpoint, "token=" + form_encode(token) + "&token_type_hint=access_token",
                     basic_credentials(options_.client_id, options_.client_secret)};
    auto answer = co_await async_fetch_json(exec_, std::move(rq), options_.issuer, options_.egress, options_.deadline,
                                            64 * 1024);
    if (!answer) co_return unavailable("introspection: " + answer.error().message);
    auto v = validate_introspection(std::move(*answer), token, options_.issuer.issuer, options_.rules, clock_());
    remember(key, v, now);
    co_return v;
}

}  // namespace airlock::service
