#pragma once
// What a stdio server writes on stderr, in airlock's log: line by line, each line cut at 16 KiB, and
// at most `lines` lines every `interval`. A server may write without end, and one line per line
// made airlock's log the flood: a server writing 100,000 lines for one call wrote 100,000 log records
// (12 MB). Past the budget the lines are counted, and the count is told, with the last 20 of them,
// by the first line after the interval and when the stream ends.

#include "mcp/protocol/capped_lines.hpp"

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

namespace airlock::mcp {

class stderr_log {
public:
    using clock = std::chrono::steady_clock;
    static constexpr std::size_t default_lines = 100;
    static constexpr std::chrono::milliseconds default_interval{10'000};
    // Of the lines held back, the last ones are logged with their count.
    static constexpr std::size_t tail_lines = 20;

    explicit stderr_log(std::string upstream, std::size_t lines = default_lines,
                        std::chrono::milliseconds interval = default_interval,
                        std::function<clock::time_point()> now = {});

    // Bytes read from the server's stderr; every whole line in them is logged or counted.
    void take(std::string_view data);
    // At end of the stream: logs a last line without its newline, and tells what was not logged.
    void finish();

private:
    void emit();
    void write(std::string const& line) const;
    void tell_untold();

    std::string upstream_;
    capped_lines lines_;
    std::size_t budget_;
    std::chrono::milliseconds interval_;
    std::function<clock::time_point()> now_;
    clock::time_point window_start_{};
    std::size_t logged_in_window_ = 0;
    std::size_t untold_ = 0;        // lines counted, not logged, since the last report
    std::deque<std::string> held_;  // the last tail_lines of them
    bool window_open_ = false;
};

}  // namespace airlock::mcp
