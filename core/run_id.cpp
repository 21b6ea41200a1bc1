#include "core/run_id.hpp"

#include <charconv>
#include <cstdio>

namespace airlock::core {

namespace {
constexpr char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

int decode_char(char c) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c == 'I' || c == 'L') return 1;
    if (c == 'O') return 0;
    for (int i = 0; i < 32; ++i)
        if (alphabet[i] == c) return i;
    return -1;
}

// 128 bits as 16 bytes, big-endian, to 26 base32 characters (the top 2 bits of the first
// character are always zero).
std::string encode(std::array<std::uint8_t, 16> const& b) {
    std::string out(26, '0');
    // Walk the 130-bit field (2 leading zero bits + 128) five bits at a time.
    for (int c = 0; c < 26; ++c) {
        int bit = c * 5 - 2;  // index of this character's first bit within the 128 bits
        int v = 0;
        for (int k = 0; k < 5; ++k) {
            int pos = bit + k;
            v <<= 1;
            if (pos >= 0) v |= (b[pos / 8] >> (7 - pos % 8)) & 1;
        }
        out[c] = alphabet[v];
    }
    return out;
}
}  // namespace

run_id run_id::from_parts(std::uint64_t unix_ms, std::array<std::uint8_t, 10> const& randomness) {
    std::array<std::uint8_t, 16> b{};
    for (int i = 0; i < 6; ++i) b[i] = static_cast<std::uint8_t>(unix_ms >> (8 * (5 - i)));
    for (int i = 0; i < 10; ++i) b[6 + i] = randomness[i];
    return run_id(encode(b));
}

result<run_id> run_id::parse(std::string_view text) {
    if (text.size() != 26)
        return make_error("invalid_run_id", "run id must be 26 characters, got " + std::to_string(text.size()));
    std::string canon(26, '0');
    for (std::size_t i = 0; i < 26; ++i) {
        int v = decode_char(text[i]);
        if (v < 0) return make_error("invalid_run_id", "run id has a character outside Crockford base32 at position " + std::to_string(i));
        if (i == 0 && v > 7) return make_error("invalid_run_id", "run id is larger than 128 bits");
        canon[i] = alphabet[v];
    }
    return run_id(std::move(canon));
}

std::uint64_t run_id::unix_ms() const noexcept {
    // The first 10 characters hold the 48-bit timestamp (50 bits, top 2 zero).
    std::uint64_t v = 0;
    for (int i = 0; i < 10; ++i) v = (v << 5) | static_cast<std::uint64_t>(decode_char(text_[i]));
    return v;
}

run_id run_id_generator::next() {
    std::uint64_t now = clock_();
    if (has_last_ && now <= last_ms_) {
        // Same (or an earlier, stepped-back) millisecond: stay on the last timestamp and count up,
        // so ids never go backwards. Overflowing 80 bits within one millisecond is not reachable.
        now = last_ms_;
        for (int i = 9; i >= 0; --i)
            if (++last_random_[i] != 0) break;
    } else {
        random_(last_random_.data(), last_random_.size());
    }
    last_ms_ = now;
    has_last_ = true;
    return run_id::from_parts(now, last_random_);
}

effect_key::effect_key(core::run_id run, std::uint32_t step, kind k) : run_(std::move(run)), step_(step), kind_(k) {
    char num[16];
    std::snprintf(num, sizeof num, "%06u", step);
    text_ = run_.str() + "/" + num + "/" + (k == kind::model ? "model" : "tool");
}

effect_key effect_key::make(run_id const& run, std::uint32_t step, kind k) { return effect_key(run, step, k); }

result<effect_key> effect_key::parse(std::string_view text) {
    auto bad = [&](std::string why) { return make_error("invalid_effect_key", "'" + std::string(text) + "': " + why); };
    auto s1 = text.find('/');
    auto s2 = s1 == std::string_view::npos ? s1 : text.find('/', s1 + 1);
    if (s2 == std::string_view::npos) return bad("expected <run_id>/<step>/<tool|model>");
    auto run = run_id::parse(text.substr(0, s1));
    if (!run) return bad(run.error().message);
    auto step_text = text.substr(s1 + 1, s2 - s1 - 1);
    std::uint32_t step = 0;
    auto [p, ec] = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
    if (ec != std::errc{} || p != step_text.data() + step_text.size() || step_text.size() < 6)
        return bad("step is not a zero-padded number");
    auto what = text.substr(s2 + 1);
    kind k;
    if (what == "model") k = kind::model;
    else if (what == "tool") k = kind::tool;
    else return bad("kind must be 'tool' or 'model'");
    effect_key key(*run, step, k);
    if (key.str() != text) return bad("not in canonical form");
    return key;
}

}  // namespace airlock::core
