#include "service/app/tokens.hpp"

#include <openssl/crypto.h>

namespace airlock::service {

void token_table::replace(config const& c) {
    std::vector<std::pair<core::sha256_digest, std::string>> tokens;
    std::set<std::string, std::less<>> operators;
    std::string anonymous;
    for (auto const& p : c.principals) {
        if (!p.token.empty()) tokens.emplace_back(core::sha256(p.token), p.name);
        if (p.is_operator) operators.insert(p.name);
        if (p.anonymous) anonymous = p.name;
    }
    std::lock_guard lock(mutex_);
    tokens_ = std::move(tokens);
    operators_ = std::move(operators);
    anonymous_ = std::move(anonymous);
}
bool token_table::is_operator(std::string_view name) const {
    std::lock_guard lock(mutex_);
    return operators_.contains(name);
}
std::string token_table::anonymous() const {
    std::lock_guard lock(mutex_);
    return anonymous_;
}
std::optional<std::string> token_table::find(std::string_view presented) const {
    auto d = core::sha256(presented);
    std::optional<std::string> who;
    std::lock_guard lock(mutex_);
    for (auto const& [digest, name] : tokens_)
        if (CRYPTO_memcmp(digest.data(), d.data(), d.size()) == 0) who = name;
    return who;
}

}  // namespace airlock::service
