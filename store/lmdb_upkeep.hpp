#pragma once
// The LMDB journal's upkeep: removing sealed runs, the compacting copy, and the lock that tells a
// compaction whether anybody else has the journal open. Internal to store/.

#include "core/error.hpp"
#include "core/journal.hpp"

#include <lmdb.h>

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>

namespace airlock::store::detail {

struct journal_tables {
    MDB_dbi records = 0, runs = 0, effects = 0, admissions = 0;
};

// Deletes one sealed run whole inside `txn`: its records, the effect entries its effect_started
// records made, and its index entry. A run that is not sealed is refused: only a finished chain
// may go, and it goes entirely or not at all.
core::result<std::size_t> remove_sealed_run(MDB_txn* txn, journal_tables const& t, core::run_summary const& run);

// Deletes the admissions (idempotency keys) that name one of `runs`: a retry of a pruned run's
// request is then a new run, not an answer pointing at nothing.
core::result<std::size_t> remove_admissions_of(MDB_txn* txn, MDB_dbi admissions, std::set<std::string> const& runs);

// A consistent copy of the open environment as of one moment, without its free pages, into
// `directory` (created if missing; refused when it already holds a journal).
core::result<void> copy_compacted(MDB_env* env, std::filesystem::path const& directory);

// A lock on DIR/airlock.lock held for as long as a store has the journal open: shared by default
// (servers and the CLI may share a journal, LMDB serialises their writes), exclusive for a
// compaction, which replaces the file under everyone else. -1 and an error when it is not free.
core::result<int> lock_journal(std::filesystem::path const& directory, bool exclusive);
void unlock_journal(int fd) noexcept;

}  // namespace airlock::store::detail
