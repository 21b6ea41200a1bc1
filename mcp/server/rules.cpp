#include "mcp/server/rules.hpp"

#include "mcp/protocol/era.hpp"

#include <boost/json/value_from.hpp>

#include <openssl/rand.h>

#include <stdexcept>

namespace airlock::mcp::rules {

namespace json = boost::json;

json::object discover_result(mcp::server_backend const& backend, std::string const& principal) {
    json::object o;
    o["resultType"] = "complete";
    json::array versions;
    for (auto v : mcp::supported_versions()) versions.emplace_back(v);
    o["supportedVersions"] = std::move(versions);
    o["capabilities"] = backend.server_capabilities(principal);
    if (auto i = backend.instructions(principal)) o["instructions"] = *i;
    json::object meta;
    meta[mcp::meta_key::server_info] = json::value_from(backend.server_info());
    o["_meta"] = std::move(meta);
    // What a principal may see can change with a grant or a pin at any time, and differs per
    // principal: never fresh, never shared.
    o["ttlMs"] = 0;
    o["cacheScope"] = "private";
    return o;
}

namespace {
bool cacheable(std::string_view m) {
    return m == "tools/list" || m == "prompts/list" || m == "resources/list" || m == "resources/templates/list" ||
           m == "resources/read";
}
}  // namespace

void decorate_modern_result(std::string_view method, json::object& r) {
    if (!r.contains("resultType")) r["resultType"] = "complete";
    auto const& rt = r.at("resultType");
    if (!cacheable(method) || !rt.is_string() || rt.get_string() != "complete") return;
    if (!r.contains("ttlMs")) r["ttlMs"] = 0;
    if (!r.contains("cacheScope")) r["cacheScope"] = "private";
}

bool removed_in_modern(std::string_view method) noexcept {
    return method == mcp::method::initialize || method == mcp::method::ping || method == "logging/setLevel" ||
           method == "resources/subscribe" || method == "resources/unsubscribe";
}

bool is_modern_initialize(mcp::request const& r) {
    if (r.method != mcp::method::initialize || !r.params || r.params->contains("protocolVersion")) return false;
    auto const* m = r.params->if_contains("_meta");
    if (!m || !m->is_object()) return false;
    auto const* v = m->get_object().if_contains(mcp::meta_key::protocol_version);
    return v && v->is_string() && mcp::era_of(v->get_string()) == mcp::era::modern;
}

mcp::error_object cut_off_by_stop() {
    return mcp::error_object{mcp::rpc_code::internal_error,
                             "airlock is stopping: this request was cut off before it finished (a tool call may or may "
                             "not have taken effect; its journal record says which)",
                             std::nullopt};
}

mcp::error_object cut_off_by_delete() {
    return mcp::error_object{mcp::rpc_code::internal_error,
                             "the session was deleted: this request was cut off before it finished (a tool call may or "
                             "may not have taken effect; its journal record says which)",
                             std::nullopt};
}

mcp::error_object missing_client_capability(std::string_view capability) {
    json::object required;
    required[capability] = json::object{};
    json::object data;
    data["requiredCapabilities"] = std::move(required);
    return mcp::error_object{mcp::rpc_code::missing_required_client_capability,
                             "Missing required client capability: the request needs '" + std::string(capability) +
                                 "', which the client did not declare in _meta",
                             json::value(std::move(data))};
}

void modernize_error(std::string_view method, mcp::error_object& e) {
    constexpr std::int64_t legacy_resource_not_found = -32002;
    if (method == "resources/read" && e.code == legacy_resource_not_found) e.code = mcp::rpc_code::invalid_params;
}

std::optional<mcp::progress_token> progress_token_of(std::optional<json::object> const& params) {
    if (!params) return std::nullopt;
    auto const* m = params->if_contains("_meta");
    if (!m || !m->is_object()) return std::nullopt;
    auto const* t = m->get_object().if_contains(mcp::meta_key::progress_token);
    if (!t) return std::nullopt;
    return mcp::read_request_id(*t);
}

std::optional<std::string_view> client_capability_for(std::string_view method) noexcept {
    if (method == "sampling/createMessage") return "sampling";
    if (method == "elicitation/create") return "elicitation";
    if (method == "roots/list") return "roots";
    return std::nullopt;
}

subscription_filter parse_subscription_filter(std::optional<json::object> const& params) {
    subscription_filter f;
    if (!params) return f;
    auto const* n = params->if_contains("notifications");
    if (!n || !n->is_object()) return f;
    auto flag = [&](char const* key) {
        auto const* v = n->get_object().if_contains(key);
        return v && v->is_bool() && v->get_bool();
    };
    f.tools = flag("toolsListChanged");
    f.prompts = flag("promptsListChanged");
    f.resources = flag("resourcesListChanged");
    return f;
}

bool admits(subscription_filter const& f, mcp::notification const& n) noexcept {
    if (n.method == "notifications/tools/list_changed") return f.tools;
    if (n.method == "notifications/prompts/list_changed") return f.prompts;
    if (n.method == "notifications/resources/list_changed") return f.resources;
    return false;
}

mcp::notification subscription_acknowledged(mcp::request_id const& id, subscription_filter const& f) {
    json::object honoured;
    if (f.tools) honoured["toolsListChanged"] = true;
    if (f.prompts) honoured["promptsListChanged"] = true;
    if (f.resources) honoured["resourcesListChanged"] = true;
    json::object params;
    params["notifications"] = std::move(honoured);
    return tag_subscription(mcp::notification{"notifications/subscriptions/acknowledged", std::move(params)}, id);
}

mcp::notification tag_subscription(mcp::notification n, mcp::request_id const& id) {
    if (!n.params) n.params.emplace();
    auto& meta = (*n.params)["_meta"];
    if (!meta.is_object()) meta = json::object{};
    meta.get_object()[mcp::meta_key::subscription_id] = mcp::to_json(id);
    return n;
}

json::object subscription_completed(mcp::request_id const& id) {
    json::object meta;
    meta[mcp::meta_key::subscription_id] = mcp::to_json(id);
    json::object r;
    r["resultType"] = "complete";
    r["_meta"] = std::move(meta);
    return r;
}

std::string new_session_id(std::function<void(std::uint8_t*, std::size_t)> const& random) {
    std::uint8_t bytes[16];
    if (random) {
        random(bytes, sizeof bytes);
    } else if (RAND_bytes(bytes, sizeof bytes) != 1) {
        // Never fall back to anything guessable: a session id must not be predictable.
        throw std::runtime_error("the system's random number generator failed");
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (auto b : bytes) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

}  // namespace airlock::mcp::rules
