#pragma once
// A journal that airlock serves from, whichever store keeps it: the journal and pin interfaces,
// and what the service needs besides (its health for /readyz, a probe, its shutdown). The LMDB and
// PostgreSQL stores are both one; what only one of them has (LMDB's map, its retention pruning)
// stays on that store's own type.

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/pins.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace airlock::store {

// How full a store with a fixed size is (LMDB's map), for metrics.
struct journal_usage {
    std::size_t used_bytes = 0;
    std::size_t map_size = 0;
    std::uintmax_t file_bytes = 0;
};

class served_journal : public core::journal_store, public core::pin_store {
public:
    // Commits what is queued and stops: later operations fail "closed".
    virtual void close() = 0;
    virtual bool is_open() const noexcept = 0;
    // Why writes fail now ("map_full", "disk_full", "io_error"), cleared by the next write that
    // succeeds; nullopt while they succeed.
    virtual std::optional<core::error> write_fault() const = 0;
    // While write_fault() is set: tries a write, so the fault clears once the store takes writes
    // again even when no call comes to try it (a load balancer sends none to a server not ready).
    virtual boost::asio::awaitable<void> async_probe_write() = 0;
    // A store with a fixed size says how full it is; nullopt for one that grows as it needs.
    virtual std::optional<journal_usage> usage() const { return std::nullopt; }
};

}  // namespace airlock::store
