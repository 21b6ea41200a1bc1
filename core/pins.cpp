#include "core/pins.hpp"

namespace airlock::core {

std::pair<pin, pin_verdict> apply_pin_check(std::optional<pin> current, std::string const& key, std::string const& digest) {
    if (!current) return {pin{key, digest, std::nullopt}, pin_verdict::first_seen};
    if (current->pinned == digest) {
        // Back to the pinned definition: whatever was pending is moot.
        current->pending.reset();
        return {*current, pin_verdict::matches};
    }
    current->pending = digest;
    return {*current, pin_verdict::changed};
}

}  // namespace airlock::core
