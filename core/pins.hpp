#pragma once
// Rug-pull protection: the first definition seen of each upstream tool is pinned by digest; a later,
// different definition is held as pending and the tool withheld until an operator accepts it.

#include "core/error.hpp"

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>
#include <vector>

namespace airlock::core {

struct pin {
    std::string key;                     // "server/tool" (the upstream's own tool name)
    std::string pinned;                  // hex SHA-256 of the canonical definition first seen (or accepted)
    std::optional<std::string> pending;  // a different definition seen since, awaiting acceptance
    // The definitions themselves, as JSON text, so an operator can review a change before accepting
    // it (airlock pins show). Empty when not kept: a pin written by an airlock that kept only digests
    // gets its pinned definition the next time that definition is seen.
    std::string pinned_definition;
    std::string pending_definition;
};

enum class pin_verdict {
    first_seen,  // no pin existed: this definition is now pinned
    matches,     // the definition is the pinned one
    changed,     // it differs: recorded as pending; the tool must be withheld
};

class pin_store {
public:
    virtual ~pin_store() = default;
    // Compares `digest` with the pin for `key`, pinning it when there is none (atomically);
    // `definition` (JSON text) is kept beside the digest it has.
    virtual boost::asio::awaitable<result<pin_verdict>> async_check_pin(std::string key, std::string digest,
                                                                        std::string definition = {}) = 0;
    // Makes the pending definition the pinned one; fails "no_pending" when nothing waits, and
    // "pending_changed" when `expected` is given and the pending digest is another (the definition
    // changed again since it was reviewed). One transaction: nothing slips in between.
    virtual boost::asio::awaitable<result<pin>> async_accept_pin(std::string key,
                                                                 std::optional<std::string> expected = {}) = 0;
    virtual boost::asio::awaitable<result<std::vector<pin>>> async_pins() = 0;
};

// The pure rule both stores apply: given the current pin (if any) and a digest, the new pin and verdict.
std::pair<pin, pin_verdict> apply_pin_check(std::optional<pin> current, std::string const& key, std::string const& digest,
                                            std::string const& definition = {});
// The rule of acceptance: the pending definition becomes the pinned one; fails "no_pending" when
// nothing waits.
result<pin> apply_pin_accept(std::optional<pin> current, std::string const& key,
                             std::optional<std::string> const& expected = {});

}  // namespace airlock::core
