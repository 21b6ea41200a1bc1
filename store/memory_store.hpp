#pragma once
// A journal store held in memory: the semantics of the LMDB store without the durability, for tests
// and for running airlock with nothing on disk.

#include "core/journal.hpp"
#include "core/pins.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace airlock::store {

class memory_store final : public core::journal_store, public core::pin_store {
public:
    memory_store() = default;

    boost::asio::awaitable<core::result<std::vector<core::record>>> async_append(
        std::string run_id, std::vector<core::new_record> records) override;
    // Nothing to ride along with in memory: an ordinary append.
    boost::asio::awaitable<core::result<std::vector<core::record>>> async_append_deferred(
        std::string run_id, std::vector<core::new_record> records) override;
    boost::asio::awaitable<core::result<std::vector<core::record>>> async_read(std::string run_id,
                                                                               std::uint64_t from_seq = 1) override;
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

private:
    std::map<std::string, core::pin> pins_;  // guarded by mutex_

    struct run_state {
        std::vector<core::record> records;
        std::set<std::string, std::less<>> effect_keys;  // body.effect_key of every effect_started
        core::run_summary summary;
    };

    // The synchronous work behind each coroutine; each takes mutex_ itself, except append_locked,
    // which expects the caller to hold it.
    core::result<std::vector<core::record>> append(std::string const& run_id, std::vector<core::new_record> const& batch);
    core::result<std::vector<core::record>> append_locked(std::string const& run_id,
                                                          std::vector<core::new_record> const& batch);
    core::result<std::vector<core::record>> read(std::string const& run_id, std::uint64_t from_seq);
    core::result<std::optional<core::run_summary>> head(std::string const& run_id);
    core::run_page runs(core::run_filter const& filter);
    core::result<std::optional<core::chain_fault>> verify(std::string const& run_id);
    core::result<core::admission> claim_admission(std::string const& key, std::string const& proposed_run_id);
    core::result<core::record> seal(std::string const& run_id, std::string const& status, std::string const& reason);

    std::mutex mutex_;
    std::map<std::string, run_state> runs_;         // ordered by run id: the order runs() pages in
    std::map<std::string, std::string> admissions_;  // idempotency key → run id
};

}  // namespace airlock::store
