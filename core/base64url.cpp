#include "core/base64url.hpp"

#include <array>
#include <cstdint>

namespace airlock::core {

namespace {

constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr std::array<std::int8_t, 256> make_decode_table() {
    std::array<std::int8_t, 256> t{};
    for (auto& v : t) v = -1;
    for (std::size_t i = 0; i < alphabet.size(); ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
    return t;
}
constexpr auto decode_table = make_decode_table();

}  // namespace

std::optional<std::string> base64url_decode(std::string_view text) {
    if (text.size() % 4 == 1) return std::nullopt;
    std::string out;
    out.reserve(text.size() * 3 / 4);
    std::uint32_t acc = 0;
    int held = 0;
    for (char c : text) {
        auto v = decode_table[static_cast<unsigned char>(c)];
        if (v < 0) return std::nullopt;
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        held += 6;
        if (held >= 8) {
            held -= 8;
            out += static_cast<char>((acc >> held) & 0xff);
        }
    }
    // The bits past the last whole byte must be zero, or "AB" and "AC" would both decode to one byte.
    if (held > 0 && (acc & ((1u << held) - 1)) != 0) return std::nullopt;
    return out;
}

std::string base64url_encode(std::string_view in) {
    std::string out;
    out.reserve((in.size() * 4 + 2) / 3);
    std::uint32_t acc = 0;
    int held = 0;
    for (char c : in) {
        acc = (acc << 8) | static_cast<unsigned char>(c);
        held += 8;
        while (held >= 6) {
            held -= 6;
            out += alphabet[(acc >> held) & 63];
        }
    }
    if (held > 0) out += alphabet[(acc << (6 - held)) & 63];
    return out;
}

}  // namespace airlock::core
