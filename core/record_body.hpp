#pragma once
// Reading the members of a journal record body that the readers treat as optional.

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace airlock::core {

// A member of a record body that may be absent or of another type: the string at `key`, or "";
// the unsigned integer at `key` (a non-negative int64 too), or 0.
inline std::string body_string(boost::json::object const& o, std::string_view key) {
    if (auto const* v = o.if_contains(key); v && v->is_string()) return std::string(v->get_string());
    return {};
}

inline std::uint64_t body_u64(boost::json::object const& o, std::string_view key) {
    if (auto const* v = o.if_contains(key)) {
        if (v->is_uint64()) return v->get_uint64();
        if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
    }
    return 0;
}

}  // namespace airlock::core
