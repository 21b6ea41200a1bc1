#pragma once
// The principals' bearer tokens as `airlock serve` checks them, replaced whole by a reload.

#include "core/sha256.hpp"
#include "service/config/config.hpp"

#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::service {

// Bearer tokens compared in constant time: digests of equal length, so neither content nor length
// leaks through timing. A reload replaces the whole table at once.
class token_table {
public:
    void replace(config const& c);                          // the principals of `c`, all at once
    bool is_operator(std::string_view name) const;          // principals[].operator
    std::string anonymous() const;                          // the anonymous principal's name, or ""
    std::optional<std::string> find(std::string_view presented) const;  // the principal a token names

private:
    mutable std::mutex mutex_;
    std::vector<std::pair<core::sha256_digest, std::string>> tokens_;
    std::set<std::string, std::less<>> operators_;  // principals[].operator, by name
    std::string anonymous_;                         // the anonymous principal's name, if any
};

}  // namespace airlock::service
