#include "mcp/protocol/line_class.hpp"

#include <boost/json/parse.hpp>

namespace airlock::mcp {

line_class classify_line(std::string_view line) {
    line_class out;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.text = line;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return out;
    auto parsed = parse_message(line);
    if (parsed) {
        out.what = line_class::kind::message;
        out.msg = std::move(*parsed);
        return out;
    }
    auto const& rejected = parsed.error().reply;
    out.what = line_class::kind::not_json_rpc;
    out.reason = rejected.error.message;
    // Shaped like a reply (an id, no method): the request it answers should not wait for its
    // deadline. A request or notification that is broken answers nothing.
    if (rejected.id) {
        boost::system::error_code ec;
        auto v = boost::json::parse(line, ec);
        if (!ec && v.is_object() && !v.get_object().contains("method")) {
            out.what = line_class::kind::unreadable_reply;
            out.id = rejected.id;
        }
    }
    return out;
}

oversized_class classify_oversized(oversized_line const& skipped) {
    if (skipped.head.has_method) return {oversized_class::kind::not_a_reply, std::nullopt};
    if (auto id = skipped.id()) return {oversized_class::kind::reply_to, std::move(id)};
    return {oversized_class::kind::reply_to_unknown, std::nullopt};
}

}  // namespace airlock::mcp
