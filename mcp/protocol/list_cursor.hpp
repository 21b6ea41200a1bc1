#pragma once
// Cursors for lists airlock merges from several upstreams (tools, resources, resource templates,
// prompts): a position in the merged list — which upstream, that upstream's own cursor for the
// page, how many items of that page were already shown — sealed so that a client can neither read
// nor forge one. Bound to the list and the caller; good for the life of the process.

#include "core/error.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::mcp {

struct list_position {
    std::string upstream;               // the upstream the next page starts in
    std::optional<std::string> cursor;  // that upstream's cursor for the page holding the position
    std::uint64_t skip = 0;             // items of that page already shown
    friend bool operator==(list_position const&, list_position const&) = default;
};

class list_cursor_sealer {
public:
    explicit list_cursor_sealer(std::array<std::uint8_t, 32> key) : key_(key) {}
    // `list` names the listing (its method), `principal` the caller.
    std::string seal(std::string_view list, std::string_view principal, list_position const& pos) const;
    // Errors (code "invalid_cursor"): not one of ours, altered, or issued for another list or caller.
    core::result<list_position> open(std::string_view cursor, std::string_view list, std::string_view principal) const;

private:
    std::array<std::uint8_t, 32> key_;
};

}  // namespace airlock::mcp
