#pragma once
// Brings the run index of a journal written by an earlier airlock up to today's: entries written
// before runs had kinds get their kind, and a gateway session's run its owner, from the run's first
// record. Done once, when a store opens the journal; a key in the meta table then says the index is
// current, so later opens read one key. Internal to store/.

#include "core/error.hpp"

#include <lmdb.h>

#include <cstddef>

namespace airlock::store::detail {

// Inside `txn` (a write transaction): returns how many index entries it rewrote.
core::result<std::size_t> upgrade_run_index(MDB_txn* txn, MDB_dbi runs, MDB_dbi records, MDB_dbi meta);

}  // namespace airlock::store::detail
