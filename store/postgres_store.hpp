#pragma once
// The shared journal: PostgreSQL, for replicas that share nothing but the database. One writer
// connection on its own thread group-commits whatever is queued (many runs' appends, one
// transaction, one WAL flush); a small pool of reader connections, each on its own thread, serves
// reads. The rules of every append are core's, as in the other stores.

#include "core/journal.hpp"
#include "core/pins.hpp"
#include "store/durability.hpp"
#include "store/served_journal.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::store {

// The version of the PostgreSQL journal's schema this airlock reads and writes.
inline constexpr int postgres_schema_version = 1;

// A libpq URL or key=value string with its password, if any, shown as ***: for messages and logs.
std::string redact_postgres_url(std::string_view url);

struct postgres_options {
    std::string conninfo;  // a libpq URI (postgres://user@host:port/db) or key=value string
    durability mode = durability::durable;
    std::size_t readers = 2;          // reader connections (threads); at least 1
    std::size_t max_batch = 1024;     // appends committed in one transaction at most
    std::chrono::milliseconds defer_limit{10};        // see journal_store::async_append_deferred
    std::chrono::milliseconds statement_timeout{10'000};
    std::chrono::milliseconds connect_timeout{5'000};
    // After a lost connection, reconnects are tried at most this often at first, doubling up to
    // reconnect_max; operations that come meanwhile fail at once with "io_error".
    std::chrono::milliseconds reconnect_min{100};
    std::chrono::milliseconds reconnect_max{5'000};
    // Create the schema when the database has none. An older schema is always refused, with the
    // command that migrates it (`airlock journal migrate-schema`).
    bool create_if_empty = true;
    // Hold the database's airlock-serving lock (a session advisory lock, on a connection of its own)
    // while open, and refuse to open ("journal_busy") while another store holds it: for `airlock
    // serve` and its kin until run leases let replicas share a journal (docs/scale-out.md).
    bool exclusive = false;
    // As lmdb_options::on_commit: after each group commit, on the writer thread.
    std::function<void(std::size_t writes, std::chrono::steady_clock::duration took)> on_commit;
};

class postgres_store final : public served_journal {
public:
    // Connects every connection and checks the schema; "io_error" when the server cannot be reached,
    // "schema_*" when its schema is not this binary's.
    static core::result<std::unique_ptr<postgres_store>> open(postgres_options options);
    ~postgres_store() override;  // commits what is queued, then closes every connection

    // Commits what is queued and stops the threads, now: later operations fail "closed".
    void close() override;
    bool is_open() const noexcept override;

    // Why writes fail now ("io_error": the database is unreachable or does not answer), cleared by
    // the next commit that succeeds; nullopt while writes succeed.
    std::optional<core::error> write_fault() const override;
    // A one-row write through the writer: it reconnects, and its commit clears the fault.
    boost::asio::awaitable<void> async_probe_write() override;

    struct stats {
        std::uint64_t batches = 0;     // transactions committed or tried
        std::uint64_t operations = 0;  // operations they held
        std::uint64_t reconnects = 0;  // connections replaced after one was lost
    };
    stats writer_stats() const;

    boost::asio::awaitable<core::result<std::vector<core::record>>> async_append(
        std::string run_id, std::vector<core::new_record> records) override;
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

    struct impl;

private:
    explicit postgres_store(std::unique_ptr<impl> p);
    std::unique_ptr<impl> impl_;
};

// `airlock journal migrate-schema`: brings the database's schema to this binary's version and
// returns the version it had (0: none). Refuses a newer one.
core::result<int> migrate_postgres_schema(std::string const& conninfo);

}  // namespace airlock::store
