#pragma once
// What an operator reads before accepting a changed tool definition: the pinned and the new
// definition side by side as a line diff, field by field. Pure text from two JSON values, so the
// CLI (airlock pins show) and the REST API (GET /v1/pins/{server}/{tool}) say the same thing.

#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace airlock::core {

// `v` as JSON text with members sorted by name, two spaces of indent per level and one member or
// element per line, so that a changed schema differs only on the lines that changed.
std::string pretty_json(boost::json::value const& v);

// A line diff of `before` and `after` (longest common subsequence): each line of the result is the
// line prefixed with "  " (in both), "- " (only before) or "+ " (only after).
std::vector<std::string> line_diff(std::vector<std::string> const& before, std::vector<std::string> const& after);

// `text` with the characters a reader cannot see (core/visible_text) written as <U+200B>, so a
// review shows what a model would read.
std::string with_hidden_shown(std::string_view text);

// The fields of two tool definitions that differ, in the order a reviewer reads them (name, title,
// description, inputSchema, outputSchema, annotations, then any other member by name): a header line
// "FIELD:" followed by its line diff, indented by two spaces. Text fields (title, description) are
// diffed as their lines, the others as pretty_json. Empty when the definitions are the same.
std::string render_definition_diff(boost::json::value const& pinned, boost::json::value const& changed);

}  // namespace airlock::core
