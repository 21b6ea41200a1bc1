#pragma once
// Information-flow labels: where a value came from, whether it is trusted, how sensitive it is.

#include "core/error.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::core {

enum class trust : std::uint8_t { trusted = 0, untrusted = 1 };
enum class sensitivity : std::uint8_t { public_ = 0, internal = 1, confidential = 2, secret = 3 };

std::string_view to_string(trust t) noexcept;
std::string_view to_string(sensitivity s) noexcept;
std::optional<trust> parse_trust(std::string_view s) noexcept;
std::optional<sensitivity> parse_sensitivity(std::string_view s) noexcept;  // "public", "internal", ...

struct label {
    std::set<std::string> sources;
    core::trust trust = trust::trusted;
    core::sensitivity sensitivity = sensitivity::public_;

    // The worse of each: union of sources, the less trusted, the more sensitive.
    label join(label const& other) const;
    friend bool operator==(label const&, label const&) = default;
};

// A value with a whole-value label and optional per-field labels addressed by RFC 6901 pointers.
struct tainted {
    boost::json::value value;
    label whole;
    std::vector<std::pair<std::string, label>> fields;  // pointer → label

    // The label of the nearest labelled ancestor of `pointer` (itself included), else `whole`.
    label label_at(std::string_view pointer) const;
    // The join of every label that reaches any part of the value.
    label overall() const;
};

// {"trust": "...", "sensitivity": "...", "sources": [...]}: how labels are journaled.
boost::json::object to_json(label const& l);
// Reads what to_json writes; absent fields take the trusted/public/no-source defaults.
result<label> label_from_json(boost::json::value const& v);

// True when `pointer` is an absolute RFC 6901 pointer ("" or "/a/b", escapes ~0 ~1 only).
bool is_json_pointer(std::string_view pointer) noexcept;

}  // namespace airlock::core
