#include "mcp/protocol/list_cursor.hpp"

#include "core/sha256.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace airlock::mcp {

namespace json = boost::json;

namespace {

constexpr std::string_view version_tag = "c1.";
constexpr std::size_t max_cursor = 4096;

std::string bound(std::string_view list, std::string_view principal, std::string_view body) {
    return std::to_string(list.size()) + ":" + std::string(list) + std::to_string(principal.size()) + ":" +
           std::string(principal) + std::string(body);
}

std::optional<std::string> from_hex(std::string_view hex) {
    if (hex.size() % 2) return std::nullopt;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    std::string out;
    out.reserve(hex.size() / 2);
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out.push_back(static_cast<char>(hi * 16 + lo));
    }
    return out;
}

}  // namespace

std::string list_cursor_sealer::seal(std::string_view list, std::string_view principal, list_position const& pos) const {
    json::object payload{{"u", pos.upstream}, {"s", pos.skip}};
    if (pos.cursor) payload["c"] = *pos.cursor;
    auto text = json::serialize(payload);
    auto body = core::to_hex(reinterpret_cast<std::uint8_t const*>(text.data()), text.size());
    auto tag = core::to_hex(core::hmac_sha256(key_, bound(list, principal, body)));
    return std::string(version_tag) + body + "." + tag;
}

core::result<list_position> list_cursor_sealer::open(std::string_view cursor, std::string_view list,
                                                     std::string_view principal) const {
    auto invalid = [](std::string why) { return core::make_error("invalid_cursor", "invalid cursor: " + std::move(why)); };
    auto dot = cursor.rfind('.');
    if (cursor.size() > max_cursor || !cursor.starts_with(version_tag) || dot < version_tag.size())
        return invalid("it is not a cursor this server issued");
    auto body = cursor.substr(version_tag.size(), dot - version_tag.size());
    auto tag = cursor.substr(dot + 1);
    if (!core::equal_constant_time(core::to_hex(core::hmac_sha256(key_, bound(list, principal, body))), tag))
        return invalid("it was altered, belongs to another list or caller, or was issued before airlock restarted");
    auto text = from_hex(body);
    boost::system::error_code ec;
    auto v = text ? json::parse(*text, ec) : json::value();
    auto const* o = v.if_object();
    if (!text || ec || !o) return invalid("it is malformed");
    list_position pos;
    auto const* u = o->if_contains("u");
    auto const* s = o->if_contains("s");
    if (!u || !u->is_string() || !s || (!s->is_uint64() && !s->is_int64())) return invalid("it is malformed");
    pos.upstream = std::string(u->get_string());
    pos.skip = s->to_number<std::uint64_t>();
    if (auto const* c = o->if_contains("c")) {
        if (!c->is_string()) return invalid("it is malformed");
        pos.cursor = std::string(c->get_string());
    }
    return pos;
}

}  // namespace airlock::mcp
