#pragma once
// URI templates (RFC 6570) read backwards: which URIs a template expands to. The gateway uses it to
// tell which upstream a resource URI belongs to when the URI was never listed, only a template.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::mcp {

// A template as a pattern that matches the URIs it expands to: a simple expression ({x}) matches up
// to the next '/', '?' or '#', reserved ones ({+x}, {#x}) anything, path segments ({/x}) an optional
// path, query forms ({?x}, {&x}) an optional query. Enough to tell a templated URI's owner, not to
// extract its variables.
//
// Templates come from upstreams and URIs from clients, so matching is a simulation of the pattern's
// automaton, in time proportional to the URI's length times the template's, with no recursion: a
// backtracking regex engine took exponential time (and stack) on templates of adjacent expressions.
class uri_template {
public:
    // nullopt when the template is malformed (an expression left open).
    static std::optional<uri_template> parse(std::string_view text);

    // Whether the whole of `uri` is one of the template's expansions.
    bool matches(std::string_view uri) const;

    std::string const& text() const noexcept { return text_; }

    // One step of the pattern: a literal character, a run of characters outside `stops`, or an
    // optional group (one character of `lead`, then a run outside `stops`).
    struct element {
        enum class kind { literal, run, optional_run } what = kind::literal;
        char ch = 0;             // literal
        std::string_view lead;   // optional_run: the characters it may begin with
        std::string_view stops;  // run, optional_run: the characters it cannot hold ("" for any)
    };

private:
    uri_template(std::string text, std::vector<element> pattern);
    std::string text_;
    std::vector<element> pattern_;
};

}  // namespace airlock::mcp
