#include "mcp/protocol/era.hpp"

#include "core/canonical_json.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <stdexcept>

namespace airlock::mcp {

namespace json = boost::json;

namespace {

constexpr std::array<std::string_view, 4> all_versions = {version::modern, version::legacy_latest,
                                                          version::legacy_2025_06_18, version::legacy_2025_03_26};

constexpr std::string_view sentinel_prefix = "=?base64?";
constexpr std::string_view sentinel_suffix = "?=";

// Request ids of the detector's own requests: strings, so they cannot collide with a client's
// integer ids, and unique between probe and initialize so a late probe reply is recognisable.
constexpr std::string_view probe_id = "airlock-era-probe";
constexpr std::string_view initialize_id = "airlock-initialize";

// The largest integer a JavaScript peer can hold exactly; x-mcp-header integers must stay within it.
constexpr std::int64_t max_safe_integer = 9007199254740991;

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

std::string lowercase(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = lower(c);
    return out;
}

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


std::string dotted(std::vector<std::string> const& path) {
    std::string out;
    for (auto const& p : path) out += (out.empty() ? "" : ".") + p;
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
        if (!seen_lower.insert(lowercase(name)).second)
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

json::value const* value_at(json::object const& args, std::vector<std::string> const& path) {
    json::object const* o = &args;
    json::value const* v = nullptr;
    for (std::size_t i = 0; i < path.size(); ++i) {
        v = o->if_contains(path[i]);
        if (!v) return nullptr;
        if (i + 1 < path.size()) {
            if (!v->is_object()) return nullptr;
            o = &v->get_object();
        }
    }
    return v;
}

// The header form of an argument (string as is, integers in decimal, booleans lower-case), before encoding.
core::result<std::optional<std::string>> mirror(json::value const& v, param_header const& p) {
    auto what = [&](std::string why) {
        return core::make_error("invalid_request", "argument " + dotted(p.path) + " cannot be mirrored into " +
                                                       std::string(header::param_prefix) + p.name + ": " + why);
    };
    switch (v.kind()) {
        case json::kind::null: return std::optional<std::string>{};  // null: the header is omitted
        case json::kind::string: return std::optional<std::string>(std::string(v.get_string()));
        case json::kind::bool_: return std::optional<std::string>(v.get_bool() ? "true" : "false");
        case json::kind::int64:
            if (v.get_int64() > max_safe_integer || v.get_int64() < -max_safe_integer)
                return what("integer outside the JavaScript safe range");
            return std::optional<std::string>(std::to_string(v.get_int64()));
        case json::kind::uint64: return what("integer outside the JavaScript safe range");
        case json::kind::double_: {
            double d = v.get_double();
            if (std::floor(d) != d || std::fabs(d) > static_cast<double>(max_safe_integer))
                return what("it is a non-integer number");
            return std::optional<std::string>(std::to_string(static_cast<std::int64_t>(d)));
        }
        default: return what("it is " + std::string(core::json_kind_name(v)) + ", not a string, integer or boolean");
    }
}

// Header vs body comparison for an Mcp-Param value (already decoded). Numbers compare numerically,
// as the spec recommends, so "42.0" matches 42.
bool param_matches(json::value const& body, std::string const& header_value) {
    switch (body.kind()) {
        case json::kind::string: return body.get_string() == header_value;
        case json::kind::bool_: return header_value == (body.get_bool() ? "true" : "false");
        case json::kind::int64:
        case json::kind::uint64:
        case json::kind::double_: {
            // Read exactly, as the body was: Boost.JSON's own parser may land one bit off.
            auto parsed = core::parse_ijson(header_value);
            if (!parsed || !parsed->is_number()) return false;
            auto const& h = *parsed;
            if (h.is_int64() && body.is_int64()) return h.get_int64() == body.get_int64();
            return h.to_number<double>() == body.to_number<double>();
        }
        default: return false;
    }
}

std::string version_list(std::vector<std::string> const& v) {
    std::string out;
    for (auto const& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
}

}  // namespace

// ---------------------------------------------------------------- versions

std::string_view to_string(era e) noexcept { return e == era::modern ? "modern" : "legacy"; }

std::span<std::string_view const> supported_versions() noexcept { return all_versions; }

std::optional<era> era_of(std::string_view v) noexcept {
    if (v == version::modern) return era::modern;
    if (v == version::legacy_latest || v == version::legacy_2025_06_18 || v == version::legacy_2025_03_26) return era::legacy;
    return std::nullopt;
}

std::string_view negotiate_initialize_version(std::string_view requested) noexcept {
    for (auto v : all_versions)
        if (v == requested && era_of(v) == era::legacy) return v;
    return version::legacy_latest;
}

core::result<std::string> accept_initialize_version(std::string_view answered) {
    if (era_of(answered) == era::legacy) return std::string(answered);
    return core::make_error("unsupported_version", "the server answered initialize with protocol version '" +
                                                       std::string(answered) +
                                                       "', which airlock does not speak as a legacy version");
}

error_response unsupported_version_error(std::optional<request_id> id, std::string_view requested) {
    unsupported_version_data data;
    for (auto v : all_versions) data.supported.emplace_back(v);
    data.requested = std::string(requested);
    return make_error_response(std::move(id), rpc_code::unsupported_protocol_version, "Unsupported protocol version",
                               json::value_from(data));
}

// ---------------------------------------------------------------- headers

http_headers::http_headers(std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
    for (auto const& [n, v] : fields) add(n, v);
}

void http_headers::add(std::string_view name, std::string_view value) { fields_.push_back({std::string(name), std::string(value)}); }

std::optional<std::string_view> http_headers::get(std::string_view name) const {
    for (auto const& f : fields_)
        if (iequals(f.name, name)) return std::string_view(f.value);
    return std::nullopt;
}

std::size_t http_headers::count(std::string_view name) const {
    return static_cast<std::size_t>(std::count_if(fields_.begin(), fields_.end(), [&](auto const& f) { return iequals(f.name, name); }));
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

// -------- client side

http_headers legacy_post_headers(legacy_session const& s) {
    http_headers h{{header::accept, header::accept_both}, {header::content_type, "application/json"}};
    if (!s.protocol_version.empty()) h.add(header::protocol_version, s.protocol_version);
    if (s.session_id) h.add(header::session_id, *s.session_id);
    return h;
}

http_headers legacy_delete_headers(legacy_session const& s) {
    http_headers h;
    if (!s.protocol_version.empty()) h.add(header::protocol_version, s.protocol_version);
    if (s.session_id) h.add(header::session_id, *s.session_id);
    return h;
}

core::result<std::optional<std::string>> session_id_from_response(http_headers const& response) {
    if (response.count(header::session_id) > 1)
        return core::make_error("invalid_session_id", "the server sent Mcp-Session-Id more than once");
    auto id = response.get(header::session_id);
    if (!id) return std::optional<std::string>{};
    if (id->empty() || !std::all_of(id->begin(), id->end(), [](char c) {
            auto u = static_cast<unsigned char>(c);
            return u >= 0x21 && u <= 0x7E;
        }))
        return core::make_error("invalid_session_id", "Mcp-Session-Id must be non-empty visible ASCII (0x21-0x7E)");
    return std::optional<std::string>(std::string(*id));
}

namespace {

// The body value Mcp-Name mirrors for this method, or nullptr when the method has none.
std::optional<std::string_view> name_source_field(std::string_view m) {
    if (m == method::tools_call || m == method::prompts_get) return "name";
    if (m == method::resources_read) return "uri";
    return std::nullopt;
}

}  // namespace

core::result<http_headers> modern_post_headers(request const& r, tool const* called) {
    auto meta = parse_request_meta(r.params);
    if (!meta) return core::make_error("invalid_request", meta.error().message);
    if (r.method.empty() || !std::all_of(r.method.begin(), r.method.end(), [](char c) {
            auto u = static_cast<unsigned char>(c);
            return u >= 0x21 && u <= 0x7E;
        }))
        return core::make_error("invalid_request", "method '" + r.method + "' cannot be carried in the Mcp-Method header");
    http_headers h{{header::accept, header::accept_both},
                   {header::content_type, "application/json"},
                   {header::protocol_version, meta->protocol_version},
                   {header::method, r.method}};
    if (auto field = name_source_field(r.method)) {
        auto const* v = r.params->if_contains(*field);
        if (!v || !v->is_string())
            return core::make_error("invalid_request", r.method + " needs params." + std::string(*field) + " as a string");
        h.add(header::name, encode_header_value(v->get_string()));
    }
    if (called && r.method == method::tools_call) {
        auto params = param_headers_of(*called);
        if (!params) return params.error();
        json::object empty;
        json::object const* args = &empty;
        if (auto const* a = r.params->if_contains("arguments"); a && a->is_object()) args = &a->get_object();
        for (auto const& p : *params) {
            auto const* v = value_at(*args, p.path);
            if (!v) continue;  // not in the arguments: the header is omitted
            auto text = mirror(*v, p);
            if (!text) return text.error();
            if (*text) h.add(std::string(header::param_prefix) + p.name, encode_header_value(**text));
        }
    }
    return h;
}

// -------- server side

void throw_exception_from_error(http_rejection const& e, boost::source_location const&) {
    throw std::runtime_error("HTTP " + std::to_string(e.status) + ": " + e.body.error.message);
}

era classify_post(http_headers const& h, message const& body) {
    if (auto const* r = std::get_if<request>(&body); r && r->method == method::initialize) return era::legacy;
    // A version header neither era knows says nothing of the client's era: the body decides, and
    // that era's checks then refuse the version by name.
    if (auto v = h.get(header::protocol_version))
        if (auto e = era_of(*v)) return *e;
    std::optional<json::object> const* params = nullptr;
    if (auto const* r = std::get_if<request>(&body)) params = &r->params;
    if (auto const* n = std::get_if<notification>(&body)) params = &n->params;
    if (params && *params)
        if (auto const* m = (*params)->if_contains("_meta"); m && m->is_object() && m->get_object().contains(meta_key::protocol_version))
            return era::modern;
    return era::legacy;
}

http_checked<void> validate_modern_post(http_headers const& h, message const& body, tool const* called) {
    if (std::holds_alternative<response>(body) || std::holds_alternative<error_response>(body))
        return http_rejection{400, make_error_response(std::nullopt, rpc_code::invalid_request,
                                                       "Invalid request: a client must not send JSON-RPC responses")};
    auto const* req = std::get_if<request>(&body);
    auto const* note = std::get_if<notification>(&body);
    std::optional<request_id> id = req ? std::optional<request_id>(req->id) : std::nullopt;
    std::string const& m = req ? req->method : note->method;
    std::optional<json::object> const& params = req ? req->params : note->params;

    auto reject = [&](std::int64_t code, std::string msg) {
        return http_rejection{400, make_error_response(id, code, std::move(msg))};
    };
    auto mismatch = [&](std::string msg) { return reject(rpc_code::header_mismatch, "Header mismatch: " + std::move(msg)); };

    // A field given twice could be read one way by a proxy and another by us: refuse it outright.
    for (auto name : {header::protocol_version, header::method, header::name})
        if (h.count(name) > 1) return mismatch(std::string(name) + " header appears more than once");

    auto pv = h.get(header::protocol_version);
    auto mm = h.get(header::method);

    if (note) {
        // No header is required on notifications in 2026-07-28; those present must still agree.
        if (mm && *mm != m)
            return mismatch("Mcp-Method header value '" + std::string(*mm) + "' does not match body value '" + m + "'");
        if (pv && params)
            if (auto const* meta = params->if_contains("_meta"); meta && meta->is_object())
                if (auto const* v = meta->get_object().if_contains(meta_key::protocol_version);
                    v && v->is_string() && v->get_string() != *pv)
                    return mismatch("MCP-Protocol-Version header value '" + std::string(*pv) +
                                    "' does not match body value '" + std::string(v->get_string()) + "'");
        return {};
    }

    if (!pv) return mismatch("required header MCP-Protocol-Version is missing");
    auto meta = parse_request_meta(params);
    if (!meta) return reject(rpc_code::invalid_params, "Invalid params: " + meta.error().message);
    if (*pv != meta->protocol_version)
        return mismatch("MCP-Protocol-Version header value '" + std::string(*pv) + "' does not match body value '" +
                        meta->protocol_version + "'");
    if (era_of(meta->protocol_version) != era::modern) return http_rejection{400, unsupported_version_error(id, meta->protocol_version)};

    if (!mm) return mismatch("required header Mcp-Method is missing");
    if (*mm != m) return mismatch("Mcp-Method header value '" + std::string(*mm) + "' does not match body value '" + m + "'");

    if (auto field = name_source_field(m)) {
        auto const* v = params->if_contains(*field);
        if (!v || !v->is_string())
            return reject(rpc_code::invalid_params, "Invalid params: " + m + " needs params." + std::string(*field) + " as a string");
        auto hn = h.get(header::name);
        if (!hn) return mismatch("required header Mcp-Name is missing for " + m);
        auto decoded = decode_header_value(*hn);
        if (!decoded) return mismatch("Mcp-Name " + decoded.error().message);
        if (*decoded != v->get_string())
            return mismatch("Mcp-Name header value '" + *decoded + "' does not match body value '" + std::string(v->get_string()) + "'");
    }

    if (called && m == method::tools_call) {
        json::object empty;
        json::object const* args = &empty;
        if (auto const* a = params->if_contains("arguments"); a && a->is_object()) args = &a->get_object();
        return validate_param_headers(h, id, *args, *called);
    }
    return {};
}

http_checked<void> validate_param_headers(http_headers const& h, std::optional<request_id> id, json::object const& args,
                                          tool const& called) {
    auto mismatch = [&](std::string msg) {
        return http_rejection{400, make_error_response(id, rpc_code::header_mismatch, "Header mismatch: " + std::move(msg))};
    };
    // A tool whose annotations are invalid is never offered, so there is nothing to compare.
    auto declared = param_headers_of(called);
    if (!declared) return {};
    for (auto const& p : *declared) {
        auto hname = std::string(header::param_prefix) + p.name;
        if (h.count(hname) > 1) return mismatch(hname + " header appears more than once");
        auto hv = h.get(hname);
        auto const* v = value_at(args, p.path);
        bool in_body = v && !v->is_null();
        if (!in_body) {
            // The header would claim a value the body does not have: whoever routed on it was misled.
            if (hv) return mismatch(hname + " header is present but arguments." + dotted(p.path) + " is absent");
            continue;
        }
        if (!hv) return mismatch("required header " + hname + " is missing (arguments." + dotted(p.path) + " is set)");
        auto decoded = decode_header_value(*hv);
        if (!decoded) return mismatch(hname + " " + decoded.error().message);
        if (!param_matches(*v, *decoded))
            return mismatch(hname + " header value '" + *decoded + "' does not match body value " + json::serialize(*v));
    }
    return {};
}

http_checked<std::string> validate_legacy_post(http_headers const& h, message const& body, bool sessions_required,
                                               std::function<std::optional<std::string>(std::string_view)> const& find_session) {
    std::optional<request_id> id;
    if (auto const* r = std::get_if<request>(&body)) id = r->id;
    auto reject = [&](unsigned status, std::string msg) {
        return http_rejection{status, make_error_response(id, rpc_code::invalid_request, "Invalid request: " + std::move(msg))};
    };
    for (auto name : {header::protocol_version, header::session_id})
        if (h.count(name) > 1) return reject(400, std::string(name) + " header appears more than once");

    if (auto const* r = std::get_if<request>(&body); r && r->method == method::initialize) {
        std::string requested;
        if (r->params)
            if (auto const* v = r->params->if_contains("protocolVersion"); v && v->is_string()) requested = std::string(v->get_string());
        return std::string(negotiate_initialize_version(requested));
    }

    std::optional<std::string> negotiated;
    if (auto sid = h.get(header::session_id); sid && find_session) {
        negotiated = find_session(*sid);
        // 404 is the spec's signal that tells a client to start a new session with initialize.
        if (!negotiated) return reject(404, "session not found; send initialize to start a new one");
    } else if (sessions_required) {
        return reject(400, "Mcp-Session-Id header is required; send initialize first");
    }

    if (auto pv = h.get(header::protocol_version)) {
        if (era_of(*pv) != era::legacy) {
            std::string listed;
            for (auto v : all_versions)
                if (era_of(v) == era::legacy) listed += (listed.empty() ? "" : ", ") + std::string(v);
            return reject(400, "unsupported MCP-Protocol-Version '" + std::string(*pv) + "' (supported: " + listed + ")");
        }
        return std::string(*pv);
    }
    if (negotiated && !negotiated->empty()) return std::move(*negotiated);
    return std::string(version::legacy_2025_03_26);
}

unsigned http_status_for(era e, std::int64_t code) noexcept {
    if (code == rpc_code::parse_error || code == rpc_code::invalid_request) return 400;
    if (e == era::legacy) return 200;
    if (code == rpc_code::header_mismatch || code == rpc_code::missing_required_client_capability ||
        code == rpc_code::unsupported_protocol_version)
        return 400;
    if (code == rpc_code::method_not_found) return 404;
    return 200;
}

body_kind classify_content_type(std::string_view ct) noexcept {
    auto semi = ct.find(';');
    auto type = ct.substr(0, semi);
    while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
    while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
    if (iequals(type, "application/json")) return body_kind::json;
    if (iequals(type, "text/event-stream")) return body_kind::event_stream;
    return body_kind::other;
}

bool is_modern_error(std::int64_t code, std::optional<unsigned> http_status) noexcept {
    if (code == rpc_code::header_mismatch || code == rpc_code::missing_required_client_capability ||
        code == rpc_code::unsupported_protocol_version)
        return true;
    return code == rpc_code::method_not_found && http_status == 404u;
}

// ---------------------------------------------------------------- era detection

era_detector::era_detector(options o) : opts_(std::move(o)) {}

era_detector::step era_detector::fail(std::string why) {
    state_ = state::finished;
    step s;
    s.kind = step_kind::failed;
    s.reason = std::move(why);
    return s;
}

era_detector::step era_detector::decide_modern(std::string v, std::string why, std::optional<discover_result> d) {
    state_ = state::finished;
    step s;
    s.kind = step_kind::done;
    s.decided_era = era::modern;
    s.version = std::move(v);
    s.discovered = std::move(d);
    s.reason = std::move(why);
    return s;
}

era_detector::step era_detector::send_initialize(std::string legacy_version, std::string why) {
    state_ = state::initializing;
    fallback_reason_ = std::move(why);
    initialize_params p{legacy_version, opts_.client_capabilities, opts_.client_info, std::nullopt};
    step s;
    s.kind = step_kind::send;
    s.request = mcp::request{std::string(initialize_id), std::string(method::initialize), json::value_from(p).as_object()};
    s.decided_era = era::legacy;
    s.version = std::move(legacy_version);
    s.reason = fallback_reason_;
    return s;
}

era_detector::step era_detector::choose_from(std::vector<std::string> const& offered, std::string const& context,
                                             std::optional<discover_result> d) {
    for (auto const& v : opts_.versions) {
        if (std::find(offered.begin(), offered.end(), v) == offered.end()) continue;
        auto e = era_of(v);
        if (e == era::modern) return decide_modern(v, context + " " + version_list(offered) + "; using " + v, std::move(d));
        if (e == era::legacy) return send_initialize(v, context + " only legacy versions in common; initializing with " + v);
    }
    return fail(context + " " + version_list(offered) + ", and airlock speaks " + version_list(opts_.versions) +
                ": no version in common");
}

era_detector::step era_detector::start() {
    std::string modern, legacy;
    for (auto const& v : opts_.versions) {
        if (modern.empty() && era_of(v) == era::modern) modern = v;
        if (legacy.empty() && era_of(v) == era::legacy) legacy = v;
    }
    if (modern.empty()) {
        if (legacy.empty()) return fail("no protocol version airlock speaks is configured");
        return send_initialize(legacy, "configured for legacy versions only");
    }
    state_ = state::probing;
    request_meta meta{modern, opts_.client_capabilities, opts_.client_info, std::nullopt, std::nullopt};
    json::object params;
    set_request_meta(params, meta);
    step s;
    s.kind = step_kind::send;
    s.request = mcp::request{std::string(probe_id), std::string(method::server_discover), std::move(params)};
    s.decided_era = era::modern;
    s.version = modern;
    s.reason = "probing with server/discover";
    return s;
}

era_detector::step era_detector::on_reply(probe_reply const& reply) {
    auto legacy_fallback = [&](std::string why) {
        for (auto const& v : opts_.versions)
            if (era_of(v) == era::legacy) return send_initialize(v, std::move(why) + ": treating the server as legacy");
        return fail(std::move(why) + ": the server looks legacy, and airlock is configured for modern versions only");
    };
    auto status_text = [&] { return reply.http_status ? "HTTP " + std::to_string(*reply.http_status) + " " : std::string(); };

    if (state_ == state::probing) {
        if (!reply.body) return legacy_fallback(status_text() + "reply to server/discover is not a JSON-RPC message");
        auto const& body = *reply.body;
        if (auto const* r = std::get_if<response>(&body)) {
            if (r->id != request_id(std::string(probe_id))) return step{};
            auto d = parse_discover_result(json::value(r->result));
            if (!d) return legacy_fallback("the reply to server/discover is not a DiscoverResult (" + d.error().message + ")");
            auto offered = d->supported_versions;
            return choose_from(offered, "server/discover lists", std::move(*d));
        }
        if (auto const* e = std::get_if<error_response>(&body)) {
            if (e->id && *e->id != request_id(std::string(probe_id))) return step{};
            auto code = e->error.code;
            if (code == rpc_code::unsupported_protocol_version) {
                auto data = e->error.data ? parse_unsupported_version_data(*e->error.data)
                                          : core::result<unsupported_version_data>(core::make_error("missing", "no data"));
                if (!data)
                    return fail("the server is modern (UnsupportedProtocolVersion) but did not list the versions it supports");
                return choose_from(data->supported, "the server refused our version (UnsupportedProtocolVersion); it supports",
                                   std::nullopt);
            }
            if (is_modern_error(code, reply.http_status)) {
                std::string preferred;
                for (auto const& v : opts_.versions)
                    if (era_of(v) == era::modern) {
                        preferred = v;
                        break;
                    }
                return decide_modern(preferred, "the server answered the probe with the modern error " +
                                                    std::string(rpc_code_name(code)) + " (" + e->error.message + ")");
            }
            // The spec forbids keying the fallback on one code: legacy servers answer unknown
            // pre-initialize methods with whatever they like (-32601, -32602, -32000, ...).
            return legacy_fallback(status_text() + "server/discover failed with code " + std::to_string(code) + " (" +
                                   e->error.message + ")");
        }
        return step{};  // a notification or request before the reply (e.g. a log line): keep waiting
    }

    if (state_ == state::initializing) {
        if (!reply.body) return fail(status_text() + "reply to initialize is not a JSON-RPC message");
        auto const& body = *reply.body;
        if (auto const* r = std::get_if<response>(&body)) {
            if (r->id != request_id(std::string(initialize_id))) return step{};
            auto ir = parse_initialize_result(json::value(r->result));
            if (!ir) return fail(ir.error().message);
            auto v = accept_initialize_version(ir->protocol_version);
            if (!v) return fail(v.error().message);
            state_ = state::finished;
            step s;
            s.kind = step_kind::done;
            s.decided_era = era::legacy;
            s.version = std::move(*v);
            s.notification = mcp::notification{std::string(method::initialized), std::nullopt};
            s.initialized = std::move(*ir);
            s.reason = fallback_reason_ + "; initialize agreed on " + s.version;
            return s;
        }
        if (auto const* e = std::get_if<error_response>(&body)) {
            if (e->id && *e->id != request_id(std::string(initialize_id))) return step{};
            // A modern-only server names its versions in this message; it may be all the user gets.
            return fail("the server refused initialize (" + std::to_string(e->error.code) + ": " + e->error.message + ")");
        }
        return step{};
    }
    return step{};
}

era_detector::step era_detector::on_timeout() {
    if (state_ == state::probing) {
        if (opts_.transport == transport_kind::stdio) {
            // On stdio a legacy server may simply ignore a method it does not know before initialize.
            for (auto const& v : opts_.versions)
                if (era_of(v) == era::legacy) return send_initialize(v, "no reply to server/discover in time: treating the server as legacy");
            return fail("no reply to server/discover in time, and airlock is configured for modern versions only");
        }
        return fail("no reply to server/discover in time");
    }
    if (state_ == state::initializing) return fail("no reply to initialize in time");
    return step{};
}

}  // namespace airlock::mcp
