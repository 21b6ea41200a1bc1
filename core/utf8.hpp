#pragma once
// UTF-8 as RFC 3629 defines it: one code point at a time, in and out.

#include <cstddef>
#include <string>
#include <string_view>

namespace airlock::core {

// Decodes one UTF-8 sequence starting at s[i]; returns the code point and advances i, or -1 (i
// unchanged) when the bytes are not well-formed UTF-8: overlong forms, encoded surrogates and
// values above U+10FFFF are all refused.
long decode_utf8(std::string_view s, std::size_t& i) noexcept;

// Appends the UTF-8 form of a code point (at most U+10FFFF).
void append_utf8(std::string& out, long cp);

}  // namespace airlock::core
