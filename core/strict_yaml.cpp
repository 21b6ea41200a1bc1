#include "core/strict_yaml.hpp"

#include "core/canonical_json.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

// yaml-cpp hands back text and leaves typing to the reader, and its own as<bool>() takes YAML 1.1's
// yes/no/on/off. A security manifest or a gateway's configuration should mean the same thing to
// every tool that reads it, so plain scalars are resolved by the YAML 1.2 core schema (what most
// current parsers do), and a value of the wrong type is refused rather than coerced:
// `version: 1.10` is the number 1.1 to a YAML 1.2 reader, and `mutates: no` is the string "no".

namespace airlock::core::yaml {

bool all_digits(std::string_view s, int base) noexcept {
    if (s.empty()) return false;
    return std::all_of(s.begin(), s.end(), [base](char c) {
        if (base == 8) return c >= '0' && c <= '7';
        if (base == 16) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        return c >= '0' && c <= '9';
    });
}

bool is_core_int(std::string_view s) noexcept {
    if (s.starts_with("0o")) return all_digits(s.substr(2), 8);
    if (s.starts_with("0x")) return all_digits(s.substr(2), 16);
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
    return all_digits(s, 10);
}

bool is_core_float(std::string_view s) noexcept {
    if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
    if (s == ".inf" || s == ".Inf" || s == ".INF") return true;
    std::size_t i = 0;
    auto digits = [&] {
        std::size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
        return i - start;
    };
    std::size_t whole = digits();
    std::size_t fraction = 0;
    if (i < s.size() && s[i] == '.') {
        ++i;
        fraction = digits();
    }
    if (whole == 0 && fraction == 0) return false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
        if (digits() == 0) return false;
    }
    return i == s.size();
}

scalar_kind classify(YAML::Node const& n) {
    if (n.IsNull()) return scalar_kind::null_;
    auto const& tag = n.Tag();
    // "!" marks a quoted or block scalar: always a string.
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return scalar_kind::string;
    if (tag != "?") return scalar_kind::other_tag;
    auto const& s = n.Scalar();
    if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return scalar_kind::null_;
    if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE")
        return scalar_kind::boolean;
    if (is_core_int(s)) return scalar_kind::integer;
    if (is_core_float(s)) return scalar_kind::floating;
    return scalar_kind::string;
}

std::string in_quotes(std::string_view s) { return boost::json::serialize(boost::json::string(s)); }

std::optional<std::string> nul_byte(std::string_view text) {
    auto at = text.find('\0');
    if (at == std::string_view::npos) return std::nullopt;
    return "a NUL byte at byte " + std::to_string(at) + ", which YAML does not allow";
}

namespace {

// Counts documents, and whether the one being read so far is only an empty node.
class document_counter final : public YAML::EventHandler {
public:
    bool empty = true;

    void OnDocumentStart(YAML::Mark const&) override { empty = true; }
    void OnDocumentEnd() override {}
    void OnNull(YAML::Mark const&, YAML::anchor_t) override {}
    void OnAlias(YAML::Mark const&, YAML::anchor_t) override { empty = false; }
    void OnScalar(YAML::Mark const&, std::string const&, YAML::anchor_t, std::string const&) override { empty = false; }
    void OnSequenceStart(YAML::Mark const&, std::string const&, YAML::anchor_t, YAML::EmitterStyle::value) override {
        empty = false;
    }
    void OnSequenceEnd() override {}
    void OnMapStart(YAML::Mark const&, std::string const&, YAML::anchor_t, YAML::EmitterStyle::value) override {
        empty = false;
    }
    void OnMapEnd() override {}
};

}  // namespace

documents read_documents(std::string const& text, std::size_t most) {
    documents d;
    {
        std::istringstream in(text);
        YAML::Parser parser(in);
        document_counter counter;
        // yaml-cpp 0.7 can report an empty document without consuming a token, and then reports it
        // again forever (yaml-cpp issue 1040): the first empty document ends the count.
        while (d.count <= most && parser.HandleNextDocument(counter)) {
            ++d.count;
            if (counter.empty) break;
        }
    }
    if (d.count > 0) d.first = YAML::Load(text);
    return d;
}

bool is_blank(std::string_view s) noexcept {
    return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

std::string shape(YAML::Node const& n) {
    if (n.IsMap()) return "a mapping";
    if (n.IsSequence()) return "a sequence";
    switch (classify(n)) {
        case scalar_kind::null_: return "null";
        case scalar_kind::boolean: return "a boolean";
        case scalar_kind::integer: return "an integer";
        case scalar_kind::floating: return "a number";
        case scalar_kind::string: return "a string";
        case scalar_kind::other_tag: return "a value tagged " + n.Tag();
    }
    return "an unsupported value";
}

std::string describe(YAML::Node const& n) {
    if (!n.IsScalar()) return shape(n);
    auto kind = classify(n);
    if (kind == scalar_kind::null_ || kind == scalar_kind::other_tag) return shape(n);
    auto const& s = n.Scalar();
    if (kind != scalar_kind::string) return shape(n) + " (" + s + ")";
    // Enough to recognise the value; a whole paragraph of role text would bury the point.
    if (s.size() <= 40) return "a string (" + in_quotes(s) + ")";
    std::size_t cut = 40;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole characters only
    return "a string (" + in_quotes(s.substr(0, cut)) + "...)";
}

std::string child_path(std::string const& parent, std::string_view key) {
    bool simple = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
    if (!simple) return parent + "[" + in_quotes(key) + "]";
    return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string index_path(std::string const& parent, std::size_t i) { return parent + "[" + std::to_string(i) + "]"; }

// ── reader ────────────────────────────────────────────────────────────────────────────────────

void reader::fail(std::string code, std::string message) {
    problems.push_back(make_error(std::move(code), std::move(message)));
}

std::string reader::what(std::string const& path) const {
    return path.empty() ? std::string(rules_.document) : path;
}

bool reader::key_ok(YAML::Node const& key, std::string const& path, std::set<std::string>& seen) {
    // A null key (`~: x`) is never a scalar: yaml-cpp reads a plain null as a null node.
    if (!key.IsScalar() || classify(key) == scalar_kind::other_tag) {
        fail("wrong_type", "a key in " + what(path) + " is " + describe(key) + "; keys must be strings");
        return false;
    }
    auto const& name = key.Scalar();
    // yaml-cpp keeps both entries of a repeated key and a lookup sees the first; another reader may
    // take the last. A document two readers understand differently is refused.
    if (!seen.insert(name).second) {
        fail("duplicate_key", child_path(path, name) + " is written twice");
        return false;
    }
    return true;
}

bool reader::mapping(YAML::Node const& n, std::string const& path, std::initializer_list<std::string_view> known) {
    if (!n.IsMap()) {
        fail("wrong_type", what(path) + " must be a mapping, not " + describe(n));
        return false;
    }
    std::set<std::string> seen;
    for (auto const& kv : n) {
        if (!key_ok(kv.first, path, seen)) continue;
        auto const& name = kv.first.Scalar();
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            std::string list;
            for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
            fail("unknown_key", child_path(path, name) + " is not a known field (expected one of: " + list + ")");
        }
    }
    return true;
}

bool reader::sequence(YAML::Node const& n, std::string const& path) {
    if (n.IsSequence()) return true;
    fail("wrong_type", path + " must be a sequence, not " + describe(n));
    return false;
}

std::optional<std::string> reader::string(YAML::Node const& n, std::string const& path) {
    if (!n.IsScalar() || classify(n) != scalar_kind::string) {
        auto kind = n.IsScalar() ? classify(n) : scalar_kind::other_tag;
        bool quotable = kind == scalar_kind::boolean || kind == scalar_kind::integer || kind == scalar_kind::floating;
        fail("wrong_type",
             path + " must be a string, not " + describe(n) + (quotable ? " (quote it to make it text)" : ""));
        return std::nullopt;
    }
    if (rules_.utf8_strings && !is_valid_utf8(n.Scalar())) {
        fail("not_utf8", path + " is not valid UTF-8");
        return std::nullopt;
    }
    return n.Scalar();
}

std::optional<std::string> reader::text(YAML::Node const& n, std::string const& path) {
    auto s = string(n, path);
    if (s && is_blank(*s)) {
        fail("empty_field", path + " is empty");
        return std::nullopt;
    }
    return s;
}

std::optional<bool> reader::boolean(YAML::Node const& n, std::string const& path) {
    if (!n.IsScalar() || classify(n) != scalar_kind::boolean) {
        fail("wrong_type", path + " must be true or false, not " + describe(n));
        return std::nullopt;
    }
    auto const& s = n.Scalar();
    return s == "true" || s == "True" || s == "TRUE";
}

std::optional<boost::json::value> reader::integer_json(std::string_view s, std::string const& path) {
    int base = 10;
    bool negative = false;
    if (s.starts_with("0o")) { base = 8; s.remove_prefix(2); }
    else if (s.starts_with("0x")) { base = 16; s.remove_prefix(2); }
    else if (s.starts_with('-')) { negative = true; s.remove_prefix(1); }
    else if (s.starts_with('+')) { s.remove_prefix(1); }
    std::uint64_t magnitude = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude, base);
    if (ec == std::errc{} && end == s.data() + s.size()) {
        if (!negative) return boost::json::value(magnitude);
        if (magnitude <= std::uint64_t{1} << 63)
            return boost::json::value(static_cast<std::int64_t>(0 - magnitude));
    }
    fail("invalid_value", path + " is an integer too large for JSON to carry exactly");
    return std::nullopt;
}

std::optional<boost::json::value> reader::json(YAML::Node const& n, std::string const& path, std::size_t& budget) {
    if (budget == 0) {
        fail("too_large", path + " expands to more than " + std::to_string(max_json_nodes) + " values");
        return std::nullopt;
    }
    --budget;
    if (n.IsMap()) {
        boost::json::object out;
        for (auto const& kv : n) {
            if (!kv.first.IsScalar()) {
                fail("wrong_type", "a key in " + path + " is " + describe(kv.first) + "; keys must be strings");
                return std::nullopt;
            }
            auto const& key = kv.first.Scalar();
            auto key_path = child_path(path, key);
            if (!is_valid_utf8(key)) {
                fail("not_utf8", "a key in " + path + " is not valid UTF-8");
                return std::nullopt;
            }
            if (out.contains(key)) {
                fail("duplicate_key", key_path + " is written twice");
                return std::nullopt;
            }
            auto v = json(kv.second, key_path, budget);
            if (!v) return std::nullopt;
            out.emplace(key, std::move(*v));
        }
        return boost::json::value(std::move(out));
    }
    if (n.IsSequence()) {
        boost::json::array out;
        for (std::size_t i = 0; i < n.size(); ++i) {
            auto v = json(n[i], index_path(path, i), budget);
            if (!v) return std::nullopt;
            out.push_back(std::move(*v));
        }
        return boost::json::value(std::move(out));
    }
    switch (classify(n)) {
        case scalar_kind::null_: return boost::json::value(nullptr);
        case scalar_kind::boolean: {
            auto b = boolean(n, path);
            if (!b) return std::nullopt;
            return boost::json::value(*b);
        }
        case scalar_kind::string: {
            auto s = string(n, path);
            if (!s) return std::nullopt;
            return boost::json::value(*s);
        }
        case scalar_kind::integer: return integer_json(n.Scalar(), path);
        case scalar_kind::floating: {
            std::string_view s = n.Scalar();
            double d = std::strtod(std::string(s).c_str(), nullptr);
            if (!std::isfinite(d)) {
                fail("invalid_value", path + " is " + n.Scalar() + ", which JSON cannot hold");
                return std::nullopt;
            }
            return boost::json::value(d);
        }
        case scalar_kind::other_tag: break;
    }
    fail("wrong_type", path + " is " + describe(n) + "; explicit YAML tags other than !!str are not supported");
    return std::nullopt;
}

}  // namespace airlock::core::yaml
