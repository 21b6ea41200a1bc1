// The URI template matcher: a template that parses matches its own expansions (each expression
// expanded as RFC 6570 would, with a sample value), and matching never throws or crashes, whatever
// the template and the URI.
#include "mcp/protocol/uri_template.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace airlock;
using fuzz::require;

namespace {

// A sample expansion of one expression by its operator (RFC 6570 section 3.2).
std::string_view sample(char op) {
    switch (op) {
    case '+': return "a/b?c";
    case '#': return "#a/b";
    case '/': return "/a/b";
    case '?': return "?x=1&y=2";
    case '&': return "&x=1";
    case '.': return ".a";
    case ';': return ";x=1";
    default: return "abc";
    }
}

std::optional<std::string> expand(std::string_view tmpl) {
    std::string out;
    for (std::size_t i = 0; i < tmpl.size();) {
        if (tmpl[i] != '{') {
            out += tmpl[i++];
            continue;
        }
        auto close = tmpl.find('}', i);
        if (close == std::string_view::npos) return std::nullopt;
        out += sample(close > i + 1 ? tmpl[i + 1] : '\0');
        i = close + 1;
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    auto text = fuzz::as_text(data, size);
    auto nl = text.find('\n');
    auto tmpl = text.substr(0, nl);
    std::string uri(nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1));
    auto t = mcp::uri_template::parse(tmpl);
    auto expansion = expand(tmpl);
    require(t.has_value() == expansion.has_value(), "a template parses iff every expression is closed");
    if (!t) return 0;
    require(t->text() == tmpl, "the template's text changed");
    require(t->matches(*expansion), "a template does not match its own expansion");
    (void)t->matches(uri);
    return 0;
}
