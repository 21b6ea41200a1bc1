#pragma once
// Server-Sent Events per WHATWG HTML "Interpreting an event stream": an incremental parser that
// accepts bytes split at any point, and a writer whose frames the parser reads back unchanged.

#include "core/error.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::mcp {

struct sse_event {
    std::string type = "message";        // the `event:` field; "message" when absent or empty
    std::string data;                    // the `data:` lines joined with '\n'
    std::string id;                      // the last event id when dispatched (it persists across events)
    std::optional<std::uint64_t> retry;  // a valid `retry:` seen in this event's lines
    friend bool operator==(sse_event const&, sse_event const&) = default;
};

class sse_parser {
public:
    static constexpr std::size_t default_max_event_bytes = 8 * 1024 * 1024;

    // `max_event_bytes` bounds what one event holds: its data and type read so far plus the whole
    // line being read (field name included), so a peer that never ends a line or an event cannot
    // grow the buffers without limit. The outcome does not depend on how the bytes are split.
    explicit sse_parser(std::size_t max_event_bytes = default_max_event_bytes) : max_(max_event_bytes) {}

    // Consumes bytes; appends each event they complete to `out`. Fails "sse_event_too_large" when
    // an event outgrows the limit; the parser then stays failed (events before the fault are kept).
    core::result<void> feed(std::string_view bytes, std::vector<sse_event>& out);

    // The stream ended. An event without its closing blank line is discarded, as the spec requires;
    // returns true when something was discarded (the peer stopped mid-event).
    bool finish();

    // The last event id seen (`id:` without NUL); what a legacy client resumes from with Last-Event-ID.
    std::string const& last_event_id() const noexcept { return last_id_; }
    // The latest valid `retry:` value (milliseconds), if any.
    std::optional<std::uint64_t> reconnection_time_ms() const noexcept { return retry_; }

private:
    core::result<void> process(std::string_view bytes, std::vector<sse_event>& out);
    core::result<void> line(std::string_view text, std::vector<sse_event>& out);
    core::result<void> check_size(std::size_t pending);

    std::size_t max_;
    std::size_t bom_matched_ = 0;  // bytes of a leading UTF-8 BOM seen so far (it may be split too)
    bool started_ = false;
    bool after_cr_ = false;  // the previous chunk ended in CR: a leading LF completes CRLF
    std::string line_;
    std::string data_;
    std::string type_;
    std::string last_id_;
    std::optional<std::uint64_t> retry_;
    std::optional<std::uint64_t> event_retry_;
    std::optional<core::error> failed_;
};

// One event to write. Leave `event` empty for the default type "message".
struct sse_frame {
    std::optional<std::string> event;
    std::string data;
    std::optional<std::string> id;
    std::optional<std::uint64_t> retry;
};

// Serializes one event, ending with the blank line that dispatches it. Data holding line breaks
// (CRLF, LF or CR) becomes several `data:` lines, which the reader joins with '\n'. Refuses
// ("invalid_sse_field") an event type or id that holds CR or LF (it would inject fields) and an id
// holding NUL (readers ignore such ids).
core::result<std::string> format_sse_event(sse_frame const& f);

// A comment (":" lines), e.g. a keep-alive; readers ignore it. Line breaks start new comment lines.
std::string format_sse_comment(std::string_view text = {});

}  // namespace airlock::mcp
