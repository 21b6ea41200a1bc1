#pragma once
// What each journal operation reads and writes in PostgreSQL, as statements on one connection
// inside the caller's transaction (writes) or on their own (reads). The rules are core's
// (plan_append, make_seal, apply_pin_*); these functions only move rows. A write refuses before it
// writes anything, or fails with the transaction aborted: the committing thread relies on that.
// Internal to store/ (postgres_store.cpp is their user).

#include "core/journal.hpp"
#include "core/pins.hpp"
#include "store/pg_connection.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace airlock::store::pg {

// Where an append learns its run's head, and tells what the head became: by default the database
// (the run's row, locked); the writer passes its cache of the heads it committed (postgres_store).
// With `optimistic`, effect keys are not looked up before they are written: the effects table's
// primary key refuses a second start, which aborts the transaction, and the writer runs the op
// again without the cache, when the lookup says why.
struct heads {
    std::function<core::result<std::optional<core::run_summary>>(std::string const& run_id)> current;
    std::function<void(core::run_summary const&)> wrote;
    bool optimistic = false;
};

// Writes, in the caller's transaction.
core::result<std::vector<core::record>> append(connection& conn, std::string const& run_id,
                                               std::vector<core::new_record> const& batch, heads const* cache = nullptr);
core::result<core::record> seal(connection& conn, std::string const& run_id, std::string const& status,
                                std::string const& reason, heads const* cache = nullptr);
core::result<core::admission> claim_admission(connection& conn, std::string const& key, std::string const& proposed);
core::result<core::pin_verdict> check_pin(connection& conn, std::string const& key, std::string const& digest,
                                          std::string const& definition);
core::result<core::pin> accept_pin(connection& conn, std::string const& key, std::optional<std::string> const& expected);

// Reads.
core::result<std::optional<core::run_summary>> head(connection& conn, std::string const& run_id, bool for_update = false);
core::result<std::vector<core::record>> read(connection& conn, std::string const& run_id, std::uint64_t from_seq);
core::result<core::run_page> runs(connection& conn, core::run_filter const& filter);
core::result<std::vector<core::pin>> pins(connection& conn);

}  // namespace airlock::store::pg
