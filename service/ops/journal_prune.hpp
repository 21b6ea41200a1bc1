#pragma once
// Retention: the sealed runs that are old enough leave the journal, exported first when asked, and
// the journal says what left. What stays verifies as before: a run is removed whole or not at all,
// and no chain links to another run's records.

#include "core/error.hpp"
#include "core/journal.hpp"
#include "store/lmdb_store.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace airlock::service::ops {

struct prune_request {
    std::chrono::sys_seconds sealed_before;
    // Each pruned run is written here first, one file per run (RUN.jsonl, as `journal export`
    // writes it, so `journal import` takes it back); nothing is removed unless every file is written.
    std::optional<std::filesystem::path> export_to;
    bool dry_run = false;  // list what would go, remove nothing, journal nothing
};

struct pruned_run {
    std::string run_id;
    std::string status;
    std::string sealed_at;  // the seal's time, or the admission's for seals that predate it
    std::uint64_t head_seq = 0;
    std::string head_hash;  // hex: what an export of the run must end with
};

struct prune_report {
    std::vector<pruned_run> runs;
    std::size_t records = 0;  // records removed
    std::string record_run;   // the run that journals this prune ("" on a dry run or when nothing went)
};

// The sealed runs sealed before the cutoff, oldest admission first. Runs still running, awaiting
// approval or quarantined (an effect in doubt) are never chosen, however old; nor are the runs
// that journal earlier prunes, which are what an auditor matches exports against.
core::result<std::vector<pruned_run>> prunable_runs(store::lmdb_store const& journal, std::chrono::sys_seconds sealed_before);

// Chooses, exports (when asked), journals the list as a run of its own (a note with each run's id,
// status, last seq and final hash), removes the runs, then seals that run: succeeded, or failed
// with why when the removal failed (then nothing was removed).
boost::asio::awaitable<core::result<prune_report>> async_prune(store::lmdb_store& journal, prune_request request);

// Records as canonical JSON lines, the export format `journal import` reads.
core::result<void> write_records(std::ostream& out, std::vector<core::record> const& records);
// The same into `file` (replaced), failing when it cannot be written whole.
core::result<void> write_run_file(std::vector<core::record> const& records, std::filesystem::path const& file);

// The agent name of the runs that journal prunes.
inline constexpr std::string_view prune_agent = "airlock-journal";

}  // namespace airlock::service::ops
