#pragma once
// Where the process is in its life. Signals move it forward; /readyz and the listeners read it.

#include <atomic>

namespace airlock::service {

class lifecycle {
public:
    // True from the first SIGTERM/SIGINT on: readiness fails, new work is refused, in-flight work ends.
    bool draining() const noexcept { return draining_.load(std::memory_order_acquire); }
    void begin_drain() noexcept { draining_.store(true, std::memory_order_release); }

private:
    std::atomic<bool> draining_{false};
};

}  // namespace airlock::service
