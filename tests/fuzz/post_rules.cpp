// The era and header rules of a Streamable HTTP POST. The input is header lines ("Name: value"),
// a blank line and a JSON-RPC body. Whatever arrives: the era is decided, the checks of that era
// answer with the statuses and codes they document; and a modern request sent with the headers
// modern_post_headers derives from its own body never fails as a header mismatch.
#include "mcp/protocol/messages.hpp"
#include "mcp/protocol/post_rules.hpp"
#include "mcp/protocol/versions.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace airlock;
using fuzz::require;

namespace {

mcp::http_headers read_headers(std::string_view& text) {
    mcp::http_headers h;
    while (!text.empty()) {
        auto nl = text.find('\n');
        auto line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (line.empty()) break;
        auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        auto value = line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        h.add(line.substr(0, colon), value);
    }
    return h;
}

void check_rejection(mcp::http_rejection const& r, std::initializer_list<std::int64_t> codes) {
    require(r.status == 400 || r.status == 404, "a POST is refused with a status other than 400 or 404");
    bool known = false;
    for (auto c : codes) known = known || r.body.error.code == c;
    require(known, "a POST is refused with a code its check does not document");
    require(!r.body.error.message.empty(), "a refusal has no message");
}

void own_headers_agree(mcp::message const& body) {
    auto const* r = std::get_if<mcp::request>(&body);
    // initialize always starts a legacy session, whatever its _meta says (classify_post).
    if (!r || r->method == mcp::method::initialize) return;
    auto h = mcp::modern_post_headers(*r);
    if (!h) return;
    // A body whose _meta names a legacy version gets a legacy version header, and a known version
    // header decides the era: only a modern version makes these headers modern.
    auto version = h->get(mcp::header::protocol_version);
    if (!version || mcp::era_of(*version) != mcp::era::modern) return;
    require(mcp::classify_post(*h, body) == mcp::era::modern, "a POST with modern headers is classified legacy");
    auto checked = mcp::validate_modern_post(*h, body);
    if (!checked)
        require(checked.error().body.error.code != mcp::rpc_code::header_mismatch,
                "headers derived from a body mismatch that body");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    auto text = fuzz::as_text(data, size);
    auto headers = read_headers(text);
    auto body = mcp::parse_message(text);
    if (!body) return 0;
    using namespace mcp::rpc_code;
    if (mcp::classify_post(headers, *body) == mcp::era::modern) {
        auto checked = mcp::validate_modern_post(headers, *body);
        if (!checked) check_rejection(checked.error(), {invalid_request, header_mismatch, invalid_params,
                                                        unsupported_protocol_version});
    } else {
        auto find = [](std::string_view id) -> std::optional<std::string> {
            if (id == "known") return std::string(mcp::version::legacy_latest);
            return std::nullopt;
        };
        auto checked = mcp::validate_legacy_post(headers, *body, size % 2 == 0, find);
        if (checked) require(!checked->empty(), "a legacy POST is accepted with no protocol version");
        else check_rejection(checked.error(), {invalid_request, invalid_params, parse_error});
    }
    own_headers_agree(*body);
    for (auto const& f : headers) {
        auto decoded = mcp::decode_header_value(mcp::encode_header_value(f.value));
        require(decoded.has_value() && *decoded == f.value, "decode(encode(value)) is not the value");
    }
    return 0;
}
