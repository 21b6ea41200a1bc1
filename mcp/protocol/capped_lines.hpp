#pragma once
// Lines of free text (a stdio server's stderr) cut at a length cap: a longer line keeps its first
// `cap` bytes and says it was truncated; its rest, up to the newline, is dropped. A CR before the
// newline is not part of the line. No I/O: the caller reads bytes and feeds them in.

#include <cstddef>
#include <string>
#include <string_view>

namespace airlock::mcp {

class capped_lines {
public:
    explicit capped_lines(std::size_t cap) : cap_(cap) {}

    // Takes bytes from the front of `data`, up to and including its first newline (all of it when
    // it has none); true when they ended a line, which line() and truncated() then tell until the
    // next call.
    bool take(std::string_view& data);
    // At end of input: true when the input ended inside a line that has text, as if a newline had
    // followed it.
    bool finish();

    std::string const& line() const { return line_; }
    bool truncated() const { return truncated_; }

private:
    std::size_t cap_;
    std::string line_;
    bool truncated_ = false;
    bool ended_ = false;  // the last take() ended line_: the next one starts a new line
};

}  // namespace airlock::mcp
