// MCP message bodies of both eras (2025-11-25's initialize, 2026-07-28's discover and per-request
// _meta, and the bodies both share): whatever a reader accepts, the writer writes as JSON that the
// reader accepts again and writes identically; a refusal always says why.
#include "core/canonical_json.hpp"
#include "mcp/protocol/messages.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <boost/json/value_from.hpp>

using namespace airlock;
using fuzz::require;

namespace {

template <class T>
void round_trip(core::result<T> (*reader)(boost::json::value const&), boost::json::value const& v) {
    auto first = reader(v);
    if (!first) {
        require(!first.error().code.empty() && !first.error().message.empty(), "a refusal has no code or message");
        return;
    }
    auto written = boost::json::value_from(*first);
    auto second = reader(written);
    require(second.has_value(), "a body written from what the reader accepted is refused");
    require(fuzz::same_json(boost::json::value_from(*second), written), "read(write(x)) writes differently");
}

void request_meta(boost::json::value const& v) {
    auto const* params = v.if_object();
    if (!params) return;
    auto meta = mcp::parse_request_meta(*params);
    if (!meta) return;
    boost::json::object out;
    mcp::set_request_meta(out, *meta);
    auto again = mcp::parse_request_meta(out);
    require(again.has_value(), "params written by set_request_meta are refused");
    require(again->protocol_version == meta->protocol_version && again->client_capabilities == meta->client_capabilities &&
                again->client_info == meta->client_info && again->log_level == meta->log_level &&
                again->progress == meta->progress,
            "set_request_meta then parse_request_meta changes the fields");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    auto v = core::parse_ijson(fuzz::as_text(data, size));
    if (!v) return 0;
    // Every reader sees every value: which one a body is meant for is exactly what a peer gets wrong.
    round_trip(&mcp::parse_implementation, *v);
    round_trip(&mcp::parse_initialize_params, *v);
    round_trip(&mcp::parse_initialize_result, *v);
    round_trip(&mcp::parse_tool, *v);
    round_trip(&mcp::parse_list_tools_result, *v);
    round_trip(&mcp::parse_call_tool_params, *v);
    round_trip(&mcp::parse_call_tool_result, *v);
    round_trip(&mcp::parse_progress_params, *v);
    round_trip(&mcp::parse_cancelled_params, *v);
    round_trip(&mcp::parse_discover_result, *v);
    round_trip(&mcp::parse_unsupported_version_data, *v);
    request_meta(*v);
    return 0;
}
