#include "mcp/protocol/http_headers.hpp"

#include "core/ascii.hpp"
#include "core/canonical_json.hpp"

#include <boost/json/value.hpp>

#include <algorithm>
#include <cstdint>
#include <set>

namespace airlock::mcp {

namespace json = boost::json;

namespace {

constexpr std::string_view sentinel_prefix = "=?base64?";
constexpr std::string_view sentinel_suffix = "?=";

// RFC 9110 field-value characters as the MCP spec states them: VCHAR, SP and HTAB. obs-text
// (0x80-0xFF) is left out on purpose: non-ASCII must travel base64-encoded.
bool field_value_chars(std::string_view v) {
    return std::all_of(v.begin(), v.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return u == '\t' || (u >= 0x20 && u <= 0x7E);
    });
}

// RFC 9110 tchar: the characters of a token such as a header field name.
bool tchar(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool looks_like_sentinel(std::string_view v) {
    return v.size() >= sentinel_prefix.size() + sentinel_suffix.size() && v.starts_with(sentinel_prefix) &&
           v.ends_with(sentinel_suffix);
}

constexpr std::string_view b64_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view in) {
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= in.size(); i += 3) {
        std::uint32_t n = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                          static_cast<unsigned char>(in[i + 2]);
        out += b64_alphabet[(n >> 18) & 63];
        out += b64_alphabet[(n >> 12) & 63];
        out += b64_alphabet[(n >> 6) & 63];
        out += b64_alphabet[n & 63];
    }
    if (auto rest = in.size() - i; rest > 0) {
        std::uint32_t n = static_cast<unsigned char>(in[i]) << 16;
        if (rest == 2) n |= static_cast<unsigned char>(in[i + 1]) << 8;
        out += b64_alphabet[(n >> 18) & 63];
        out += b64_alphabet[(n >> 12) & 63];
        out += rest == 2 ? b64_alphabet[(n >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// Standard alphabet with its padding, as RFC 4648 writes it: SEP-2243's test cases require a value
// with missing or misplaced padding to be refused, not guessed at.
std::optional<std::string> base64_decode(std::string_view in) {
    if (in.size() % 4 != 0) return std::nullopt;
    for (int pad = 0; pad < 2 && !in.empty() && in.back() == '='; ++pad) in.remove_suffix(1);
    std::string out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (char c : in) {
        auto pos = b64_alphabet.find(c);
        if (pos == std::string_view::npos) return std::nullopt;
        acc = (acc << 6) | static_cast<std::uint32_t>(pos);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xFF);
        }
    }
    return out;
}

// ---- x-mcp-header discovery: a walk over the schema that knows which keywords hold subschemas,
// so a property *named* "x-mcp-header", or the word inside an "enum" or "default", is not mistaken
// for an annotation.

struct param_walk {
    std::string tool;
    std::vector<param_header> found;
    std::set<std::string> seen_lower;
    std::optional<core::error> problem;

    void fail(std::string const& where, std::string const& why) {
        if (!problem)
            problem = core::make_error("invalid_x_mcp_header", "tool '" + tool + "': x-mcp-header at " + where + " " + why);
    }

    void annotation(json::object const& schema, json::value const& v, std::vector<std::string> const& path,
                    std::string const& where, bool reachable) {
        if (!reachable || path.empty())
            return fail(where, "is not on a property reachable from the schema root through `properties` alone");
        if (!v.is_string()) return fail(where, "must be a string, not " + std::string(core::json_kind_name(v)));
        auto name = std::string(v.get_string());
        if (name.empty()) return fail(where, "is empty");
        if (!std::all_of(name.begin(), name.end(), tchar))
            return fail(where, "'" + name + "' is not an HTTP token (RFC 9110 tchar only)");
        if (!seen_lower.insert(core::ascii_lowercase(name)).second)
            return fail(where, "'" + name + "' is used twice (names are compared case-insensitively)");
        auto const* type = schema.if_contains("type");
        if (!type || !type->is_string() ||
            (type->get_string() != "string" && type->get_string() != "integer" && type->get_string() != "boolean"))
            return fail(where, "'" + name + "' is on a property whose type is not string, integer or boolean");
        found.push_back(param_header{name, path, std::string(type->get_string())});
    }

    void schema(json::value const& v, std::vector<std::string>& path, std::string const& where, bool reachable) {
        if (!v.is_object()) return;  // boolean schemas and malformed parts hold no annotations
        auto const& o = v.get_object();
        for (auto const& [key, sub] : o) {
            std::string at = where + "/" + std::string(key);
            if (key == "x-mcp-header") {
                annotation(o, sub, path, where, reachable);
            } else if (key == "properties") {
                if (!sub.is_object()) continue;
                for (auto const& [pname, psub] : sub.get_object()) {
                    path.emplace_back(pname);
                    schema(psub, path, at + "/" + std::string(pname), reachable);
                    path.pop_back();
                }
            } else if (key == "patternProperties" || key == "$defs" || key == "definitions" || key == "dependentSchemas") {
                if (!sub.is_object()) continue;
                for (auto const& [pname, psub] : sub.get_object()) schema(psub, path, at + "/" + std::string(pname), false);
            } else if (key == "items" || key == "prefixItems" || key == "additionalItems" || key == "additionalProperties" ||
                       key == "unevaluatedItems" || key == "unevaluatedProperties" || key == "contains" ||
                       key == "propertyNames" || key == "not" || key == "if" || key == "then" || key == "else" ||
                       key == "allOf" || key == "anyOf" || key == "oneOf") {
                if (sub.is_array()) {
                    std::size_t i = 0;
                    for (auto const& e : sub.get_array()) schema(e, path, at + "/" + std::to_string(i++), false);
                } else {
                    schema(sub, path, at, false);
                }
            }
            // Other keywords hold data (enum, const, default, examples) or plain values: not schemas.
        }
    }
};

}  // namespace

http_headers::http_headers(std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
    for (auto const& [n, v] : fields) add(n, v);
}

void http_headers::add(std::string_view name, std::string_view value) { fields_.push_back({std::string(name), std::string(value)}); }

std::optional<std::string_view> http_headers::get(std::string_view name) const {
    for (auto const& f : fields_)
        if (core::iequals(f.name, name)) return std::string_view(f.value);
    return std::nullopt;
}

std::size_t http_headers::count(std::string_view name) const {
    return static_cast<std::size_t>(std::count_if(fields_.begin(), fields_.end(), [&](auto const& f) { return core::iequals(f.name, name); }));
}

std::string encode_header_value(std::string_view v) {
    bool plain = !v.empty() && field_value_chars(v) && v.front() != ' ' && v.front() != '\t' && v.back() != ' ' &&
                 v.back() != '\t' && !looks_like_sentinel(v);
    // An empty value is encoded too: some HTTP stacks drop empty fields, which would turn
    // "present but empty" into "absent" and fail the server's header/body comparison.
    if (plain) return std::string(v);
    return std::string(sentinel_prefix) + base64_encode(v) + std::string(sentinel_suffix);
}

core::result<std::string> decode_header_value(std::string_view v) {
    if (!field_value_chars(v))
        return core::make_error("invalid_header_value", "header value holds a character outside visible ASCII, space and tab");
    if (!looks_like_sentinel(v)) return std::string(v);
    auto inner = v.substr(sentinel_prefix.size(), v.size() - sentinel_prefix.size() - sentinel_suffix.size());
    auto decoded = base64_decode(inner);
    if (!decoded) return core::make_error("invalid_header_value", "header value '" + std::string(v) + "' is not valid base64 inside =?base64?...?=");
    return std::move(*decoded);
}

core::result<std::vector<param_header>> param_headers_of(tool const& t) {
    param_walk w;
    w.tool = t.name;
    std::vector<std::string> path;
    w.schema(json::value(t.input_schema), path, "inputSchema", true);
    if (w.problem) return *w.problem;
    return std::move(w.found);
}

body_kind classify_content_type(std::string_view ct) noexcept {
    auto semi = ct.find(';');
    auto type = ct.substr(0, semi);
    while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
    while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
    if (core::iequals(type, "application/json")) return body_kind::json;
    if (core::iequals(type, "text/event-stream")) return body_kind::event_stream;
    return body_kind::other;
}

}  // namespace airlock::mcp
