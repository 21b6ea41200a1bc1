#pragma once
// Strict reading of YAML documents (agent manifests, airlock's configuration): plain scalars typed
// by the YAML 1.2 core schema, values of the wrong type refused rather than coerced, unknown and
// repeated keys refused, every problem recorded with the key path at fault.

#include "core/error.hpp"

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include <yaml-cpp/node/node.h>

namespace airlock::core::yaml {

// The most values one json() call may produce.
inline constexpr std::size_t max_json_nodes = 100000;

// What a scalar is under the YAML 1.2 core schema; other_tag is an explicit tag other than !!str.
enum class scalar_kind { null_, boolean, integer, floating, string, other_tag };

// Non-empty and every character a digit of `base` (8, 10 or 16). No sign, no prefix.
bool all_digits(std::string_view s, int base = 10) noexcept;
// Where a text holds a NUL byte ("a NUL byte at byte 12"), or nullopt. YAML does not allow NUL, and
// yaml-cpp 0.7 never returns on some texts holding one, so every reader refuses such a text before
// parsing it.
std::optional<std::string> nul_byte(std::string_view text);
// The first document of a YAML text and how many it holds (0 for a text of comments only), read
// without YAML::LoadAll: on some malformed texts (a lone ',') yaml-cpp 0.7's LoadAll never returns,
// collecting empty documents until memory runs out. Here counting stops at the first empty
// document and at `most`. Throws YAML::Exception on a syntax error, as LoadAll does.
struct documents {
    YAML::Node first;
    std::size_t count = 0;  // more than `most` counts as most + 1
};
documents read_documents(std::string const& text, std::size_t most = 16);

// The core schema's int: [-+]?[0-9]+, 0o[0-7]+ or 0x[0-9a-fA-F]+.
bool is_core_int(std::string_view s) noexcept;
// The core schema's float, including .inf, -.inf and .nan in their three spellings.
bool is_core_float(std::string_view s) noexcept;
// The kind of a scalar node (or of a null node); other nodes are other_tag.
scalar_kind classify(YAML::Node const& n);

// `s` as a JSON string literal, quotes and escapes included. (Not named `quoted`: argument-dependent
// lookup would find std::quoted for a std::string argument.)
std::string in_quotes(std::string_view s);
// Empty or only spaces, tabs and line breaks.
bool is_blank(std::string_view s) noexcept;

// What a node is, without what it says ("a string", "an integer", "a mapping"): for values that
// may be secret.
std::string shape(YAML::Node const& n);
// What a node is, with enough of its text to recognise it ("a string (\"abc\")", "an integer (7)").
std::string describe(YAML::Node const& n);

// The key path of `key` under `parent`: "a.b", or a["odd key"] when the key is not a plain name.
std::string child_path(std::string const& parent, std::string_view key);
// The key path of item `i` of the sequence at `parent`: "a[3]".
std::string index_path(std::string const& parent, std::size_t i);

// Reads typed values out of YAML nodes, recording every problem with the path of the field at
// fault and carrying on, so that a check can list them all. A reader that returns nullopt (or
// false) has already recorded why.
class reader {
public:
    struct rules {
        std::string_view document;  // names the root in messages: "the manifest"
        bool utf8_strings = false;   // string() refuses text that is not valid UTF-8 (not_utf8)
    };

    explicit reader(rules r) : rules_(r) {}

    std::vector<error> problems;

    void fail(std::string code, std::string message);

    // True when `n` is a mapping. Keys that are not strings, repeated or not in `known` are recorded,
    // and the mapping is still read, so one stray key does not hide the problems after it.
    bool mapping(YAML::Node const& n, std::string const& path, std::initializer_list<std::string_view> known);
    // True when `n` is a sequence.
    bool sequence(YAML::Node const& n, std::string const& path);
    std::optional<std::string> string(YAML::Node const& n, std::string const& path);
    // A string with something in it other than whitespace.
    std::optional<std::string> text(YAML::Node const& n, std::string const& path);
    std::optional<bool> boolean(YAML::Node const& n, std::string const& path);
    // Any YAML value as JSON (values carried rather than interpreted: schemas, tool arguments).
    // `budget` counts the values still allowed, so aliases cannot expand without bound; start it at
    // max_json_nodes.
    std::optional<boost::json::value> json(YAML::Node const& n, std::string const& path, std::size_t& budget);

protected:
    // `path` as messages name it: the document's name for the root.
    std::string what(std::string const& path) const;
    // True when `key` (of the mapping at `path`) is a string not in `seen`; adds it to `seen`.
    bool key_ok(YAML::Node const& key, std::string const& path, std::set<std::string>& seen);
    std::optional<boost::json::value> integer_json(std::string_view s, std::string const& path);

private:
    rules rules_;
};

}  // namespace airlock::core::yaml
