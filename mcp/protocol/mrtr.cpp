#include "mcp/protocol/mrtr.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"

#include <boost/json/serialize.hpp>

#include <charconv>

namespace airlock::mcp::mrtr {

namespace json = boost::json;

bool allows_input_required(std::string_view method) noexcept {
    return method == "tools/call" || method == "prompts/get" || method == "resources/read";
}

bool valid_key(std::string_view key) noexcept {
    if (key.empty() || key.size() > 64) return false;
    for (char c : key) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                  c == '.';
        if (!ok) return false;
    }
    return true;
}

std::optional<std::string> take_key_hint(json::object& params) {
    auto* meta = params.if_contains("_meta");
    if (!meta || !meta->is_object()) return std::nullopt;
    auto& m = meta->as_object();
    auto* hint = m.if_contains(key_hint_meta);
    if (!hint) return std::nullopt;
    std::optional<std::string> out;
    if (hint->is_string() && valid_key(hint->get_string())) out = std::string(hint->get_string());
    m.erase(key_hint_meta);
    if (m.empty()) params.erase("_meta");
    return out;
}

core::result<std::optional<json::object>> input_responses_of(json::object const& params) {
    auto const* v = params.if_contains("inputResponses");
    if (!v) return std::optional<json::object>{};
    if (!v->is_object())
        return core::make_error("invalid_params", "params.inputResponses must be an object mapping input request keys to "
                                                  "results, not " + std::string(core::json_kind_name(*v)));
    for (auto const& [k, answer] : v->get_object())
        if (!answer.is_object())
            return core::make_error("invalid_params", "params.inputResponses." + std::string(k) + " must be an object (a result), not " +
                                                          std::string(core::json_kind_name(answer)));
    return std::optional<json::object>{v->get_object()};
}

namespace {

std::optional<std::string> need_string(json::object const& o, std::string_view field, std::string_view where) {
    auto const* v = o.if_contains(field);
    if (!v || !v->is_string()) return std::string(where) + "." + std::string(field) + " must be a string";
    return std::nullopt;
}

}  // namespace

std::optional<std::string> check_input_response(std::string_view method, json::value const& answer, std::string_view where) {
    auto const* o = answer.if_object();
    if (!o) return std::string(where) + " must be an object, not " + std::string(core::json_kind_name(answer));
    if (method == "elicitation/create") {
        auto const* a = o->if_contains("action");
        if (!a || !a->is_string() ||
            (a->get_string() != "accept" && a->get_string() != "decline" && a->get_string() != "cancel"))
            return std::string(where) + ".action must be \"accept\", \"decline\" or \"cancel\"";
        if (auto const* c = o->if_contains("content"); c && !c->is_object() && !c->is_null())
            return std::string(where) + ".content must be an object";
        return std::nullopt;
    }
    if (method == "sampling/createMessage") {
        if (auto e = need_string(*o, "role", where)) return e;
        if (auto e = need_string(*o, "model", where)) return e;
        auto const* c = o->if_contains("content");
        if (!c || !(c->is_object() || c->is_array())) return std::string(where) + ".content must be an object or an array";
        return std::nullopt;
    }
    if (method == "roots/list") {
        auto const* roots = o->if_contains("roots");
        if (!roots || !roots->is_array()) return std::string(where) + ".roots must be an array";
        std::size_t i = 0;
        for (auto const& r : roots->get_array()) {
            auto at = std::string(where) + ".roots[" + std::to_string(i++) + "]";
            if (!r.is_object()) return at + " must be an object";
            if (auto e = need_string(r.get_object(), "uri", at)) return e;
        }
        return std::nullopt;
    }
    return std::nullopt;  // a question of a kind airlock does not know: the asker judges the answer
}

std::string request_digest(std::string_view method, json::object const& params) {
    json::object p = params;
    p.erase("_meta");
    p.erase("inputResponses");
    p.erase("requestState");
    json::object whole{{"method", method}, {"params", std::move(p)}};
    auto text = core::canonical(whole);
    // Not canonicalizable (a lone surrogate, say): its serialization is still a stable binding.
    return core::sha256_hex(text ? *text : json::serialize(whole));
}

std::string state_sealer::mac(std::string_view body, std::string_view principal, std::string_view digest) const {
    // Over the body and, length-prefixed, what it is bound to.
    auto message = std::string(body) + std::to_string(principal.size()) + ":" + std::string(principal) + std::string(digest);
    return core::to_hex(core::hmac_sha256(key_, message));
}

std::string state_sealer::seal(request_state const& s, std::string_view principal, std::string_view digest) const {
    auto body = "v1." + s.pending + "." + std::to_string(s.round) + "." + std::to_string(s.expires);
    return body + "." + mac(body, principal, digest);
}

core::result<request_state> state_sealer::open(std::string_view text, std::string_view principal, std::string_view digest,
                                               std::int64_t now) const {
    auto invalid = [](std::string why) { return core::make_error("invalid_request_state", std::move(why)); };
    auto last = text.rfind('.');
    if (text.size() > 512 || !text.starts_with("v1.") || last == std::string_view::npos)
        return invalid("params.requestState is not a requestState this server issued");
    auto body = text.substr(0, last);
    auto tag = text.substr(last + 1);
    // Constant time: the comparison must not tell an attacker how much of a forged tag is right.
    if (!core::equal_constant_time(mac(body, principal, digest), tag))
        return invalid("params.requestState failed verification: it was altered, or it belongs to another request or caller");
    // The body is ours (the MAC says so): v1.<pending>.<round>.<expires>.
    auto rest = body.substr(3);
    auto d1 = rest.find('.');
    auto d2 = rest.find('.', d1 + 1);
    if (d1 == std::string_view::npos || d2 == std::string_view::npos) return invalid("params.requestState is malformed");
    request_state s;
    s.pending = std::string(rest.substr(0, d1));
    auto round = rest.substr(d1 + 1, d2 - d1 - 1);
    auto expires = rest.substr(d2 + 1);
    if (std::from_chars(round.data(), round.data() + round.size(), s.round).ec != std::errc{} ||
        std::from_chars(expires.data(), expires.data() + expires.size(), s.expires).ec != std::errc{})
        return invalid("params.requestState is malformed");
    if (now >= s.expires) return invalid("params.requestState has expired; send the request again without it");
    return s;
}

json::object input_required_result(json::object input_requests, std::string request_state) {
    json::object r;
    r["resultType"] = "input_required";
    r["inputRequests"] = std::move(input_requests);
    r["requestState"] = std::move(request_state);
    return r;
}

}  // namespace airlock::mcp::mrtr
