#include "mcp/protocol/uri_template.hpp"

#include <algorithm>
#include <utility>

namespace airlock::mcp {

namespace {

using element = uri_template::element;

// What one expression of the template matches, by its operator (RFC 6570 section 3.2).
element expression(char op) {
    if (op == '+' || op == '#') return {element::kind::run, 0, {}, {}};
    if (op == '?' || op == '&') return {element::kind::optional_run, 0, "?&", {}};
    if (op == '/') return {element::kind::optional_run, 0, "/", "?#"};
    return {element::kind::run, 0, {}, "/?#"};
}

bool holds(std::string_view stops, char c) { return stops.find(c) == std::string_view::npos; }

}  // namespace

uri_template::uri_template(std::string text, std::vector<element> pattern)
    : text_(std::move(text)), pattern_(std::move(pattern)) {}

std::optional<uri_template> uri_template::parse(std::string_view tmpl) {
    std::vector<element> pattern;
    for (std::size_t i = 0; i < tmpl.size();) {
        if (tmpl[i] == '{') {
            auto close = tmpl.find('}', i);
            if (close == std::string_view::npos) return std::nullopt;
            pattern.push_back(expression(close > i + 1 ? tmpl[i + 1] : '\0'));
            i = close + 1;
            continue;
        }
        pattern.push_back({element::kind::literal, tmpl[i++], {}, {}});
    }
    return uri_template(std::string(tmpl), std::move(pattern));
}

// The states are (element i, inside its optional group or not); state i = 2*index + inside. A run
// or an optional group may be passed over without consuming anything, hence the closure.
bool uri_template::matches(std::string_view uri) const {
    std::size_t const n = pattern_.size();
    std::vector<char> now(2 * (n + 1)), next(2 * (n + 1));
    auto close_over = [&](std::vector<char>& s) {
        for (std::size_t i = 0; i < n; ++i) {
            bool const skippable = pattern_[i].what != element::kind::literal;
            if ((s[2 * i] && skippable) || s[2 * i + 1]) s[2 * (i + 1)] = 1;
        }
    };
    now[0] = 1;
    close_over(now);
    for (char c : uri) {
        std::fill(next.begin(), next.end(), 0);
        bool any = false;
        for (std::size_t i = 0; i < n; ++i) {
            auto const& e = pattern_[i];
            auto set = [&](std::size_t state) { next[state] = 1, any = true; };
            if (now[2 * i]) {
                if (e.what == element::kind::literal && e.ch == c) set(2 * (i + 1));
                if (e.what == element::kind::run && holds(e.stops, c)) set(2 * i);
                if (e.what == element::kind::optional_run && !holds(e.lead, c)) set(2 * i + 1);
            }
            if (now[2 * i + 1] && holds(e.stops, c)) set(2 * i + 1);
        }
        if (!any) return false;
        close_over(next);
        now.swap(next);
    }
    return now[2 * n] != 0;
}

}  // namespace airlock::mcp
