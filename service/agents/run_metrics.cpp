#include "service/agents/run_metrics.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <map>

namespace airlock::service {

namespace asio = boost::asio;

status_counting_journal::status_counting_journal(std::shared_ptr<core::journal_store> inner,
                                                 std::shared_ptr<airlock_metrics> metrics)
    : inner_(std::move(inner)), metrics_(std::move(metrics)) {}

void status_counting_journal::moved(std::string const& from, std::string const& to) {
    if (from == to) return;
    if (!from.empty()) metrics_->runs.with({from}).sub();
    if (!to.empty()) metrics_->runs.with({to}).add();
}

asio::awaitable<core::result<std::vector<core::record>>> status_counting_journal::async_append(
    std::string run_id, std::vector<core::new_record> records) {
    // The status the batch leaves the run in, and whether the one it starts from must be read.
    std::optional<std::string> after;
    std::vector<std::string> denials;
    bool admits = false;
    for (auto const& r : records) {
        switch (r.kind) {
            case core::record_kind::run_admitted:
                admits = true;
                after = "running";
                break;
            case core::record_kind::approval_requested: after = "awaiting_approval"; break;
            case core::record_kind::approval_decided: after = "running"; break;
            case core::record_kind::run_sealed:
                if (auto s = r.body.if_contains("status"); s && s->is_string()) after = std::string(s->as_string());
                break;
            case core::record_kind::policy_denied: {
                // Refusals of agent runs' calls, by reason, beside the gateway's.
                auto reason = r.body.if_contains("reason");
                denials.push_back(reason && reason->is_string() ? std::string(reason->as_string()) : std::string("other"));
                break;
            }
            default: break;
        }
    }
    std::string before;
    if (after && !admits) {
        // One driver appends to a run at a time, so nothing moves it between this read and the append.
        auto head = co_await inner_->async_head(run_id);
        if (head && *head) before = (*head)->status;
    }
    auto appended = co_await inner_->async_append(std::move(run_id), std::move(records));
    if (appended && after) moved(before, *after);
    if (appended)
        for (auto const& reason : denials) metrics_->policy_denials.with({reason}).inc();
    co_return appended;
}

asio::awaitable<core::result<core::record>> status_counting_journal::async_seal(std::string run_id, std::string status,
                                                                                std::string reason) {
    auto head = co_await inner_->async_head(run_id);
    std::string before = head && *head ? (*head)->status : std::string();
    auto to = status;
    auto sealed = co_await inner_->async_seal(std::move(run_id), std::move(status), std::move(reason));
    if (sealed) moved(before, to);
    co_return sealed;
}

asio::awaitable<core::result<std::vector<core::record>>> status_counting_journal::async_read(std::string run_id,
                                                                                             std::uint64_t from_seq) {
    co_return co_await inner_->async_read(std::move(run_id), from_seq);
}

asio::awaitable<core::result<std::optional<core::run_summary>>> status_counting_journal::async_head(std::string run_id) {
    co_return co_await inner_->async_head(std::move(run_id));
}

asio::awaitable<core::result<core::run_page>> status_counting_journal::async_runs(core::run_filter filter) {
    co_return co_await inner_->async_runs(std::move(filter));
}

asio::awaitable<core::result<std::optional<core::chain_fault>>> status_counting_journal::async_verify(std::string run_id) {
    co_return co_await inner_->async_verify(std::move(run_id));
}

asio::awaitable<core::result<core::admission>> status_counting_journal::async_claim_admission(std::string idempotency_key,
                                                                                              std::string proposed_run_id) {
    co_return co_await inner_->async_claim_admission(std::move(idempotency_key), std::move(proposed_run_id));
}

core::result<void> count_runs(core::journal_store& journal, std::set<std::string> const& agents, airlock_metrics& metrics) {
    std::map<std::string, std::int64_t> by_status;
    core::run_filter filter;
    filter.limit = 10000;
    for (;;) {
        // Before serving starts, on a loop of its own: the store completes on whichever loop asks.
        asio::io_context ioc;
        auto pending = asio::co_spawn(ioc, journal.async_runs(filter), asio::use_future);
        ioc.run();
        auto page = pending.get();
        if (!page) return page.error();
        for (auto const& r : page->runs)
            if (agents.contains(r.agent)) ++by_status[r.status];
        if (!page->next_cursor) break;
        filter.cursor = page->next_cursor;
    }
    for (auto const& [status, n] : by_status) metrics.runs.with({status}).set(n);
    return {};
}

}  // namespace airlock::service
