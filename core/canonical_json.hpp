#pragma once
// RFC 8785 (JCS) canonical JSON, and the strict I-JSON parser that feeds it.

#include "core/error.hpp"

#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace airlock::core {

// The deepest nesting airlock reads where a value comes in: JSON-RPC messages at /mcp, over stdio
// and from upstreams, REST bodies, model replies. The top-level object or array is level 1. A journal
// record holds such a value a few levels below its own root, so records may nest deeper
// (max_record_depth in core/journal.hpp) and every accepted value reads back.
inline constexpr std::size_t max_json_depth = 128;

// Parses RFC 8259 JSON text that is also I-JSON (RFC 7493): valid UTF-8, no lone surrogates,
// no duplicate member names, finite numbers, nesting at most max_depth (error code "too_deep").
// Integers that fit int64/uint64 are kept exact; other numbers become the double nearest to their
// decimal text (strtod), so text written by canonical() or append_json() reads back bit for bit.
// Boost.JSON 1.81's own parser is not exact: about one double in six comes back one bit off.
result<boost::json::value> parse_ijson(std::string_view text, std::size_t max_depth = max_json_depth);

// Whether `v` nests deeper than `limit` levels (a scalar is level 0, `{}` level 1). It looks no
// deeper than limit + 1, so it is safe on values of any depth.
bool nests_deeper_than(boost::json::value const& v, std::size_t limit) noexcept;
bool nests_deeper_than(boost::json::object const& o, std::size_t limit) noexcept;

// The canonical form of a value: members sorted by UTF-16 code units, numbers as ECMAScript
// writes the IEEE 754 double they stand for (an integer beyond 2^53 becomes the nearest double, as
// in every RFC 8785 implementation; tests/tools/canon_check.mjs holds it to one), no insignificant
// whitespace.
// Refuses NaN, infinities and strings that are not valid UTF-8 (code "not_ijson").
result<std::string> canonical(boost::json::value const& v);
// The same for an object, without copying it into a value first.
result<std::string> canonical(boost::json::object const& o);
// The canonical form airlock wrote before it followed RFC 8785 for integers beyond 2^53, which it
// wrote with all their digits. Only for verifying journal records written then.
result<std::string> canonical_exact_integers(boost::json::object const& o);

// Appends `v` as JSON text with its members in the order they are held, strings written as in the
// canonical form and numbers as ECMAScript writes them (0.1, 1e+21, 42): what a JavaScript or Python
// peer would have written, where Boost.JSON writes 0.1 as 1E-1. Refuses what canonical refuses;
// `out` then holds a partial text.
result<void> append_json(std::string& out, boost::json::value const& v);
result<void> append_json(std::string& out, boost::json::object const& o);

// An upper bound on the size of canonical(v), found without writing it: cheap enough to ask of
// every value before deciding whether the exact size is worth computing.
std::size_t canonical_size_bound(boost::json::value const& v) noexcept;

// parse_ijson followed by canonical.
result<std::string> canonicalize(std::string_view text);

// What kind of JSON value `v` is, in words for error messages: "null", "a boolean", "an integer",
// "a number", "a string", "an array", "an object". Never the value itself, which may be secret.
std::string_view json_kind_name(boost::json::value const& v) noexcept;

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view s) noexcept;

// ECMAScript Number::toString for a finite double ("1e+21", "0.000001", "5e-324", "0" for -0).
std::string format_es_number(double d);

}  // namespace airlock::core
