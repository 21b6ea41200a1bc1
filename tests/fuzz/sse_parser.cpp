// The SSE parser: the events do not depend on where the bytes are split, and every event it reads,
// written by format_sse_event, reads back as the same event.
#include "mcp/protocol/sse.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <vector>

using namespace airlock;
using fuzz::require;

namespace {

struct outcome {
    std::vector<mcp::sse_event> events;
    bool failed = false;
    bool cut_short = false;
};

outcome parse(std::string_view input, std::size_t chunk, std::size_t limit) {
    mcp::sse_parser p(limit);
    outcome o;
    for (std::size_t at = 0; at < input.size() && !o.failed; at += chunk)
        o.failed = !p.feed(input.substr(at, chunk), o.events);
    if (!o.failed) o.cut_short = p.finish();
    return o;
}

void written_reads_back(mcp::sse_event const& e) {
    mcp::sse_frame f{.event = e.type == "message" ? std::nullopt : std::optional<std::string>(e.type),
                     .data = e.data,
                     .id = e.id.empty() ? std::nullopt : std::optional<std::string>(e.id),
                     .retry = e.retry};
    auto text = mcp::format_sse_event(f);
    require(text.has_value(), "format_sse_event refuses an event the parser read");
    mcp::sse_parser p(text->size() + 16);
    std::vector<mcp::sse_event> back;
    require(p.feed(*text, back).has_value(), "the parser refuses what format_sse_event wrote");
    require(!p.finish(), "format_sse_event wrote an unfinished event");
    require(back.size() == 1, "format_sse_event's text reads as another number of events");
    require(back[0] == e, "an event written by format_sse_event reads back changed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size < 2) return 0;
    std::size_t const chunk = 1 + data[0] % 13;
    std::size_t const limit = 16 + data[1] * 8;  // small enough that the size limit is reached
    auto input = fuzz::as_text(data + 2, size - 2);
    auto whole = parse(input, input.size() + 1, limit);
    auto split = parse(input, chunk, limit);
    require(whole.failed == split.failed, "the size limit trips for one split of the bytes and not another");
    require(whole.events == split.events, "the events depend on how the bytes were split");
    require(whole.cut_short == split.cut_short, "finish() depends on how the bytes were split");
    for (auto const& e : whole.events) written_reads_back(e);
    return 0;
}
