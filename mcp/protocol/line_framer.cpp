#include "mcp/protocol/line_framer.hpp"

namespace airlock::mcp {

void oversized_line::keep_tail(std::string_view more) {
    if (more.size() > tail_bytes) more.remove_prefix(more.size() - tail_bytes);
    tail.append(more);
    if (tail.size() > tail_bytes) tail.erase(0, tail.size() - tail_bytes);
}

std::optional<request_id> oversized_line::id() const {
    return head.id ? head.id : read_trailing_id(tail);
}

void line_framer::start_next() {
    ended_ = false;
    line_.clear();
    if (skipping_) {
        skipping_ = false;
        skipped_ = oversized_line{};
    }
}

line_framer::ended line_framer::take(std::string_view& data) {
    if (ended_) start_next();
    auto nl = data.find('\n');
    auto part = data.substr(0, nl);
    if (!skipping_ && line_.size() + part.size() > max_) {
        // The first bytes are all that is parsed of it; the rest is only counted past.
        // The bytes kept so far belong to its tail too: the id may begin in them.
        skipped_.keep_tail(line_);
        line_.append(part.substr(0, max_ - line_.size()));
        skipped_.head = read_message_head(line_);
        skipping_ = true;
        line_.clear();
    }
    if (skipping_) skipped_.keep_tail(part);
    else line_.append(part);
    if (nl == std::string_view::npos) {
        data = {};
        return ended::none;
    }
    data.remove_prefix(nl + 1);
    ended_ = true;
    return skipping_ ? ended::oversized : ended::line;
}

line_framer::ended line_framer::finish() {
    if (ended_) start_next();
    if (!skipping_ && line_.empty()) return ended::none;
    ended_ = true;
    return skipping_ ? ended::oversized : ended::line;
}

}  // namespace airlock::mcp
