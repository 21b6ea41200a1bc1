#include "core/visible_text.hpp"
#include "core/utf8.hpp"

#include <boost/json/value.hpp>

#include <cstdio>

namespace airlock::core {

namespace {

constexpr char32_t replacement = 0xFFFD;

bool in(char32_t cp, char32_t first, char32_t last) noexcept { return cp >= first && cp <= last; }

bool is_selector(char32_t cp) noexcept { return in(cp, 0xFE00, 0xFE0F) || in(cp, 0xE0100, 0xE01EF); }

bool is_space_or_control(char32_t cp) noexcept { return cp <= 0x20 || in(cp, 0x7F, 0xA0); }

std::size_t clean(boost::json::value& v, hidden_characters& removed, bool prose) {
    std::size_t n = 0;
    if (auto* s = v.if_string()) {
        if (!prose) return 0;
        hidden_characters here;
        if (auto cleaned = without_hidden_characters(*s, here)) {
            *s = *cleaned;
            for (auto const& [cp, count] : here) {
                removed[cp] += count;
                n += count;
            }
        }
    } else if (auto* o = v.if_object()) {
        for (auto& kv : *o) n += clean(kv.value(), removed, kv.key() == "description" || kv.key() == "title");
    } else if (auto* a = v.if_array()) {
        for (auto& e : *a) n += clean(e, removed, false);
    }
    return n;
}

}  // namespace

bool is_hidden_character(char32_t cp, bool after_visible) noexcept {
    if (cp == '\t' || cp == '\n' || cp == '\r') return false;
    if (cp < 0x20 || in(cp, 0x7F, 0x9F)) return true;  // C0 and C1 controls
    // Selectors after a visible character choose its glyph (the emoji form of a heart); any other
    // selector draws nothing, and a run of them is the known way to hide bytes behind one emoji.
    if (cp == 0xFE0E || cp == 0xFE0F) return !after_visible;
    if (is_selector(cp)) return true;
    return cp == 0x00AD                    // soft hyphen
           || cp == 0x034F                 // combining grapheme joiner
           || cp == 0x061C                 // Arabic letter mark
           || cp == 0x115F || cp == 0x1160  // Hangul fillers
           || cp == 0x17B4 || cp == 0x17B5  // Khmer inherent vowels
           || in(cp, 0x180B, 0x180F)        // Mongolian selectors and vowel separator
           || in(cp, 0x200B, 0x200F)        // zero-width space, joiners, direction marks
           || in(cp, 0x202A, 0x202E)        // bidi embeddings and overrides
           || in(cp, 0x2060, 0x206F)        // word joiner, invisible operators, bidi isolates
           || cp == 0x3164 || cp == 0xFFA0  // Hangul fillers
           || cp == 0xFEFF                  // zero-width no-break space
           || in(cp, 0xFFF0, 0xFFFB)        // interlinear annotation and unassigned specials
           || in(cp, 0x1BCA0, 0x1BCA3)      // shorthand format controls
           || in(cp, 0x1D173, 0x1D17A)      // musical formatting
           || in(cp, 0xE0000, 0xE0FFF);     // tags (ASCII spelled invisibly) and the rest of that block
}

std::optional<std::string> without_hidden_characters(std::string_view text, hidden_characters& removed) {
    // Most text has nothing to remove: scan first, copy only when needed.
    std::string out;
    bool changed = false;
    bool after_visible = false;
    std::size_t i = 0;
    while (i < text.size()) {
        auto const start = i;
        auto const decoded = decode_utf8(text, i);
        // A byte that starts no well-formed sequence becomes U+FFFD on its own.
        bool const malformed = decoded < 0;
        if (malformed) ++i;
        auto const cp = malformed ? replacement : static_cast<char32_t>(decoded);
        bool const hidden = !malformed && is_hidden_character(cp, after_visible);
        if ((hidden || malformed) && !changed) {
            out.reserve(text.size());
            out.append(text.substr(0, start));
            changed = true;
        }
        if (hidden) {
            ++removed[cp];
            continue;  // after_visible stays: a selector run after a character counts as one
        }
        if (changed) {
            if (malformed) append_utf8(out, static_cast<long>(replacement));
            else out.append(text.substr(start, i - start));
        }
        after_visible = !is_space_or_control(cp) && !is_selector(cp) && cp != replacement;
    }
    if (!changed) return std::nullopt;
    return out;
}

std::size_t remove_hidden_characters(boost::json::value& v, hidden_characters& removed) {
    return clean(v, removed, false);
}

std::string describe(hidden_characters const& removed, std::size_t limit) {
    std::string out;
    std::size_t shown = 0;
    for (auto const& [cp, count] : removed) {
        if (shown == limit) {
            out += ", …";
            break;
        }
        char buf[32];
        std::snprintf(buf, sizeof buf, "%sU+%04X ×%zu", shown ? ", " : "", static_cast<unsigned>(cp), count);
        out += buf;
        ++shown;
    }
    return out;
}

}  // namespace airlock::core
