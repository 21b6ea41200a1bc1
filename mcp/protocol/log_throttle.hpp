#pragma once
// Repeated log lines, bounded. An event that a client or an upstream can make happen in a loop (a
// notification dropped for a stream that is not read, a request refused at the door, a line skipped)
// is logged the first time at once, then at most once per interval, each line saying how many like
// it were not logged since the last one. One line per event made airlock's own log the flood: one
// client not reading its stream wrote 359,314 lines in 30 s.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::mcp {

class log_throttle {
public:
    using clock = std::chrono::steady_clock;
    static constexpr std::chrono::milliseconds default_interval{10'000};
    // Keys remembered at once; past this, keys whose interval is over are forgotten (a key made of
    // client input must not grow the map without end), and while all are busy, new keys are
    // throttled together, as one.
    static constexpr std::size_t max_keys = 256;

    explicit log_throttle(std::chrono::milliseconds interval = default_interval,
                          std::function<clock::time_point()> now = {});

    // Whether an occurrence of `key`'s event is logged now: nullopt when it is only counted;
    // otherwise the text to append to its line, which names how many went unlogged since the
    // last line of that key ("" when none did). The count is told by the next occurrence after
    // the interval: a burst that stops for good leaves its last count untold. Thread-safe.
    std::optional<std::string> admit(std::string_view key);
    // How many keys it remembers now.
    std::size_t size() const;

private:
    struct entry {
        clock::time_point logged;
        std::uint64_t unlogged = 0;
    };
    static constexpr std::string_view overflow_key{"\0overflow", 9};
    std::chrono::milliseconds interval_;
    std::function<clock::time_point()> now_;
    mutable std::mutex mutex_;
    std::map<std::string, entry, std::less<>> keys_;
};

}  // namespace airlock::mcp
