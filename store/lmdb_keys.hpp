#pragma once
// How the LMDB journal lays out its keys, and what LMDB's error codes mean to a caller. Internal to
// store/: the file format is these bytes, so a change here is a change of format.

#include "core/error.hpp"
#include "core/pins.hpp"

#include <lmdb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::store::detail {

// An LMDB return code as the journal's error: map_full, corrupt, disk_full or io_error, saying
// what was being done.
core::error lmdb_error(int rc, std::string_view during);

inline MDB_val as_val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
inline std::string_view as_view(MDB_val const& v) { return {static_cast<char const*>(v.mv_data), v.mv_size}; }

// Records sort by run, then seq: the run id, a NUL, then the seq big-endian.
std::string record_key(std::string_view run_id, std::uint64_t seq);

// Effect and admission keys are caller-chosen and unbounded; LMDB keys are at most 511 bytes, so
// they are stored by digest.
std::string effect_db_key(std::string_view run_id, std::string_view effect_key);
std::string admission_db_key(std::string_view key);

// A pin as the pins table keeps it: {"pinned", "pending"?, "pinned_definition"?, "pending_definition"?}.
core::result<std::optional<core::pin>> read_pin(MDB_txn* txn, MDB_dbi dbi, std::string const& key);
core::result<void> write_pin(MDB_txn* txn, MDB_dbi dbi, core::pin const& p);
core::result<void> check_pin_key(std::string const& key);

}  // namespace airlock::store::detail
