#pragma once
// The embedded journal: LMDB, one writer thread that group-commits whatever is queued, short
// read-only transactions for readers. Nothing to install or start. In fast mode, an append that
// comes when the journal is quiet is committed by its own coroutine, with what is queued ahead of it.

#include "core/journal.hpp"
#include "core/pins.hpp"
#include "store/durability.hpp"
#include "store/served_journal.hpp"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

namespace airlock::store {

struct lmdb_options {
    std::filesystem::path directory;                // created if missing
    std::size_t map_size = std::size_t{1} << 30;    // the most the journal may grow to (1 GiB)
    durability mode = durability::durable;
    std::chrono::milliseconds sync_interval{200};   // fast mode only
    std::size_t max_batch = 4096;                   // appends committed in one transaction at most
    // How long a deferred append (async_append_deferred) may wait for an append that must be
    // committed now to ride along with; past it, it is committed on its own.
    std::chrono::milliseconds defer_limit{10};
    // Called on the committing thread after each group commit with the number of writes it held and the
    // time it took (fsyncs included), for metrics. Must be cheap and must not throw.
    std::function<void(std::size_t writes, std::chrono::steady_clock::duration took)> on_commit;
    // Refuse to open ("journal_busy") while any other store has the journal open: for a compaction,
    // which replaces the file. Otherwise the journal is shared, and only a compaction is kept out.
    bool exclusive = false;
};

class lmdb_store final : public served_journal {
public:
    // Opens (creating when missing) the environment; a corrupt or foreign file gives a clear error.
    static core::result<std::unique_ptr<lmdb_store>> open(lmdb_options options);
    ~lmdb_store() override;  // drains queued appends, stops the writer, syncs and closes

    // Drains queued appends, stops the writer thread and syncs, now: later appends fail "closed".
    // The service calls it at shutdown, so no append can run after the process starts to exit.
    void close() override;
    // False once close() has begun: appends fail from then on.
    bool is_open() const noexcept override;

    // Why appends fail now: map_full, disk_full or io_error, set when a commit fails because of the
    // journal's map, disk or file rather than the append, and cleared by the next commit that makes
    // a write durable. nullopt while appends succeed.
    std::optional<core::error> write_fault() const override;
    // While write_fault() is set (at most once a second): tries to make a 64 KiB write durable, and
    // removes it again, so the fault clears once the journal can take appends again even when no
    // append comes to try it (a load balancer sends no traffic to a server that is not ready).
    boost::asio::awaitable<void> async_probe_write() override;
    struct map_use {
        std::size_t used_bytes = 0;  // LMDB's high-water mark of pages used, pages freed for reuse included
        std::size_t map_size = 0;
        std::uintmax_t file_bytes = 0;  // the size of the data file (data.mdb) on disk
    };
    map_use map_usage() const;
    std::optional<journal_usage> usage() const override;

    // Prunes: removes each of these sealed runs whole (records, index entry, effect entries, and
    // the admissions that name it) in one transaction, so either all go or none. Refuses a run that
    // is unknown or not sealed. Gives the number of records removed. Their pages are reused by
    // later appends; only a compacting copy gives them back to the filesystem.
    boost::asio::awaitable<core::result<std::size_t>> async_remove_sealed(std::vector<std::string> run_ids);
    // A consistent copy of the journal as of one moment, made while appends go on, without free
    // pages, into `directory` (created if missing; refused when it holds a journal already).
    core::result<void> copy_compacted(std::filesystem::path const& directory) const;

    boost::asio::awaitable<core::result<std::vector<core::record>>> async_append(
        std::string run_id, std::vector<core::new_record> records) override;
    // An append whose durability nobody waits for (a gateway call's outcome, written after the
    // reply): it is committed in the same transaction as the next append that must be committed
    // now, or after defer_limit, whichever comes first, and completes then. Records keep the order
    // in which they were submitted, deferred or not; close() commits whatever is deferred.
    boost::asio::awaitable<core::result<std::vector<core::record>>> async_append_deferred(
        std::string run_id, std::vector<core::new_record> records) override;
    boost::asio::awaitable<core::result<std::vector<core::record>>> async_read(std::string run_id,
                                                                               std::uint64_t from_seq) override;
    boost::asio::awaitable<core::result<std::optional<core::run_summary>>> async_head(std::string run_id) override;
    boost::asio::awaitable<core::result<core::run_page>> async_runs(core::run_filter filter) override;
    boost::asio::awaitable<core::result<std::optional<core::chain_fault>>> async_verify(std::string run_id) override;
    boost::asio::awaitable<core::result<core::admission>> async_claim_admission(std::string idempotency_key,
                                                                                std::string proposed_run_id) override;
    boost::asio::awaitable<core::result<core::record>> async_seal(std::string run_id, std::string status,
                                                                  std::string reason) override;

    boost::asio::awaitable<core::result<core::pin_verdict>> async_check_pin(std::string key, std::string digest,
                                                                                std::string definition = {}) override;
    boost::asio::awaitable<core::result<core::pin>> async_accept_pin(std::string key,
                                                                   std::optional<std::string> expected = {}) override;
    boost::asio::awaitable<core::result<std::vector<core::pin>>> async_pins() override;

    // Synchronous forms for the CLI and tests that run outside an io_context.
    core::result<std::vector<core::record>> read(std::string const& run_id, std::uint64_t from_seq = 1) const;
    core::result<std::optional<core::run_summary>> head(std::string const& run_id) const;
    core::result<core::run_page> runs(core::run_filter const& filter) const;
    core::result<std::optional<core::chain_fault>> verify(std::string const& run_id) const;
    // Every run's summary, in run id order, read a page at a time; stops at the first error `each`
    // returns, and returns it.
    core::result<void> each_run(std::function<core::result<void>(core::run_summary const&)> const& each) const;

    struct stats {
        std::uint64_t batches = 0;
        std::uint64_t operations = 0;
    };
    stats writer_stats() const;

    struct impl;

private:
    explicit lmdb_store(std::unique_ptr<impl> p);
    std::unique_ptr<impl> impl_;
};

}  // namespace airlock::store
