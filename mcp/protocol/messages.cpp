#include "mcp/protocol/messages.hpp"

#include "core/canonical_json.hpp"

#include <boost/json/value_from.hpp>

#include <cmath>

namespace airlock::mcp {

namespace json = boost::json;

namespace {

constexpr std::string_view code_params = "invalid_params";
constexpr std::string_view code_result = "malformed_result";


using problem = std::optional<core::error>;

// Reads the fields of one JSON object, naming each failure by its path from the message root
// ("tools[3].inputSchema"), so a user can find the offending byte in a server's reply.
class reader {
public:
    reader(json::object const& o, std::string_view context, std::string_view code, std::string path = {})
        : o_(o), context_(context), code_(code), path_(std::move(path)) {}

    // Keys holding dots (the reserved `io.modelcontextprotocol/...` _meta keys) are shown quoted.
    std::string path(std::string_view field) const {
        if (field.find('.') != std::string_view::npos) return path_ + "[\"" + std::string(field) + "\"]";
        return path_.empty() ? std::string(field) : path_ + "." + std::string(field);
    }

    core::error fail(std::string_view field, std::string_view what) const {
        return core::make_error(std::string(code_), std::string(context_) + ": " + path(field) + " " + std::string(what));
    }
    core::error wrong_kind(std::string_view field, std::string_view want, json::value const& got) const {
        return fail(field, "must be " + std::string(want) + ", not " + std::string(core::json_kind_name(got)));
    }

    json::value const* find(std::string_view field) const { return o_.if_contains(field); }

    // A reader for the object at `field`, reporting with the same context and code.
    reader nested(json::object const& o, std::string_view field) const { return reader(o, context_, code_, path(field)); }

    problem string(std::string_view field, std::string& out) const {
        auto const* v = find(field);
        if (!v) return fail(field, "is missing");
        if (!v->is_string()) return wrong_kind(field, "a string", *v);
        out = std::string(v->get_string());
        return std::nullopt;
    }
    problem opt_string(std::string_view field, std::optional<std::string>& out) const {
        auto const* v = find(field);
        if (!v) return std::nullopt;
        if (!v->is_string()) return wrong_kind(field, "a string", *v);
        out = std::string(v->get_string());
        return std::nullopt;
    }
    problem opt_bool(std::string_view field, std::optional<bool>& out) const {
        auto const* v = find(field);
        if (!v) return std::nullopt;
        if (!v->is_bool()) return wrong_kind(field, "a boolean", *v);
        out = v->get_bool();
        return std::nullopt;
    }
    problem object(std::string_view field, json::object& out) const {
        auto const* v = find(field);
        if (!v) return fail(field, "is missing");
        if (!v->is_object()) return wrong_kind(field, "an object", *v);
        out = v->get_object();
        return std::nullopt;
    }
    problem opt_object(std::string_view field, std::optional<json::object>& out) const {
        auto const* v = find(field);
        if (!v) return std::nullopt;
        if (!v->is_object()) return wrong_kind(field, "an object", *v);
        out = v->get_object();
        return std::nullopt;
    }
    problem number(std::string_view field, double& out) const {
        auto const* v = find(field);
        if (!v) return fail(field, "is missing");
        if (!v->is_number()) return wrong_kind(field, "a number", *v);
        out = v->to_number<double>();
        return std::nullopt;
    }
    problem opt_number(std::string_view field, std::optional<double>& out) const {
        auto const* v = find(field);
        if (!v) return std::nullopt;
        if (!v->is_number()) return wrong_kind(field, "a number", *v);
        out = v->to_number<double>();
        return std::nullopt;
    }
    problem opt_id(std::string_view field, std::optional<request_id>& out) const {
        auto const* v = find(field);
        if (!v) return std::nullopt;
        auto id = read_request_id(*v);
        if (!id) return fail(field, "must be a string or an integer, not " + std::string(core::json_kind_name(*v)));
        out = std::move(*id);
        return std::nullopt;
    }
    problem strings(std::string_view field, std::vector<std::string>& out) const {
        auto const* v = find(field);
        if (!v) return fail(field, "is missing");
        if (!v->is_array()) return wrong_kind(field, "an array of strings", *v);
        std::size_t i = 0;
        for (auto const& e : v->get_array()) {
            auto at = std::string(field) + "[" + std::to_string(i++) + "]";
            if (!e.is_string()) return wrong_kind(at, "a string", e);
            out.emplace_back(e.get_string());
        }
        return std::nullopt;
    }
    // `_meta` is an open map; only its shape (an object) is checked here.
    problem meta(std::optional<json::object>& out) const { return opt_object("_meta", out); }

    problem opt_ttl(std::optional<std::int64_t>& out) const {
        auto const* v = find("ttlMs");
        if (!v) return std::nullopt;
        if (!v->is_number()) return wrong_kind("ttlMs", "a number", *v);
        // The spec says to treat a negative TTL as 0 rather than refuse the result.
        if (v->is_int64()) {
            out = std::max<std::int64_t>(0, v->get_int64());
        } else if (v->is_uint64()) {
            out = INT64_MAX;
        } else {
            double d = v->get_double();
            out = d <= 0 ? 0 : (d >= 9.2e18 ? INT64_MAX : static_cast<std::int64_t>(d));
        }
        return std::nullopt;
    }
    problem opt_scope(std::optional<cache_scope>& out) const {
        auto const* v = find("cacheScope");
        if (!v) return std::nullopt;
        if (!v->is_string()) return wrong_kind("cacheScope", "\"public\" or \"private\"", *v);
        out = v->get_string() == "public" ? cache_scope::public_scope : cache_scope::private_scope;
        return std::nullopt;
    }
    // resultType (2026-07-28): absent means "complete" (earlier servers never send it).
    problem result_type(std::optional<std::string>& out) const {
        if (auto p = opt_string("resultType", out)) return p;
        if (!out || *out == "complete") return std::nullopt;
        if (*out == "input_required")
            return core::make_error("input_required", std::string(context_) +
                                                          ": the server asked for more client input (resultType "
                                                          "\"input_required\"), which airlock does not provide");
        return fail("resultType", "\"" + *out + "\" is not a result type airlock recognises");
    }

private:
    json::object const& o_;
    std::string_view context_;
    std::string_view code_;
    std::string path_;
};

core::result<json::object const*> as_object(json::value const& v, std::string_view context, std::string_view code) {
    if (!v.is_object())
        return core::make_error(std::string(code), std::string(context) + " must be an object, not " + std::string(core::json_kind_name(v)));
    return &v.get_object();
}

problem read_implementation(reader const& r, implementation& out) {
    if (auto p = r.string("name", out.name)) return p;
    if (auto p = r.string("version", out.version)) return p;
    if (auto p = r.opt_string("title", out.title)) return p;
    if (auto p = r.opt_string("description", out.description)) return p;
    return std::nullopt;
}

problem read_nested_implementation(reader const& r, std::string_view field, implementation& out) {
    auto const* v = r.find(field);
    if (!v) return r.fail(field, "is missing");
    if (!v->is_object()) return r.wrong_kind(field, "an object", *v);
    return read_implementation(r.nested(v->get_object(), field), out);
}

problem read_annotations(reader const& r, tool_annotations& out) {
    if (auto p = r.opt_string("title", out.title)) return p;
    if (auto p = r.opt_bool("readOnlyHint", out.read_only_hint)) return p;
    if (auto p = r.opt_bool("destructiveHint", out.destructive_hint)) return p;
    if (auto p = r.opt_bool("idempotentHint", out.idempotent_hint)) return p;
    if (auto p = r.opt_bool("openWorldHint", out.open_world_hint)) return p;
    return std::nullopt;
}

problem read_tool(reader const& r, tool& out) {
    if (auto p = r.string("name", out.name)) return p;
    if (auto p = r.opt_string("title", out.title)) return p;
    if (auto p = r.opt_string("description", out.description)) return p;
    if (auto p = r.object("inputSchema", out.input_schema)) return p;
    // Tool arguments are always objects, so the root schema must be an object schema. An absent
    // "type" is tolerated: such a schema still accepts objects, and some servers omit it.
    if (auto const* type = out.input_schema.if_contains("type"); type && !(type->is_string() && type->get_string() == "object"))
        return r.nested(out.input_schema, "inputSchema").fail("type", "must be \"object\"");
    if (auto p = r.opt_object("outputSchema", out.output_schema)) return p;
    if (auto const* a = r.find("annotations")) {
        if (!a->is_object()) return r.wrong_kind("annotations", "an object", *a);
        tool_annotations ann;
        if (auto p = read_annotations(r.nested(a->get_object(), "annotations"), ann)) return p;
        out.annotations = std::move(ann);
    }
    if (auto const* icons = r.find("icons")) {
        if (!icons->is_array()) return r.wrong_kind("icons", "an array", *icons);
        out.icons = icons->get_array();
    }
    if (auto p = r.opt_object("execution", out.execution)) return p;
    if (auto p = r.meta(out.meta)) return p;
    return std::nullopt;
}

json::value number_value(double d) {
    // Boost.JSON writes 50.0 as 5E1; integral values go out as integers so peers and logs read them naturally.
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9007199254740992.0) return static_cast<std::int64_t>(d);
    return d;
}

void put_opt(json::object& o, std::string_view key, std::optional<std::string> const& v) {
    if (v) o[key] = *v;
}
void put_opt(json::object& o, std::string_view key, std::optional<bool> const& v) {
    if (v) o[key] = *v;
}
void put_opt(json::object& o, std::string_view key, std::optional<json::object> const& v) {
    if (v) o[key] = *v;
}

template <class T>
T value_or_throw(core::result<T> r) {
    if (!r) throw core::error_exception(r.error());
    return std::move(*r);
}

}  // namespace

bool may_mutate(tool const& t) noexcept {
    return !(t.annotations && t.annotations->read_only_hint.value_or(false));
}

bool requires_task(tool const& t) noexcept {
    if (!t.execution) return false;
    auto const* s = t.execution->if_contains("taskSupport");
    return s && s->is_string() && s->get_string() == "required";
}

std::string_view to_string(cache_scope s) noexcept { return s == cache_scope::public_scope ? "public" : "private"; }

core::result<implementation> parse_implementation(json::value const& v) {
    constexpr std::string_view ctx = "Implementation";
    auto o = as_object(v, ctx, code_params);
    if (!o) return o.error();
    implementation out;
    if (auto p = read_implementation(reader(**o, ctx, code_params), out)) return *p;
    return out;
}

core::result<initialize_params> parse_initialize_params(json::value const& v) {
    constexpr std::string_view ctx = "initialize params";
    auto o = as_object(v, ctx, code_params);
    if (!o) return o.error();
    reader r(**o, ctx, code_params);
    initialize_params out;
    if (auto p = r.string("protocolVersion", out.protocol_version)) return *p;
    if (auto p = r.object("capabilities", out.capabilities)) return *p;
    if (auto p = read_nested_implementation(r, "clientInfo", out.client_info)) return *p;
    if (auto p = r.meta(out.meta)) return *p;
    return out;
}

core::result<initialize_result> parse_initialize_result(json::value const& v) {
    constexpr std::string_view ctx = "initialize result";
    auto o = as_object(v, ctx, code_result);
    if (!o) return o.error();
    reader r(**o, ctx, code_result);
    initialize_result out;
    if (auto p = r.string("protocolVersion", out.protocol_version)) return *p;
    if (auto p = r.object("capabilities", out.capabilities)) return *p;
    if (auto p = read_nested_implementation(r, "serverInfo", out.server_info)) return *p;
    if (auto p = r.opt_string("instructions", out.instructions)) return *p;
    if (auto p = r.meta(out.meta)) return *p;
    return out;
}

core::result<tool> parse_tool(json::value const& v) {
    constexpr std::string_view ctx = "Tool";
    auto o = as_object(v, ctx, code_result);
    if (!o) return o.error();
    tool out;
    if (auto p = read_tool(reader(**o, ctx, code_result), out)) return *p;
    return out;
}

core::result<list_tools_result> parse_list_tools_result(json::value const& v) {
    constexpr std::string_view ctx = "tools/list result";
    auto o = as_object(v, ctx, code_result);
    if (!o) return o.error();
    reader r(**o, ctx, code_result);
    list_tools_result out;
    if (auto p = r.result_type(out.result_type)) return *p;
    auto const* tools = r.find("tools");
    if (!tools) return r.fail("tools", "is missing");
    if (!tools->is_array()) return r.wrong_kind("tools", "an array", *tools);
    std::size_t i = 0;
    for (auto const& t : tools->get_array()) {
        auto path = "tools[" + std::to_string(i) + "]";
        // One unreadable tool must not hide the others (the spec asks the same of x-mcp-header
        // rejections): it is set aside with its reason and the page is still used.
        tool parsed;
        problem p;
        if (!t.is_object()) p = r.wrong_kind(path, "an object", t);
        else p = read_tool(r.nested(t.get_object(), path), parsed);
        if (p) {
            std::string name;
            if (t.is_object())
                if (auto const* n = t.get_object().if_contains("name"); n && n->is_string()) name = std::string(n->get_string());
            out.rejected.push_back(rejected_tool{i, std::move(name), p->message});
        } else {
            out.tools.push_back(std::move(parsed));
        }
        ++i;
    }
    if (auto p = r.opt_string("nextCursor", out.next_cursor)) return *p;
    if (auto p = r.opt_ttl(out.ttl_ms)) return *p;
    if (auto p = r.opt_scope(out.scope)) return *p;
    if (auto p = r.meta(out.meta)) return *p;
    return out;
}

core::result<call_tool_params> parse_call_tool_params(json::value const& v) {
    constexpr std::string_view ctx = "tools/call params";
    auto o = as_object(v, ctx, code_params);
    if (!o) return o.error();
    reader r(**o, ctx, code_params);
    call_tool_params out;
    if (auto p = r.string("name", out.name)) return *p;
    if (auto p = r.opt_object("arguments", out.arguments)) return *p;
    if (auto p = r.meta(out.meta)) return *p;
    return out;
}

core::result<call_tool_result> parse_call_tool_result(json::value const& v) {
    constexpr std::string_view ctx = "tools/call result";
    auto o = as_object(v, ctx, code_result);
    if (!o) return o.error();
    reader r(**o, ctx, code_result);
    call_tool_result out;
    if (auto p = r.result_type(out.result_type)) return *p;
    auto const* content = r.find("content");
    if (!content) return r.fail("content", "is missing");
    if (!content->is_array()) return r.wrong_kind("content", "an array", *content);
    std::size_t i = 0;
    for (auto const& block : content->get_array()) {
        auto path = "content[" + std::to_string(i++) + "]";
        if (!block.is_object()) return r.wrong_kind(path, "an object", block);
        auto br = r.nested(block.get_object(), path);
        auto const* type = br.find("type");
        if (!type) return br.fail("type", "is missing");
        if (!type->is_string()) return br.wrong_kind("type", "a string", *type);
    }
    out.content = content->get_array();
    if (auto const* sc = r.find("structuredContent")) out.structured_content = *sc;
    if (auto p = r.opt_bool("isError", out.is_error)) return *p;
    if (auto p = r.meta(out.meta)) return *p;
    return out;
}

core::result<progress_params> parse_progress_params(json::value const& v) {
    constexpr std::string_view ctx = "notifications/progress params";
    auto o = as_object(v, ctx, code_params);
    if (!o) return o.error();
    reader r(**o, ctx, code_params);
    progress_params out;
    std::optional<request_id> token;
    if (auto p = r.opt_id("progressToken", token)) return *p;
    if (!token) return r.fail("progressToken", "is missing");
    out.token = std::move(*token);
    if (auto p = r.number("progress", out.progress)) return *p;
    if (auto p = r.opt_number("total", out.total)) return *p;
    if (auto p = r.opt_string("message", out.message)) return *p;
    if (auto p = r.meta(out.meta)) return *p;
    return out;
}

core::result<cancelled_params> parse_cancelled_params(json::value const& v) {
    constexpr std::string_view ctx = "notifications/cancelled params";
    auto o = as_object(v, ctx, code_params);
    if (!o) return o.error();
    reader r(**o, ctx, code_params);
    cancelled_params out;
    if (auto p = r.opt_id("requestId", out.id)) return *p;
    if (auto p = r.opt_string("reason", out.reason)) return *p;
    if (auto p = r.meta(out.meta)) return *p;
    return out;
}

core::result<discover_result> parse_discover_result(json::value const& v) {
    constexpr std::string_view ctx = "server/discover result";
    auto o = as_object(v, ctx, code_result);
    if (!o) return o.error();
    reader r(**o, ctx, code_result);
    discover_result out;
    if (auto p = r.result_type(out.result_type)) return *p;
    if (auto p = r.strings("supportedVersions", out.supported_versions)) return *p;
    if (auto p = r.object("capabilities", out.capabilities)) return *p;
    if (auto p = r.opt_string("instructions", out.instructions)) return *p;
    if (auto p = r.opt_ttl(out.ttl_ms)) return *p;
    if (auto p = r.opt_scope(out.scope)) return *p;
    if (auto p = r.meta(out.meta)) return *p;
    // serverInfo is self-reported and for display only; a malformed one is dropped rather than
    // failing discovery (and with it era detection).
    if (out.meta)
        if (auto const* si = out.meta->if_contains(meta_key::server_info))
            if (auto impl = parse_implementation(*si)) out.server_info = std::move(*impl);
    return out;
}

core::result<unsupported_version_data> parse_unsupported_version_data(json::value const& v) {
    constexpr std::string_view ctx = "UnsupportedProtocolVersion error data";
    auto o = as_object(v, ctx, code_result);
    if (!o) return o.error();
    reader r(**o, ctx, code_result);
    unsupported_version_data out;
    if (auto p = r.strings("supported", out.supported)) return *p;
    // `requested` only echoes what we sent; a server that omits it still told us what it supports.
    std::optional<std::string> requested;
    if (auto p = r.opt_string("requested", requested)) return *p;
    out.requested = requested.value_or("");
    return out;
}

core::result<request_meta> parse_request_meta(std::optional<json::object> const& params) {
    if (!params)
        return core::make_error(std::string(code_params), "request _meta: params is missing; it must carry _meta with " +
                                                              std::string(meta_key::protocol_version) + " and " +
                                                              std::string(meta_key::client_capabilities));
    return parse_request_meta(*params);
}

core::result<request_meta> parse_request_meta(json::object const& params) {
    constexpr std::string_view ctx = "request _meta";
    reader pr(params, ctx, code_params, "params");
    auto const* m = pr.find("_meta");
    if (!m) return pr.fail("_meta", "is missing");
    if (!m->is_object()) return pr.wrong_kind("_meta", "an object", *m);
    reader r(m->get_object(), ctx, code_params, "params._meta");
    request_meta out;
    if (auto p = r.string(meta_key::protocol_version, out.protocol_version)) return *p;
    if (auto p = r.object(meta_key::client_capabilities, out.client_capabilities)) return *p;
    if (auto const* ci = r.find(meta_key::client_info)) {
        if (!ci->is_object()) return r.wrong_kind(meta_key::client_info, "an object", *ci);
        implementation impl;
        if (auto p = read_implementation(r.nested(ci->get_object(), meta_key::client_info), impl)) return *p;
        out.client_info = std::move(impl);
    }
    if (auto p = r.opt_string(meta_key::log_level, out.log_level)) return *p;
    if (auto p = r.opt_id(meta_key::progress_token, out.progress)) return *p;
    return out;
}

void set_request_meta(json::object& params, request_meta const& m) {
    auto& slot = params["_meta"];
    if (!slot.is_object()) slot = json::object();
    auto& meta = slot.get_object();
    meta[meta_key::protocol_version] = m.protocol_version;
    meta[meta_key::client_capabilities] = m.client_capabilities;
    if (m.client_info) meta[meta_key::client_info] = json::value_from(*m.client_info);
    if (m.log_level) meta[meta_key::log_level] = *m.log_level;
    if (m.progress) meta[meta_key::progress_token] = to_json(*m.progress);
}

// ---- value_from ----

void tag_invoke(json::value_from_tag, json::value& jv, implementation const& x) {
    json::object o;
    o["name"] = x.name;
    o["version"] = x.version;
    put_opt(o, "title", x.title);
    put_opt(o, "description", x.description);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, initialize_params const& x) {
    json::object o;
    o["protocolVersion"] = x.protocol_version;
    o["capabilities"] = x.capabilities;
    o["clientInfo"] = json::value_from(x.client_info);
    put_opt(o, "_meta", x.meta);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, initialize_result const& x) {
    json::object o;
    o["protocolVersion"] = x.protocol_version;
    o["capabilities"] = x.capabilities;
    o["serverInfo"] = json::value_from(x.server_info);
    put_opt(o, "instructions", x.instructions);
    put_opt(o, "_meta", x.meta);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, tool_annotations const& x) {
    json::object o;
    put_opt(o, "title", x.title);
    put_opt(o, "readOnlyHint", x.read_only_hint);
    put_opt(o, "destructiveHint", x.destructive_hint);
    put_opt(o, "idempotentHint", x.idempotent_hint);
    put_opt(o, "openWorldHint", x.open_world_hint);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, tool const& x) {
    json::object o;
    o["name"] = x.name;
    put_opt(o, "title", x.title);
    put_opt(o, "description", x.description);
    o["inputSchema"] = x.input_schema;
    put_opt(o, "outputSchema", x.output_schema);
    if (x.annotations) o["annotations"] = json::value_from(*x.annotations);
    if (x.icons) o["icons"] = *x.icons;
    put_opt(o, "execution", x.execution);
    put_opt(o, "_meta", x.meta);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, list_tools_result const& x) {
    json::object o;
    put_opt(o, "resultType", x.result_type);
    json::array tools;
    for (auto const& t : x.tools) tools.push_back(json::value_from(t));
    o["tools"] = std::move(tools);
    put_opt(o, "nextCursor", x.next_cursor);
    if (x.ttl_ms) o["ttlMs"] = *x.ttl_ms;
    if (x.scope) o["cacheScope"] = to_string(*x.scope);
    put_opt(o, "_meta", x.meta);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, call_tool_params const& x) {
    json::object o;
    o["name"] = x.name;
    put_opt(o, "arguments", x.arguments);
    put_opt(o, "_meta", x.meta);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, call_tool_result const& x) {
    json::object o;
    put_opt(o, "resultType", x.result_type);
    o["content"] = x.content;
    if (x.structured_content) o["structuredContent"] = *x.structured_content;
    put_opt(o, "isError", x.is_error);
    put_opt(o, "_meta", x.meta);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, progress_params const& x) {
    json::object o;
    o["progressToken"] = to_json(x.token);
    o["progress"] = number_value(x.progress);
    if (x.total) o["total"] = number_value(*x.total);
    put_opt(o, "message", x.message);
    put_opt(o, "_meta", x.meta);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, cancelled_params const& x) {
    json::object o;
    if (x.id) o["requestId"] = to_json(*x.id);
    put_opt(o, "reason", x.reason);
    put_opt(o, "_meta", x.meta);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, discover_result const& x) {
    json::object o;
    put_opt(o, "resultType", x.result_type);
    json::array versions;
    for (auto const& s : x.supported_versions) versions.emplace_back(s);
    o["supportedVersions"] = std::move(versions);
    o["capabilities"] = x.capabilities;
    put_opt(o, "instructions", x.instructions);
    if (x.ttl_ms) o["ttlMs"] = *x.ttl_ms;
    if (x.scope) o["cacheScope"] = to_string(*x.scope);
    json::object meta = x.meta.value_or(json::object());
    if (x.server_info) meta[meta_key::server_info] = json::value_from(*x.server_info);
    if (!meta.empty()) o["_meta"] = std::move(meta);
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, unsupported_version_data const& x) {
    json::object o;
    json::array supported;
    for (auto const& s : x.supported) supported.emplace_back(s);
    o["supported"] = std::move(supported);
    o["requested"] = x.requested;
    jv = std::move(o);
}

// ---- value_to ----

implementation tag_invoke(json::value_to_tag<implementation>, json::value const& v) { return value_or_throw(parse_implementation(v)); }
initialize_params tag_invoke(json::value_to_tag<initialize_params>, json::value const& v) {
    return value_or_throw(parse_initialize_params(v));
}
initialize_result tag_invoke(json::value_to_tag<initialize_result>, json::value const& v) {
    return value_or_throw(parse_initialize_result(v));
}
tool tag_invoke(json::value_to_tag<tool>, json::value const& v) { return value_or_throw(parse_tool(v)); }
list_tools_result tag_invoke(json::value_to_tag<list_tools_result>, json::value const& v) {
    return value_or_throw(parse_list_tools_result(v));
}
call_tool_params tag_invoke(json::value_to_tag<call_tool_params>, json::value const& v) {
    return value_or_throw(parse_call_tool_params(v));
}
call_tool_result tag_invoke(json::value_to_tag<call_tool_result>, json::value const& v) {
    return value_or_throw(parse_call_tool_result(v));
}
progress_params tag_invoke(json::value_to_tag<progress_params>, json::value const& v) {
    return value_or_throw(parse_progress_params(v));
}
cancelled_params tag_invoke(json::value_to_tag<cancelled_params>, json::value const& v) {
    return value_or_throw(parse_cancelled_params(v));
}
discover_result tag_invoke(json::value_to_tag<discover_result>, json::value const& v) {
    return value_or_throw(parse_discover_result(v));
}

}  // namespace airlock::mcp
