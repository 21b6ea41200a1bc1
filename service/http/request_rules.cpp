#include "service/http/request_rules.hpp"

#include "core/ascii.hpp"

#include <algorithm>
#include <vector>

namespace airlock::service {

std::optional<std::string_view> repeated_singleton_field(http_request const& req) {
    static constexpr std::string_view singletons[] = {"Authorization", "Host", "Origin", "Content-Type",
                                                      "Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method",
                                                      "Mcp-Name", "Last-Event-ID", "Idempotency-Key"};
    for (auto name : singletons)
        if (req.count(name) > 1) return name;
    return std::nullopt;
}

std::string_view request_line_target(std::string_view bytes) {
    auto line = bytes.substr(0, bytes.find("\r\n"));
    if (line.size() == bytes.size()) return {};
    auto first = line.find(' ');
    auto second = first == std::string_view::npos ? first : line.find(' ', first + 1);
    if (second == std::string_view::npos) return {};
    return line.substr(first + 1, second - first - 1);
}

std::optional<framing_refusal> refuse_framing(http_request const& req) {
    std::vector<std::string_view> codings;
    bool any = false;
    for (auto const& f : req) {
        if (f.name() != http::field::transfer_encoding) continue;
        any = true;
        std::string_view list(f.value().data(), f.value().size());
        while (!list.empty()) {
            auto comma = list.find(',');
            auto coding = core::trim_ows(list.substr(0, comma));
            list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
            if (!coding.empty()) codings.push_back(coding);
        }
    }
    if (!any) return std::nullopt;
    constexpr auto bad = http::status::bad_request;
    if (req.version() < 11)
        return framing_refusal{bad, "bad_transfer_encoding", "HTTP/1.0 has no Transfer-Encoding; send Content-Length"};
    if (req.find(http::field::content_length) != req.end())
        return framing_refusal{bad, "bad_transfer_encoding",
                               "the request carries both Content-Length and Transfer-Encoding; send one of them"};
    auto is_chunked = [](std::string_view c) { return core::iequals(c, "chunked"); };
    if (codings.empty() || !is_chunked(codings.back()) || std::count_if(codings.begin(), codings.end(), is_chunked) != 1)
        return framing_refusal{bad, "bad_transfer_encoding", "Transfer-Encoding must end with chunked, named once"};
    if (codings.size() > 1)
        return framing_refusal{http::status::not_implemented, "unsupported_transfer_coding",
                               "no transfer coding but chunked is read; send the body with Transfer-Encoding: chunked "
                               "alone, or with Content-Length"};
    return std::nullopt;
}

}  // namespace airlock::service
