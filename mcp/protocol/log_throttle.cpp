#include "mcp/protocol/log_throttle.hpp"


namespace airlock::mcp {

log_throttle::log_throttle(std::chrono::milliseconds interval, std::function<clock::time_point()> now)
    : interval_(interval), now_(now ? std::move(now) : [] { return clock::now(); }) {}

std::optional<std::string> log_throttle::admit(std::string_view key) {
    auto const t = now_();
    std::lock_guard lock(mutex_);
    auto it = keys_.find(key);
    if (it == keys_.end() && keys_.size() >= max_keys) {
        std::erase_if(keys_, [&](auto const& kv) { return t - kv.second.logged >= interval_; });
        // Still full, every key busy (a client that changes its address for each request, say):
        // new keys share one entry, so that they too cost one line per interval.
        if (keys_.size() >= max_keys) it = keys_.try_emplace(std::string(overflow_key), entry{t, 0}).first;
    }
    if (it == keys_.end()) {
        keys_.emplace(std::string(key), entry{t, 0});
        return std::string();
    }
    auto& e = it->second;
    if (t - e.logged < interval_) {
        ++e.unlogged;
        return std::nullopt;
    }
    auto const unlogged = e.unlogged;
    e = entry{t, 0};
    if (unlogged == 0) return std::string();
    auto const ms = interval_.count();
    auto const every = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
    return " (" + std::to_string(unlogged) + " more like this since the last such line; logged at most once every " +
           every + ")";
}

std::size_t log_throttle::size() const {
    std::lock_guard lock(mutex_);
    return keys_.size();
}

}  // namespace airlock::mcp
