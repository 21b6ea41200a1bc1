#pragma once
// What an operator reads before accepting a changed tool definition: the pinned and the new
// definition side by side as a line diff, field by field. Pure text from two JSON values, so the
// CLI (airlock pins show) and the REST API (GET /v1/pins/{server}/{tool}) say the same thing.

#include "core/error.hpp"
#include "core/pins.hpp"

#include <boost/json/object.hpp>
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

// The pin of `server`'s `tool` (its upstream name) among `pins`; "unknown_server" or "unknown_tool"
// when there is none, the message naming what is unknown and the names that do have pins.
result<pin> find_pin(std::vector<pin> const& pins, std::string_view server, std::string_view tool);

// A pin as the REST API shows it: key, server, tool, status ("pinned" or "changed"), the digests;
// with `full`, the definitions (null when not kept) and the diff (null unless changed).
boost::json::object pin_json(pin const& p, bool full);

// A pin as `airlock pins show` prints it: what it is, the pinned and the new definition, and what
// changed between them; a pin that is unchanged says so.
std::string render_pin_review(pin const& p);

}  // namespace airlock::core
