#include "mcp/protocol/capped_lines.hpp"

namespace airlock::mcp {

bool capped_lines::take(std::string_view& data) {
    if (ended_) {
        line_.clear();
        truncated_ = false;
        ended_ = false;
    }
    auto const nl = data.find('\n');
    auto const part = data.substr(0, nl);
    if (line_.size() + part.size() > cap_) {
        line_.append(part.substr(0, cap_ - line_.size()));
        truncated_ = true;
    } else if (!truncated_) {
        line_.append(part);
    }
    if (nl == std::string_view::npos) {
        data = {};
        return false;
    }
    data.remove_prefix(nl + 1);
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    ended_ = true;
    return true;
}

bool capped_lines::finish() {
    if (ended_) return false;
    ended_ = true;
    return !line_.empty();
}

}  // namespace airlock::mcp
