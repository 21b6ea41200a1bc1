#pragma once
// Text a model reads but a person reviewing it cannot see: invisible and control characters in the
// definitions an upstream offers (tool, prompt and resource descriptions). A host shows the
// description to its user and hands the same text to its model; a character that renders as nothing
// (a zero-width space, a bidi override, the Unicode tag characters that spell ASCII invisibly) lets
// an upstream tell the model what the user never saw. airlock removes them before it passes a
// definition on.

#include <boost/json/fwd.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::core {

// What was removed: how many of each code point.
using hidden_characters = std::map<char32_t, std::size_t>;

// Whether a code point is removed from text shown to a user and a model alike. `after_visible` says
// whether the code point before it is an ordinary visible one (an emoji or variation selector after
// a visible base character picks its presentation; a run of selectors encodes hidden bytes).
bool is_hidden_character(char32_t cp, bool after_visible) noexcept;

// `text` without its hidden characters, or nothing when it has none. Bytes that are not UTF-8 become
// U+FFFD, so the result is always UTF-8. Tab, line feed and carriage return are kept.
std::optional<std::string> without_hidden_characters(std::string_view text, hidden_characters& removed);

// Removes hidden characters from every string a person or model reads as prose in one definition:
// the values of "description" and "title" keys at any depth of `v` (a JSON Schema's properties keep
// theirs under those keys too). Other strings (names, URIs, enum values, defaults) are left as
// they are: changing them would change what the upstream accepts. Returns how many were removed.
std::size_t remove_hidden_characters(boost::json::value& v, hidden_characters& removed);

// "U+200B ×2, U+E0041 ×5" (at most `limit` code points, then "…"), for a log line.
std::string describe(hidden_characters const& removed, std::size_t limit = 8);

}  // namespace airlock::core
