#pragma once
// ASCII-only text helpers: protocol tokens, header names and values, hosts, config keywords. None of
// them folds or trims by locale: a non-ASCII byte is compared and kept as it is, so two different
// byte strings never pass for "the same" name.

#include <string>
#include <string_view>

namespace airlock::core {

constexpr char ascii_lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string ascii_lowercase(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = ascii_lower(c);
    return out;
}

// Equal but for ASCII letter case.
constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

// Without the optional whitespace of HTTP (RFC 9110 OWS: spaces and tabs) at either end.
constexpr std::string_view trim_ows(std::string_view s) noexcept {
    auto ows = [](char c) { return c == ' ' || c == '\t'; };
    while (!s.empty() && ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && ows(s.back())) s.remove_suffix(1);
    return s;
}

// Without spaces, tabs, CRs and LFs at either end (values read from files and the environment).
constexpr std::string_view trim_space(std::string_view s) noexcept {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

}  // namespace airlock::core
