#include "core/canonical_json.hpp"
#include "core/utf8.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace airlock::core {

namespace {

std::string at(std::size_t pos) { return " at byte " + std::to_string(pos); }

// A byte of the input for an error message: printable ASCII quoted, anything else in hex, so the
// message (which a JSON-RPC error carries back to the sender) is always valid UTF-8.
std::string shown(char c) {
    if (c > 0x20 && c < 0x7f) return std::string("'") + c + "'";
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(c));
    return std::string("byte ") + hex;
}

class parser {
public:
    parser(std::string_view text, std::size_t max_depth) : s_(text), max_depth_(max_depth) {}

    result<boost::json::value> run() {
        boost::json::value v;
        if (auto r = value(v, 0); !r) return r.error();
        skip_ws();
        if (i_ != s_.size()) return fail("trailing_content", "unexpected content after the JSON value");
        return v;
    }

private:
    std::string_view s_;
    std::size_t max_depth_;
    std::size_t i_ = 0;

    error fail(std::string code, std::string what) const { return make_error(std::move(code), what + at(i_)); }
    error too_deep() const {
        return fail("too_deep", "nesting deeper than " + std::to_string(max_depth_) + " levels, the most airlock reads");
    }

    void skip_ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }

    result<void> value(boost::json::value& out, std::size_t depth) {
        skip_ws();
        if (i_ >= s_.size()) return fail("syntax", "unexpected end of input");
        char c = s_[i_];
        switch (c) {
            case '{': return object(out, depth + 1);
            case '[': return array(out, depth + 1);
            case '"': {
                std::string str;
                if (auto r = string(str); !r) return r;
                out = boost::json::string(str);
                return {};
            }
            case 't': return literal("true", out, true);
            case 'f': return literal("false", out, false);
            case 'n': return literal("null", out, nullptr);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return number(out);
                return fail("syntax", "unexpected character " + shown(c));
        }
    }

    template <class T>
    result<void> literal(std::string_view word, boost::json::value& out, T v) {
        if (s_.substr(i_, word.size()) != word) return fail("syntax", "invalid literal");
        i_ += word.size();
        out = v;
        return {};
    }

    result<void> object(boost::json::value& out, std::size_t depth) {
        if (depth > max_depth_) return too_deep();
        ++i_;  // '{'
        boost::json::object obj;
        skip_ws();
        if (i_ < s_.size() && s_[i_] == '}') { ++i_; out = std::move(obj); return {}; }
        for (;;) {
            skip_ws();
            if (i_ >= s_.size() || s_[i_] != '"') return fail("syntax", "expected a member name");
            std::size_t key_pos = i_;
            std::string key;
            if (auto r = string(key); !r) return r;
            // I-JSON forbids duplicate names; a parser that kept the first or last would let two
            // readers of the same document see different values.
            if (obj.contains(key))
                return make_error("duplicate_key", "duplicate member name \"" + key + "\"" + at(key_pos));
            skip_ws();
            if (i_ >= s_.size() || s_[i_] != ':') return fail("syntax", "expected ':'");
            ++i_;
            boost::json::value member;
            if (auto r = value(member, depth); !r) return r;
            obj.emplace(key, std::move(member));
            skip_ws();
            if (i_ < s_.size() && s_[i_] == ',') { ++i_; continue; }
            if (i_ < s_.size() && s_[i_] == '}') { ++i_; break; }
            return fail("syntax", "expected ',' or '}'");
        }
        out = std::move(obj);
        return {};
    }

    result<void> array(boost::json::value& out, std::size_t depth) {
        if (depth > max_depth_) return too_deep();
        ++i_;  // '['
        boost::json::array arr;
        skip_ws();
        if (i_ < s_.size() && s_[i_] == ']') { ++i_; out = std::move(arr); return {}; }
        for (;;) {
            boost::json::value element;
            if (auto r = value(element, depth); !r) return r;
            arr.push_back(std::move(element));
            skip_ws();
            if (i_ < s_.size() && s_[i_] == ',') { ++i_; continue; }
            if (i_ < s_.size() && s_[i_] == ']') { ++i_; break; }
            return fail("syntax", "expected ',' or ']'");
        }
        out = std::move(arr);
        return {};
    }

    result<unsigned> hex4() {
        if (i_ + 4 > s_.size()) return fail("syntax", "truncated \\u escape");
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
            char c = s_[i_ + k];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
            else return fail("syntax", "invalid \\u escape");
        }
        i_ += 4;
        return v;
    }

    result<void> string(std::string& out) {
        ++i_;  // opening quote
        for (;;) {
            if (i_ >= s_.size()) return fail("syntax", "unterminated string");
            auto c = static_cast<unsigned char>(s_[i_]);
            if (c == '"') { ++i_; return {}; }
            if (c < 0x20) return fail("syntax", "unescaped control character in string");
            if (c != '\\') {
                std::size_t start = i_;
                if (decode_utf8(s_, i_) < 0) { i_ = start; return fail("invalid_utf8", "invalid UTF-8"); }
                out.append(s_.substr(start, i_ - start));
                continue;
            }
            ++i_;
            if (i_ >= s_.size()) return fail("syntax", "unterminated escape");
            char e = s_[i_++];
            switch (e) {
                case '"': out.push_back('"'); break;
                case '\\': out.push_back('\\'); break;
                case '/': out.push_back('/'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'n': out.push_back('\n'); break;
                case 'r': out.push_back('\r'); break;
                case 't': out.push_back('\t'); break;
                case 'u': {
                    std::size_t esc_pos = i_ - 2;
                    auto hi = hex4();
                    if (!hi) return hi.error();
                    long cp = *hi;
                    if (cp >= 0xDC00 && cp <= 0xDFFF)
                        return make_error("lone_surrogate", "unpaired low surrogate \\u escape" + at(esc_pos));
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        if (s_.substr(i_, 2) != "\\u")
                            return make_error("lone_surrogate", "unpaired high surrogate \\u escape" + at(esc_pos));
                        i_ += 2;
                        auto lo = hex4();
                        if (!lo) return lo.error();
                        if (*lo < 0xDC00 || *lo > 0xDFFF)
                            return make_error("lone_surrogate", "unpaired high surrogate \\u escape" + at(esc_pos));
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (*lo - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default: return fail("syntax", "invalid escape: backslash then " + shown(e));
            }
        }
    }

    result<void> number(boost::json::value& out) {
        std::size_t start = i_;
        bool integral = true;
        if (s_[i_] == '-') ++i_;
        auto digits = [&] {
            std::size_t n = 0;
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') { ++i_; ++n; }
            return n;
        };
        if (i_ < s_.size() && s_[i_] == '0') ++i_;
        else if (digits() == 0) return fail("syntax", "invalid number");
        if (i_ < s_.size() && s_[i_] == '.') {
            integral = false;
            ++i_;
            if (digits() == 0) return fail("syntax", "invalid number: no digits after '.'");
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            integral = false;
            ++i_;
            if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
            if (digits() == 0) return fail("syntax", "invalid number: no exponent digits");
        }
        char const* first = s_.data() + start;
        char const* last = s_.data() + i_;
        if (integral) {
            std::int64_t i64;
            if (auto [p, ec] = std::from_chars(first, last, i64); ec == std::errc{} && p == last) { out = i64; return {}; }
            std::uint64_t u64;
            if (auto [p, ec] = std::from_chars(first, last, u64); ec == std::errc{} && p == last) { out = u64; return {}; }
        }
        // strtod, unlike from_chars, tells overflow (±HUGE_VAL) from underflow (a value near zero).
        std::string copy(first, last);
        errno = 0;
        char* end = nullptr;
        double d = std::strtod(copy.c_str(), &end);
        if (end != copy.c_str() + copy.size() || !std::isfinite(d))
            return make_error("not_ijson", "number " + copy + " is outside the range of an IEEE 754 double" + at(start));
        out = d;
        return {};
    }
};

std::u16string to_utf16(std::string_view s) {
    std::u16string out;
    std::size_t i = 0;
    while (i < s.size()) {
        long cp = decode_utf8(s, i);
        if (cp < 0) break;  // strings were validated before sorting
        if (cp >= 0x10000) {
            cp -= 0x10000;
            out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
            out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
        } else {
            out.push_back(static_cast<char16_t>(cp));
        }
    }
    return out;
}

result<void> write_string(std::string& out, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    out.push_back('"');
    // One pass: runs of bytes that stand for themselves are appended whole; only escapes and the
    // validation of multi-byte sequences look at single bytes. This runs over every string of every
    // journal record and provenance block, so it is on each gateway call's path several times.
    std::size_t run = 0, i = 0;
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            if (decode_utf8(s, i) < 0) return make_error("not_ijson", "string is not valid UTF-8" + at(i));
            continue;  // a valid sequence is written as it is
        }
        if (c >= 0x20 && c != '"' && c != '\\') {
            ++i;
            continue;
        }
        out.append(s.data() + run, i - run);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                out += "\\u00";
                out.push_back(hex[c >> 4]);
                out.push_back(hex[c & 0xf]);
        }
        run = ++i;
    }
    out.append(s.data() + run, s.size() - run);
    out.push_back('"');
    return {};
}

// How a value is written: as held (append_json), canonical (RFC 8785), or canonical as airlock
// wrote it before it followed RFC 8785 for integers beyond 2^53 (read only to verify old journals).
enum class form { in_order, canonical, canonical_exact_integers };

// RFC 8785 numbers are IEEE 754 doubles (I-JSON): an integer beyond 2^53 is written as the double
// nearest to it, as every JCS implementation writes it, so a verifier in another language computes
// the same hash. The other forms keep the exact digits, so a record's text still holds the integer
// the tool sent.
template <class Integer>
void write_integer(std::string& out, Integer i, form f) {
    constexpr Integer exact = Integer(1) << 53;
    bool beyond = i > exact;
    if constexpr (std::is_signed_v<Integer>) beyond = beyond || i < -exact;
    if (beyond && f == form::canonical) out += format_es_number(static_cast<double>(i));
    else out += std::to_string(i);
}

result<void> write(std::string& out, boost::json::value const& v, form f);

result<void> write_members_in_order(std::string& out, boost::json::object const& obj) {
    out.push_back('{');
    bool first = true;
    for (auto const& kv : obj) {
        if (!first) out.push_back(',');
        first = false;
        if (auto r = write_string(out, kv.key()); !r) return r;
        out.push_back(':');
        if (auto r = write(out, kv.value(), form::in_order); !r) return r;
    }
    out.push_back('}');
    return {};
}

result<void> write_object(std::string& out, boost::json::object const& obj, form f) {
    if (f == form::in_order) return write_members_in_order(out, obj);
    std::vector<boost::json::key_value_pair const*> members;
    members.reserve(obj.size());
    // UTF-8 byte order is code point order, which is UTF-16 order unless a name holds a
    // character from U+E000 up (lead byte 0xEE or above): only such names pay for a
    // UTF-16 copy to sort by.
    bool bytes_order = true;
    for (auto const& kv : obj) {
        auto key = kv.key();
        if (!is_valid_utf8(key)) return make_error("not_ijson", "member name is not valid UTF-8");
        for (char ch : key)
            if (static_cast<unsigned char>(ch) >= 0xEE) bytes_order = false;
        members.push_back(&kv);
    }
    using member = boost::json::key_value_pair const*;
    if (bytes_order) {
        // char_traits<char> compares as unsigned char, i.e. by UTF-8 bytes.
        std::sort(members.begin(), members.end(), [](member a, member b) {
            return std::string_view(a->key()) < std::string_view(b->key());
        });
    } else {
        std::vector<std::pair<std::u16string, member>> keyed;
        keyed.reserve(members.size());
        for (auto m : members) keyed.emplace_back(to_utf16(m->key()), m);
        std::sort(keyed.begin(), keyed.end(), [](auto const& a, auto const& b) { return a.first < b.first; });
        for (std::size_t k = 0; k < keyed.size(); ++k) members[k] = keyed[k].second;
    }
    out.push_back('{');
    for (std::size_t k = 0; k < members.size(); ++k) {
        if (k) out.push_back(',');
        if (auto r = write_string(out, members[k]->key()); !r) return r;
        out.push_back(':');
        if (auto r = write(out, members[k]->value(), f); !r) return r;
    }
    out.push_back('}');
    return {};
}

result<void> write(std::string& out, boost::json::value const& v, form f) {
    switch (v.kind()) {
        case boost::json::kind::null: out += "null"; return {};
        case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; return {};
        case boost::json::kind::int64: write_integer(out, v.get_int64(), f); return {};
        case boost::json::kind::uint64: write_integer(out, v.get_uint64(), f); return {};
        case boost::json::kind::double_: {
            double d = v.get_double();
            if (!std::isfinite(d)) return make_error("not_ijson", "NaN and Infinity have no JSON form");
            out += format_es_number(d);
            return {};
        }
        case boost::json::kind::string: return write_string(out, v.get_string());
        case boost::json::kind::array: {
            out.push_back('[');
            bool first = true;
            for (auto const& e : v.get_array()) {
                if (!first) out.push_back(',');
                first = false;
                if (auto r = write(out, e, f); !r) return r;
            }
            out.push_back(']');
            return {};
        }
        case boost::json::kind::object: return write_object(out, v.get_object(), f);
    }
    return make_error("not_ijson", "unknown JSON kind");
}

}  // namespace

result<boost::json::value> parse_ijson(std::string_view text, std::size_t max_depth) {
    return parser(text, max_depth).run();
}

result<std::string> canonical(boost::json::value const& v) {
    std::string out;
    if (auto r = write(out, v, form::canonical); !r) return r.error();
    return out;
}

result<std::string> canonical(boost::json::object const& o) {
    std::string out;
    if (auto r = write_object(out, o, form::canonical); !r) return r.error();
    return out;
}

result<std::string> canonical_exact_integers(boost::json::object const& o) {
    std::string out;
    if (auto r = write_object(out, o, form::canonical_exact_integers); !r) return r.error();
    return out;
}

result<void> append_json(std::string& out, boost::json::value const& v) { return write(out, v, form::in_order); }

result<void> append_json(std::string& out, boost::json::object const& o) { return write_members_in_order(out, o); }

bool nests_deeper_than(boost::json::object const& o, std::size_t limit) noexcept {
    if (limit == 0) return true;
    for (auto const& kv : o)
        if (nests_deeper_than(kv.value(), limit - 1)) return true;
    return false;
}

bool nests_deeper_than(boost::json::value const& v, std::size_t limit) noexcept {
    if (auto const* o = v.if_object()) return nests_deeper_than(*o, limit);
    if (auto const* a = v.if_array()) {
        if (limit == 0) return true;
        for (auto const& e : *a)
            if (nests_deeper_than(e, limit - 1)) return true;
    }
    return false;
}

std::size_t canonical_size_bound(boost::json::value const& v) noexcept {
    // A byte is written as at most six ("\u001f"); numbers take at most 25 characters.
    auto string_bound = [](std::string_view s) { return 6 * s.size() + 2; };
    switch (v.kind()) {
        case boost::json::kind::null: return 4;
        case boost::json::kind::bool_: return 5;
        case boost::json::kind::int64:
        case boost::json::kind::uint64:
        case boost::json::kind::double_: return 25;
        case boost::json::kind::string: return string_bound(v.get_string());
        case boost::json::kind::array: {
            std::size_t n = 2;
            for (auto const& e : v.get_array()) n += canonical_size_bound(e) + 1;
            return n;
        }
        case boost::json::kind::object: {
            std::size_t n = 2;
            for (auto const& kv : v.get_object()) n += string_bound(kv.key()) + 1 + canonical_size_bound(kv.value()) + 1;
            return n;
        }
    }
    return 0;
}

result<std::string> canonicalize(std::string_view text) {
    auto v = parse_ijson(text);
    if (!v) return v.error();
    return canonical(*v);
}

bool is_valid_utf8(std::string_view s) noexcept {
    std::size_t i = 0;
    while (i < s.size())
        if (decode_utf8(s, i) < 0) return false;
    return true;
}

std::string_view json_kind_name(boost::json::value const& v) noexcept {
    switch (v.kind()) {
        case boost::json::kind::null: return "null";
        case boost::json::kind::bool_: return "a boolean";
        case boost::json::kind::int64:
        case boost::json::kind::uint64: return "an integer";
        case boost::json::kind::double_: return "a number";
        case boost::json::kind::string: return "a string";
        case boost::json::kind::array: return "an array";
        case boost::json::kind::object: return "an object";
    }
    return "a value";
}

std::string format_es_number(double d) {
    if (d == 0) return "0";  // both +0 and -0
    // to_chars without a precision gives the shortest digits that round-trip, which is exactly the
    // digit string ECMAScript's Number::toString chooses; only the layout rules differ.
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string_view sci(buf, static_cast<std::size_t>(end - buf));
    std::string out;
    if (sci.front() == '-') {
        out.push_back('-');
        sci.remove_prefix(1);
    }
    auto e_pos = sci.find('e');
    std::string digits;
    for (char c : sci.substr(0, e_pos))
        if (c != '.') digits.push_back(c);
    int exp = 0;
    auto exp_text = sci.substr(e_pos + 1);
    if (exp_text.front() == '+') exp_text.remove_prefix(1);
    std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp);

    int k = static_cast<int>(digits.size());
    int n = exp + 1;  // the decimal point sits after n digits
    if (k <= n && n <= 21) {
        out += digits;
        out.append(static_cast<std::size_t>(n - k), '0');
    } else if (0 < n && n <= 21) {
        out += digits.substr(0, static_cast<std::size_t>(n));
        out.push_back('.');
        out += digits.substr(static_cast<std::size_t>(n));
    } else if (-6 < n && n <= 0) {
        out += "0.";
        out.append(static_cast<std::size_t>(-n), '0');
        out += digits;
    } else {
        out.push_back(digits[0]);
        if (k > 1) {
            out.push_back('.');
            out += digits.substr(1);
        }
        out.push_back('e');
        out.push_back(n - 1 >= 0 ? '+' : '-');
        out += std::to_string(std::abs(n - 1));
    }
    return out;
}

}  // namespace airlock::core
