#include "mcp/protocol/jsonrpc.hpp"

#include "core/canonical_json.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

#include <stdexcept>

namespace airlock::mcp {

namespace json = boost::json;

namespace {

template <class T>
using checked = boost::system::result<T, rejected_message>;

rejected_message invalid(std::optional<request_id> id, std::string why) {
    return {make_error_response(std::move(id), rpc_code::invalid_request, "Invalid request: " + std::move(why))};
}


// The id, if this object has a readable one; used so that even a refusal names the request it answers.
std::optional<request_id> readable_id(json::object const& o) {
    auto const* id = o.if_contains("id");
    return id ? read_request_id(*id) : std::nullopt;
}

checked<std::optional<json::object>> read_params(json::object const& o, std::optional<request_id> const& id) {
    auto const* p = o.if_contains("params");
    if (!p) return std::optional<json::object>{};
    // JSON-RPC would allow by-position (array) params; MCP defines every params as an object, and a
    // server that guessed at positional meaning could run a tool with arguments nobody sent.
    if (!p->is_object()) return invalid(id, std::string("params must be an object, not ") + std::string(core::json_kind_name(*p)));
    return std::optional<json::object>(p->get_object());
}

checked<error_object> read_error_object(json::value const& v, std::optional<request_id> const& id) {
    if (!v.is_object()) return invalid(id, "error must be an object, not " + std::string(core::json_kind_name(v)));
    auto const& o = v.get_object();
    error_object e;
    auto const* code = o.if_contains("code");
    if (!code) return invalid(id, "error.code is missing");
    if (code->is_int64()) {
        e.code = code->get_int64();
    } else {
        return invalid(id, "error.code must be an integer, not " + std::string(core::json_kind_name(*code)));
    }
    auto const* msg = o.if_contains("message");
    if (!msg) return invalid(id, "error.message is missing");
    if (!msg->is_string()) return invalid(id, "error.message must be a string, not " + std::string(core::json_kind_name(*msg)));
    e.message = std::string(msg->get_string());
    if (auto const* data = o.if_contains("data")) e.data = *data;
    return e;
}

}  // namespace

std::string_view rpc_code_name(std::int64_t code) noexcept {
    switch (code) {
        case rpc_code::parse_error: return "ParseError";
        case rpc_code::invalid_request: return "InvalidRequest";
        case rpc_code::method_not_found: return "MethodNotFound";
        case rpc_code::invalid_params: return "InvalidParams";
        case rpc_code::internal_error: return "InternalError";
        case rpc_code::header_mismatch: return "HeaderMismatch";
        case rpc_code::missing_required_client_capability: return "MissingRequiredClientCapability";
        case rpc_code::unsupported_protocol_version: return "UnsupportedProtocolVersion";
        default: return "";
    }
}

void throw_exception_from_error(rejected_message const& e, boost::source_location const&) {
    throw std::runtime_error("JSON-RPC message refused (" + std::to_string(e.reply.error.code) + "): " + e.reply.error.message);
}

namespace {

// Why a JSON value cannot be an id, naming what it is. An integer past INT64_MAX is an integer, so
// "not an integer" would contradict itself: it is refused for its range.
std::string unusable_id(json::value const& v) {
    if (v.is_uint64())
        return "id must be a string or an integer from -2^63 to 2^63-1; " + std::to_string(v.get_uint64()) +
               " is outside that range";
    if (v.is_double()) return "id must be a string or an integer, not a number with a fraction or an exponent";
    return "id must be a string or an integer, not " + std::string(core::json_kind_name(v));
}

}  // namespace

std::optional<request_id> read_request_id(json::value const& v) {
    if (v.is_int64()) return request_id(v.get_int64());
    if (v.is_string()) return request_id(std::string(v.get_string()));
    // Refused: uint64 (Boost.JSON's kind for values above INT64_MAX, which no peer should mint) and
    // doubles (1.5, 1e3): echoing them back exactly is not possible, so they cannot be ids.
    return std::nullopt;
}

namespace {

constexpr std::string_view json_space = " \t\r\n";
constexpr auto npos = std::string_view::npos;

std::size_t skip_space(std::string_view text, std::size_t i) {
    auto j = text.find_first_not_of(json_space, i);
    return j == npos ? text.size() : j;
}

std::string_view trim_end(std::string_view text) {
    auto last = text.find_last_not_of(json_space);
    return text.substr(0, last == npos ? 0 : last + 1);
}

// One past the closing quote of the string opening at text[i]; npos when the bytes end first.
std::size_t end_of_string(std::string_view text, std::size_t i) {
    for (++i; i < text.size(); ++i) {
        if (text[i] == '\\') ++i;
        else if (text[i] == '"') return i + 1;
    }
    return npos;
}

// One past the value starting at text[i]; npos when the bytes end first (a number cut off at the
// end could have had more digits, so it is not complete either).
std::size_t end_of_value(std::string_view text, std::size_t i) {
    if (i >= text.size()) return npos;
    if (text[i] == '"') return end_of_string(text, i);
    if (text[i] != '{' && text[i] != '[') return text.find_first_of(",}] \t\r\n", i);
    int depth = 0;
    while (i < text.size()) {
        char ch = text[i];
        if (ch == '"') {
            i = end_of_string(text, i);
            if (i == npos) return npos;
            continue;
        }
        if (ch == '{' || ch == '[') ++depth;
        else if ((ch == '}' || ch == ']') && --depth == 0) return i + 1;
        ++i;
    }
    return npos;
}

std::optional<request_id> id_from_text(std::string_view value) {
    boost::system::error_code ec;
    auto v = json::parse(value, ec);
    return ec ? std::nullopt : read_request_id(v);
}

}  // namespace

message_head read_message_head(std::string_view text) {
    message_head head;
    auto i = skip_space(text, 0);
    if (i >= text.size() || text[i] != '{') return head;
    i = skip_space(text, i + 1);
    // Member by member, until the bytes end or stop looking like an object.
    while (i < text.size() && text[i] == '"') {
        auto key_end = end_of_string(text, i);
        if (key_end == npos) break;
        auto key = text.substr(i, key_end - i);
        i = skip_space(text, key_end);
        if (i >= text.size() || text[i] != ':') break;
        i = skip_space(text, i + 1);
        if (key == R"("method")") head.has_method = true;
        auto value_end = end_of_value(text, i);
        if (value_end == npos) break;
        if (key == R"("id")") head.id = id_from_text(text.substr(i, value_end - i));
        i = skip_space(text, value_end);
        if (i >= text.size() || text[i] != ',') break;
        i = skip_space(text, i + 1);
    }
    return head;
}

namespace {

// Whether the text from `i` on is zero or more `,"key":value` members and then the final '}' (at
// `close`), each value whole.
bool members_close_at(std::string_view text, std::size_t i, std::size_t close) {
    for (;;) {
        i = skip_space(text, i);
        if (i == close) return true;
        if (i > close || text[i] != ',') return false;
        i = skip_space(text, i + 1);
        if (i >= close || text[i] != '"') return false;
        i = end_of_string(text, i);
        if (i == npos) return false;
        i = skip_space(text, i);
        if (i >= close || text[i] != ':') return false;
        i = skip_space(text, i + 1);
        auto end = end_of_value(text, i);
        if (end == npos || end == i || end > close) return false;
        i = end;
    }
}

}  // namespace

std::optional<request_id> read_trailing_id(std::string_view text) {
    text = trim_end(text);
    if (!text.ends_with('}')) return std::nullopt;
    auto const close = text.size() - 1;
    // The last "id" key whose member, and the members after it (an SDK may write "jsonrpc" last),
    // run whole up to the final '}': that brace then closes the object holding it, the top-level
    // one. A quote inside a string is escaped, so an unescaped `"id"` after ',' or '{' is a key's.
    constexpr std::string_view key = R"("id")";
    for (auto at = text.rfind(key, close); at != npos; at = at == 0 ? npos : text.rfind(key, at - 1)) {
        auto before = trim_end(text.substr(0, at));
        if (!before.ends_with(',') && !before.ends_with('{')) continue;
        auto i = skip_space(text, at + key.size());
        if (i >= close || text[i] != ':') continue;
        auto start = skip_space(text, i + 1);
        auto end = end_of_value(text, start);
        if (end == npos || end == start || end > close || !members_close_at(text, end, close)) continue;
        return id_from_text(text.substr(start, end - start));
    }
    return std::nullopt;
}

error_response make_error_response(std::optional<request_id> id, std::int64_t code, std::string message,
                                   std::optional<json::value> data) {
    return error_response{std::move(id), error_object{code, std::move(message), std::move(data)}};
}

parse_result parse_message(std::string_view text) {
    auto parsed = core::parse_ijson(text);
    if (!parsed && parsed.error().code == "too_deep") {
        // Well-formed JSON nested past the limit: the request is read as far as its id, and refused
        // as one whose params airlock will not take, naming the limit.
        auto head = read_message_head(text);
        return rejected_message{make_error_response(
            head.has_method ? head.id : std::nullopt, rpc_code::invalid_params,
            "Invalid params: the message nests deeper than " + std::to_string(core::max_json_depth) +
                " levels, the most airlock accepts")};
    }
    if (!parsed)
        return rejected_message{make_error_response(std::nullopt, rpc_code::parse_error, "Parse error: " + parsed.error().message)};
    return read_message(*parsed);
}

parse_result read_message(json::value const& v) {
    if (v.is_array())
        return invalid(std::nullopt,
                       "batches (JSON arrays) are not supported; MCP removed JSON-RPC batching in 2025-06-18");
    if (!v.is_object()) return invalid(std::nullopt, "a message must be a JSON object, not " + std::string(core::json_kind_name(v)));
    auto const& o = v.get_object();
    auto id = readable_id(o);

    auto const* version = o.if_contains("jsonrpc");
    if (!version) return invalid(id, "\"jsonrpc\": \"2.0\" is missing");
    if (!version->is_string() || version->get_string() != "2.0") return invalid(id, "jsonrpc must be the string \"2.0\"");

    auto const* method = o.if_contains("method");
    auto const* result = o.if_contains("result");
    auto const* error = o.if_contains("error");
    auto const* raw_id = o.if_contains("id");

    if (method) {
        if (result || error) return invalid(id, "a message with a method cannot also carry result or error");
        if (!method->is_string()) return invalid(id, "method must be a string, not " + std::string(core::json_kind_name(*method)));
        auto params = read_params(o, id);
        if (!params) return params.error();
        if (!raw_id) return notification{std::string(method->get_string()), std::move(*params)};
        if (raw_id->is_null()) return invalid(std::nullopt, "id must be a string or an integer, never null");
        if (!id) return invalid(std::nullopt, unusable_id(*raw_id));
        return request{std::move(*id), std::string(method->get_string()), std::move(*params)};
    }

    if (result && error) return invalid(id, "a response cannot carry both result and error");
    if (result) {
        if (!raw_id) return invalid(std::nullopt, "a result response must carry the id of its request");
        if (!id) return invalid(std::nullopt, unusable_id(*raw_id));
        // MCP results are always objects (they carry _meta and, since 2026-07-28, resultType).
        if (!result->is_object()) return invalid(id, "result must be an object, not " + std::string(core::json_kind_name(*result)));
        return response{std::move(*id), result->get_object()};
    }
    if (error) {
        // An error may lack an id (or carry null) when the peer could not read ours; that is valid.
        if (raw_id && !raw_id->is_null() && !id)
            return invalid(std::nullopt, unusable_id(*raw_id));
        auto e = read_error_object(*error, id);
        if (!e) return e.error();
        return message(error_response{std::move(id), std::move(*e)});
    }
    return invalid(id, "a message needs a method (request or notification) or a result or error (response)");
}

json::value to_json(request_id const& id) {
    return std::visit([](auto const& x) { return json::value(x); }, id);
}

std::string to_string(request_id const& id) {
    if (auto const* n = std::get_if<std::int64_t>(&id)) return std::to_string(*n);
    return json::serialize(json::value(std::get<std::string>(id)));
}

std::optional<request_id> id_of(message const& m) {
    if (auto const* r = std::get_if<request>(&m)) return r->id;
    if (auto const* r = std::get_if<response>(&m)) return r->id;
    if (auto const* e = std::get_if<error_response>(&m)) return e->id;
    return std::nullopt;
}

void tag_invoke(json::value_from_tag, json::value& jv, request const& r) {
    json::object o;
    o["jsonrpc"] = "2.0";
    o["id"] = to_json(r.id);
    o["method"] = r.method;
    if (r.params) o["params"] = *r.params;
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, notification const& n) {
    json::object o;
    o["jsonrpc"] = "2.0";
    o["method"] = n.method;
    if (n.params) o["params"] = *n.params;
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, response const& r) {
    json::object o;
    o["jsonrpc"] = "2.0";
    o["id"] = to_json(r.id);
    o["result"] = r.result;
    jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, error_response const& e) {
    json::object o;
    o["jsonrpc"] = "2.0";
    // MCP's schema makes the id optional (`id?: RequestId`) rather than JSON-RPC's `null`; we omit it.
    if (e.id) o["id"] = to_json(*e.id);
    json::object err;
    err["code"] = e.error.code;
    err["message"] = e.error.message;
    if (e.error.data) err["data"] = *e.error.data;
    o["error"] = std::move(err);
    jv = std::move(o);
}

json::value to_json(message const& m) {
    return std::visit([](auto const& x) { return json::value_from(x); }, m);
}

namespace {

// Requests, notifications and responses are written around their payload instead of copying the
// payload (a call's arguments and provenance, a tool's result) into an envelope object first; the
// text is the same as to_json's, member for member.
constexpr std::string_view envelope = R"({"jsonrpc":"2.0")";

void put_id(std::string& out, request_id const& id) {
    out += R"(,"id":)";
    out += to_string(id);
}

void put_method(std::string& out, std::string const& method) {
    out += R"(,"method":)";
    out += json::serialize(json::string_view(method));
}

void put_object(std::string& out, std::string_view member, json::object const& o) {
    out += ",\"";
    out += member;
    out += "\":";
    // Numbers as their senders wrote them (0.1, not Boost.JSON's 1E-1); a value the strict writer
    // refuses (a string that is not UTF-8) is written as Boost.JSON writes it.
    auto const start = out.size();
    if (!core::append_json(out, o)) {
        out.resize(start);
        out += json::serialize(o);
    }
}

}  // namespace

std::string serialize(request const& r) {
    std::string out(envelope);
    put_id(out, r.id);
    put_method(out, r.method);
    if (r.params) put_object(out, "params", *r.params);
    out += '}';
    return out;
}

std::string serialize(message const& m) {
    if (auto const* r = std::get_if<request>(&m)) return serialize(*r);
    std::string out(envelope);
    if (auto const* n = std::get_if<notification>(&m)) {
        put_method(out, n->method);
        if (n->params) put_object(out, "params", *n->params);
    } else if (auto const* re = std::get_if<response>(&m)) {
        put_id(out, re->id);
        put_object(out, "result", re->result);
    } else {
        return json::serialize(to_json(m));
    }
    out += '}';
    return out;
}

}  // namespace airlock::mcp
