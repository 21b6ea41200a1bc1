#pragma once
// What every fuzz target shares: an invariant that aborts when broken (so libFuzzer keeps the input
// as a crash), and JSON equality that treats numbers by value.
#include <boost/json/value.hpp>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace airlock::fuzz {

// A broken invariant is a bug: say which, and stop so the input is saved as crash-*.
inline void require(bool holds, char const* what) {
    if (holds) return;
    std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
    std::abort();
}

// JSON values equal as a reader sees them: 1, 1.0 and 1e0 are one number (the canonical form
// writes a whole double without a fraction, so it reads back as an integer), and -0 is 0. Two
// integers compare exactly; a double against an integer as doubles, as RFC 8785 reads numbers
// (a double of 2^60 is written in its shortest digits, which read back as a nearby integer).
// With `as_doubles` every number compares as the double I-JSON reads it (canonical JSON writes an
// integer beyond 2^53 as its nearest double).
inline bool same_json(boost::json::value const& a, boost::json::value const& b, bool as_doubles = false) {
    auto number = [](boost::json::value const& v, long double& out) {
        if (auto const* i = v.if_int64()) return out = static_cast<long double>(*i), true;
        if (auto const* u = v.if_uint64()) return out = static_cast<long double>(*u), true;
        if (auto const* d = v.if_double()) return out = static_cast<long double>(*d), true;
        return false;
    };
    long double x = 0, y = 0;
    if (number(a, x) && number(b, y)) {
        if (as_doubles || a.is_double() || b.is_double()) return static_cast<double>(x) == static_cast<double>(y);
        return x == y;  // long double holds every int64 and uint64 exactly
    }
    if (a.kind() != b.kind()) return false;
    if (auto const* o = a.if_object()) {
        auto const& p = b.get_object();
        if (o->size() != p.size()) return false;
        for (auto const& [k, v] : *o) {
            auto const* w = p.if_contains(k);
            if (!w || !same_json(v, *w, as_doubles)) return false;
        }
        return true;
    }
    if (auto const* arr = a.if_array()) {
        auto const& brr = b.get_array();
        if (arr->size() != brr.size()) return false;
        for (std::size_t i = 0; i < arr->size(); ++i)
            if (!same_json((*arr)[i], brr[i], as_doubles)) return false;
        return true;
    }
    return a == b;
}

inline std::string_view as_text(std::uint8_t const* data, std::size_t size) {
    return {reinterpret_cast<char const*>(data), size};
}

}  // namespace airlock::fuzz
