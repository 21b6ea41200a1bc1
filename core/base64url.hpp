#pragma once
// base64url without padding (RFC 4648 §5), as JOSE and airlock's provenance attestations write it.
// Decoding is strict: no padding, no whitespace, no character outside the URL-safe alphabet, no
// impossible length, and the unused bits of the last character zero, so that one text spells a
// given byte string.

#include <optional>
#include <string>
#include <string_view>

namespace airlock::core {

std::string base64url_encode(std::string_view bytes);
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace airlock::core
