#include "mcp/protocol/post_rules.hpp"

#include "core/canonical_json.hpp"
#include "mcp/protocol/negotiation.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace airlock::mcp {

namespace json = boost::json;

namespace {

// The largest integer a JavaScript peer can hold exactly; x-mcp-header integers must stay within it.
constexpr std::int64_t max_safe_integer = 9007199254740991;

std::string dotted(std::vector<std::string> const& path) {
    std::string out;
    for (auto const& p : path) out += (out.empty() ? "" : ".") + p;
    return out;
}

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

}  // namespace

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
            for (auto v : supported_versions())
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

bool is_modern_error(std::int64_t code, std::optional<unsigned> http_status) noexcept {
    if (code == rpc_code::header_mismatch || code == rpc_code::missing_required_client_capability ||
        code == rpc_code::unsupported_protocol_version)
        return true;
    return code == rpc_code::method_not_found && http_status == 404u;
}

}  // namespace airlock::mcp
