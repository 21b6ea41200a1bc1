#pragma once
// URI templates (RFC 6570) read backwards: which URIs a template expands to. The gateway uses it to
// tell which upstream a resource URI belongs to when the URI was never listed, only a template.

#include <optional>
#include <regex>
#include <string>
#include <string_view>

namespace airlock::mcp {

// A template as a pattern that matches the URIs it expands to: a simple expression ({x}) matches up
// to the next '/', '?' or '#', reserved ones ({+x}, {#x}) anything, path segments ({/x}) an optional
// path, query forms ({?x}, {&x}) an optional query. Enough to tell a templated URI's owner, not to
// extract its variables.
class uri_template {
public:
    // nullopt when the template is malformed (an expression left open).
    static std::optional<uri_template> parse(std::string_view text);

    // Whether the whole of `uri` is one of the template's expansions.
    bool matches(std::string const& uri) const;

    std::string const& text() const noexcept { return text_; }

private:
    uri_template(std::string text, std::regex pattern);
    std::string text_;
    std::regex pattern_;
};

}  // namespace airlock::mcp
