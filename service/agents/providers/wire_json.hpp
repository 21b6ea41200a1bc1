#pragma once
// Lenient readers for provider answers: a field that is absent, null or of another type reads as
// absent, so one server's omission does not fail a completion another server would have given.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::service::providers::wire {

inline std::optional<std::string> string_at(boost::json::object const& o, std::string_view key) {
    auto const* v = o.if_contains(key);
    if (!v || !v->is_string()) return std::nullopt;
    return std::string(v->get_string());
}

inline boost::json::object const* object_at(boost::json::object const& o, std::string_view key) {
    auto const* v = o.if_contains(key);
    return v && v->is_object() ? &v->get_object() : nullptr;
}

inline boost::json::array const* array_at(boost::json::object const& o, std::string_view key) {
    auto const* v = o.if_contains(key);
    return v && v->is_array() ? &v->get_array() : nullptr;
}

// A token count: a non-negative integer (some servers write it as a double); 0 otherwise.
inline std::uint64_t count_at(boost::json::object const* o, std::string_view key) {
    if (!o) return 0;
    auto const* v = o->if_contains(key);
    if (!v) return 0;
    if (v->is_uint64()) return v->get_uint64();
    if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
    if (v->is_double() && v->get_double() >= 0 && v->get_double() < 1e18) return static_cast<std::uint64_t>(v->get_double());
    return 0;
}

// A tool's JSON Schema as the wire wants it: an object schema, `{type: object}` when there is none.
inline boost::json::value schema_or_empty(boost::json::value const& schema) {
    if (schema.is_object()) return schema;
    return boost::json::object{{"type", "object"}, {"properties", boost::json::object{}}};
}

}  // namespace airlock::service::providers::wire
