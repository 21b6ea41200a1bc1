#pragma once
// airlock_runs{status}: agent runs by status. The runner's journal is wrapped so that every record
// that moves a run from one status to another (run_admitted, approval_requested, approval_decided,
// run_sealed) moves the gauge with it, once it is durable; at start the journal is counted once.

#include "core/journal.hpp"
#include "service/ops/metrics.hpp"

#include <memory>
#include <set>
#include <string>

namespace airlock::service {

// Passes everything through to `inner`; notes the status each appended batch leaves its run in.
class status_counting_journal final : public core::journal_store {
public:
    status_counting_journal(std::shared_ptr<core::journal_store> inner, std::shared_ptr<airlock_metrics> metrics);

    boost::asio::awaitable<core::result<std::vector<core::record>>> async_append(std::string run_id,
                                                                                 std::vector<core::new_record> records) override;
    boost::asio::awaitable<core::result<std::vector<core::record>>> async_read(std::string run_id,
                                                                               std::uint64_t from_seq) override;
    boost::asio::awaitable<core::result<std::optional<core::run_summary>>> async_head(std::string run_id) override;
    boost::asio::awaitable<core::result<core::run_page>> async_runs(core::run_filter filter) override;
    boost::asio::awaitable<core::result<std::optional<core::chain_fault>>> async_verify(std::string run_id) override;
    boost::asio::awaitable<core::result<core::admission>> async_claim_admission(std::string idempotency_key,
                                                                                std::string proposed_run_id) override;
    boost::asio::awaitable<core::result<core::record>> async_seal(std::string run_id, std::string status,
                                                                  std::string reason) override;

private:
    void moved(std::string const& from, std::string const& to);
    std::shared_ptr<core::journal_store> inner_;
    std::shared_ptr<airlock_metrics> metrics_;
};

// Sets airlock_runs from the runs of these agents the journal holds (gateway session runs are not
// agent runs). Called once at start, before any run is driven.
core::result<void> count_runs(core::journal_store& journal, std::set<std::string> const& agents, airlock_metrics& metrics);

}  // namespace airlock::service
