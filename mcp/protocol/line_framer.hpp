#pragma once
// Newline-delimited JSON-RPC framing (the stdio transport of both eras), with a bound on the
// length of a line: a longer one is not kept, only what its first and last bytes tell. No I/O:
// the caller reads bytes and feeds them in.

#include "mcp/protocol/jsonrpc.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace airlock::mcp {

// A line past the limit, skipped up to its newline: what its first bytes told, and its last
// bytes (where the TypeScript SDK writes a message's id).
struct oversized_line {
    // Room for a long string id and the members an SDK writes after it; a few KiB per connection
    // is nothing beside the line limit itself.
    static constexpr std::size_t tail_bytes = 4096;

    void keep_tail(std::string_view more);
    // Its id, from the first bytes or else the last ones; nullopt when neither shows it whole.
    std::optional<request_id> id() const;

    message_head head;
    std::string tail;
};

class line_framer {
public:
    enum class ended { none, line, oversized };

    explicit line_framer(std::size_t max_line_bytes) : max_(max_line_bytes) {}

    // Takes bytes from the front of `data`, up to and including its first newline (all of it when
    // it has none), and says whether they ended a line; line() or skipped() then tells what it
    // was, until the next call.
    ended take(std::string_view& data);
    // At end of input: the line the input ended inside, as if a newline had followed it.
    ended finish();

    std::string_view line() const { return line_; }  // without its newline
    oversized_line const& skipped() const { return skipped_; }
    std::size_t max_line_bytes() const { return max_; }

private:
    void start_next();

    std::size_t max_;
    std::string line_;
    oversized_line skipped_;
    bool skipping_ = false;
    bool ended_ = false;
};

}  // namespace airlock::mcp
