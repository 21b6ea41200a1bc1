#include "mcp/protocol/uri_template.hpp"

#include <cstring>
#include <utility>

namespace airlock::mcp {

uri_template::uri_template(std::string text, std::regex pattern) : text_(std::move(text)), pattern_(std::move(pattern)) {}

std::optional<uri_template> uri_template::parse(std::string_view tmpl) {
    std::string re;
    for (std::size_t i = 0; i < tmpl.size();) {
        if (tmpl[i] == '{') {
            auto close = tmpl.find('}', i);
            if (close == std::string_view::npos) return std::nullopt;
            char op = close > i + 1 ? tmpl[i + 1] : '\0';
            if (op == '+' || op == '#') re += ".*";
            else if (op == '?' || op == '&') re += "([?&].*)?";
            else if (op == '/') re += "(/[^?#]*)?";
            else re += "[^/?#]*";
            i = close + 1;
            continue;
        }
        // Every other character stands for itself, regex metacharacters included.
        if (std::strchr(".^$|()[]*+?\\{}", tmpl[i])) re += '\\';
        re += tmpl[i++];
    }
    try {
        return uri_template(std::string(tmpl), std::regex(re));
    } catch (std::regex_error const&) {
        return std::nullopt;
    }
}

bool uri_template::matches(std::string const& uri) const { return std::regex_match(uri, pattern_); }

}  // namespace airlock::mcp
