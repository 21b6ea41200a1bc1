#include "core/pins.hpp"

namespace airlock::core {

std::pair<pin, pin_verdict> apply_pin_check(std::optional<pin> current, std::string const& key, std::string const& digest,
                                            std::string const& definition) {
    if (!current) return {pin{key, digest, std::nullopt, definition, {}}, pin_verdict::first_seen};
    if (current->pinned == digest) {
        // Back to the pinned definition: whatever was pending is moot.
        current->pending.reset();
        current->pending_definition.clear();
        // A pin that kept only its digest learns its definition now that it is seen again.
        if (current->pinned_definition.empty()) current->pinned_definition = definition;
        return {*current, pin_verdict::matches};
    }
    current->pending = digest;
    if (!definition.empty()) current->pending_definition = definition;
    return {*current, pin_verdict::changed};
}

result<pin> apply_pin_accept(std::optional<pin> current, std::string const& key,
                             std::optional<std::string> const& expected) {
    if (!current || !current->pending)
        return make_error("no_pending", "no changed definition of " + key + " awaits acceptance");
    if (expected && *expected != *current->pending)
        return make_error("pending_changed", "the definition of " + key +
                                                 " changed again since it was reviewed; the pending one is now " +
                                                 *current->pending);
    current->pinned = *std::exchange(current->pending, std::nullopt);
    current->pinned_definition = std::exchange(current->pending_definition, {});
    return *current;
}

}  // namespace airlock::core
