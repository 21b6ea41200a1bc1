#include "mcp/client/stderr_log.hpp"

#include "core/secrets.hpp"

#include <spdlog/spdlog.h>

namespace airlock::mcp {

namespace {

// stderr is for humans; a single log record beyond this is truncated rather than skipped.
constexpr std::size_t line_cap = 16 * 1024;

std::string every(std::chrono::milliseconds interval) {
    auto const ms = interval.count();
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

}  // namespace

stderr_log::stderr_log(std::string upstream, std::size_t lines, std::chrono::milliseconds interval,
                       std::function<clock::time_point()> now)
    : upstream_(std::move(upstream)),
      lines_(line_cap),
      budget_(lines),
      interval_(interval),
      now_(now ? std::move(now) : [] { return clock::now(); }) {}

void stderr_log::take(std::string_view data) {
    while (!data.empty())
        if (lines_.take(data)) emit();
}

void stderr_log::finish() {
    if (lines_.finish()) emit();
    tell_untold();
}

void stderr_log::emit() {
    auto const t = now_();
    if (!window_open_ || t - window_start_ >= interval_) {
        tell_untold();
        window_open_ = true;
        window_start_ = t;
        logged_in_window_ = 0;
    }
    std::string line = lines_.line();
    // The log hides whole secrets; a line cut at the cap may end in part of one.
    if (lines_.truncated()) core::secrets::redact_cut(line);
    if (lines_.truncated()) line += " [truncated]";
    if (logged_in_window_ == budget_) {
        // Said once per interval, at the first line held back, so that the log shows at once why
        // the server's lines stop.
        if (untold_++ == 0)
            spdlog::warn(
                "upstream {}: its stderr wrote more than {} lines within {}; further lines are counted, not logged",
                upstream_, budget_, every(interval_));
        // The last lines are kept: what a server writes just before it dies says why.
        held_.push_back(std::move(line));
        if (held_.size() > tail_lines) held_.pop_front();
        return;
    }
    ++logged_in_window_;
    write(line);
}

void stderr_log::write(std::string const& line) const {
    // A server's diagnostics are not errors by themselves (the spec says so): info level.
    spdlog::info("upstream {} stderr: {}", upstream_, line);
}

void stderr_log::tell_untold() {
    if (untold_ == 0) return;
    spdlog::warn("upstream {}: {} lines of its stderr were not logged (at most {} are, every {}); the last {} follow",
                 upstream_, untold_, budget_, every(interval_), held_.size());
    for (auto const& line : held_) write(line);
    held_.clear();
    untold_ = 0;
}

}  // namespace airlock::mcp
