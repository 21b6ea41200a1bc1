#include "store/memory_store.hpp"

#include "core/journal_rules.hpp"
#include "core/rfc3339.hpp"
#include "core/secrets.hpp"

#include <algorithm>
#include <utility>

namespace airlock::store {

core::result<std::vector<core::record>> memory_store::append(std::string const& run_id,
                                                             std::vector<core::new_record> const& batch) {
    if (auto ok = core::check_run_id(run_id); !ok) return ok.error();
    std::lock_guard lock(mutex_);
    return append_locked(run_id, batch);
}

core::result<std::vector<core::record>> memory_store::append_locked(std::string const& run_id,
                                                                    std::vector<core::new_record> const& batch) {
    // The rules live in core::plan_append, shared with the LMDB store, so the two cannot drift; this
    // store's part is atomicity: the plan is computed under the lock and written only if whole.
    auto found = runs_.find(run_id);
    run_state* state = found == runs_.end() ? nullptr : &found->second;
    std::optional<core::run_summary> current;
    if (state) current = state->summary;
    auto started_before = [state](std::string_view effect_key) {
        return state && state->effect_keys.contains(effect_key);
    };
    auto plan = core::plan_append(run_id, current, batch, started_before);
    if (!plan) return plan.error();

    if (!state) state = &runs_[run_id];
    state->summary = std::move(plan->summary);
    for (auto& key : plan->new_effects) state->effect_keys.insert(std::move(key));
    state->records.insert(state->records.end(), plan->records.begin(), plan->records.end());
    return std::move(plan->records);
}

core::result<std::vector<core::record>> memory_store::read(std::string const& run_id, std::uint64_t from_seq) {
    if (auto ok = core::check_run_id(run_id); !ok) return ok.error();
    std::lock_guard lock(mutex_);
    auto found = runs_.find(run_id);
    // A run that was never admitted has no records; head() is how a caller tells it apart.
    if (found == runs_.end()) return std::vector<core::record>{};
    auto const& records = found->second.records;
    // seq is 1-based and contiguous, so record n sits at index n - 1; from_seq 0 reads from the start.
    std::size_t start = from_seq == 0 ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(from_seq - 1, records.size()));
    return std::vector<core::record>(records.begin() + static_cast<std::ptrdiff_t>(start), records.end());
}

core::result<std::optional<core::run_summary>> memory_store::head(std::string const& run_id) {
    if (auto ok = core::check_run_id(run_id); !ok) return ok.error();
    std::lock_guard lock(mutex_);
    auto found = runs_.find(run_id);
    if (found == runs_.end()) return std::optional<core::run_summary>();
    return std::optional<core::run_summary>(found->second.summary);
}

core::run_page memory_store::runs(core::run_filter const& filter) {
    std::lock_guard lock(mutex_);
    core::run_page page;
    // A limit of 0 would hand back the cursor it was given, and a caller paging on it would never
    // finish; like the LMDB store, it reads as 1.
    std::size_t const limit = filter.limit == 0 ? 1 : filter.limit;
    auto it = filter.cursor ? runs_.upper_bound(*filter.cursor) : runs_.begin();
    for (; it != runs_.end(); ++it) {
        core::run_summary const& s = it->second.summary;
        if (!core::matches(filter, s)) continue;
        if (page.runs.size() == limit) {
            // One more match exists past the page: only then is there a next page to point at.
            page.next_cursor = page.runs.back().run_id;
            break;
        }
        page.runs.push_back(s);
    }
    return page;
}

core::result<std::optional<core::chain_fault>> memory_store::verify(std::string const& run_id) {
    std::vector<core::record> records;
    {
        // Hashing happens outside the lock so a long verify does not stall appends to other runs.
        std::lock_guard lock(mutex_);
        auto found = runs_.find(run_id);
        if (found == runs_.end()) return core::make_error(core::errc::unknown_run, "run '" + run_id + "' is not in the journal");
        records = found->second.records;
    }
    return core::verify_chain(records);
}

core::result<core::admission> memory_store::claim_admission(std::string const& key,
                                                             std::string const& proposed_run_id) {
    if (key.empty()) return core::make_error("invalid_key", "idempotency key is empty");
    std::lock_guard lock(mutex_);
    auto [it, fresh] = admissions_.try_emplace(key, proposed_run_id);
    return core::admission{it->second, fresh};
}

core::result<core::record> memory_store::seal(std::string const& run_id, std::string const& status,
                                              std::string const& reason) {
    if (auto ok = core::check_run_id(run_id); !ok) return ok.error();
    std::lock_guard lock(mutex_);
    auto found = runs_.find(run_id);
    if (found == runs_.end()) return core::make_error(core::errc::unknown_run, "run '" + run_id + "' is not in the journal");
    // The head is read under the same lock as the append, so chain_head is the record the seal follows.
    auto sealing = core::make_seal(found->second.summary, status, reason, core::rfc3339(std::chrono::system_clock::now()));
    if (!sealing) return sealing.error();
    auto appended = append_locked(run_id, {std::move(*sealing)});
    if (!appended) return appended.error();
    return std::move(appended->front());
}

boost::asio::awaitable<core::result<std::vector<core::record>>> memory_store::async_append(
    std::string run_id, std::vector<core::new_record> records) {
    // As the LMDB store does: secrets hidden before the record is hashed.
    for (auto& r : records) core::secrets::redact(r.body);
    co_return append(run_id, records);
}

boost::asio::awaitable<core::result<std::vector<core::record>>> memory_store::async_append_deferred(
    std::string run_id, std::vector<core::new_record> records) {
    co_return co_await async_append(std::move(run_id), std::move(records));
}

boost::asio::awaitable<core::result<std::vector<core::record>>> memory_store::async_read(std::string run_id,
                                                                                          std::uint64_t from_seq) {
    co_return read(run_id, from_seq);
}

boost::asio::awaitable<core::result<std::optional<core::run_summary>>> memory_store::async_head(std::string run_id) {
    co_return head(run_id);
}

boost::asio::awaitable<core::result<core::run_page>> memory_store::async_runs(core::run_filter filter) {
    co_return runs(filter);
}

boost::asio::awaitable<core::result<std::optional<core::chain_fault>>> memory_store::async_verify(std::string run_id) {
    co_return verify(run_id);
}

boost::asio::awaitable<core::result<core::admission>> memory_store::async_claim_admission(std::string idempotency_key,
                                                                                           std::string proposed_run_id) {
    co_return claim_admission(idempotency_key, proposed_run_id);
}

boost::asio::awaitable<core::result<core::record>> memory_store::async_seal(std::string run_id, std::string status,
                                                                            std::string reason) {
    core::secrets::redact(reason);
    co_return seal(run_id, status, reason);
}

boost::asio::awaitable<core::result<core::pin_verdict>> memory_store::async_check_pin(std::string key, std::string digest,
                                                                                   std::string definition) {
    std::lock_guard lock(mutex_);
    core::secrets::redact(definition);
    std::optional<core::pin> current;
    if (auto it = pins_.find(key); it != pins_.end()) current = it->second;
    auto [next, verdict] = core::apply_pin_check(std::move(current), key, digest, definition);
    pins_[key] = std::move(next);
    co_return verdict;
}

boost::asio::awaitable<core::result<core::pin>> memory_store::async_accept_pin(std::string key,
                                                                           std::optional<std::string> expected) {
    std::lock_guard lock(mutex_);
    std::optional<core::pin> current;
    if (auto it = pins_.find(key); it != pins_.end()) current = it->second;
    auto next = core::apply_pin_accept(std::move(current), key, expected);
    if (next) pins_[key] = *next;
    co_return next;
}

boost::asio::awaitable<core::result<std::vector<core::pin>>> memory_store::async_pins() {
    std::lock_guard lock(mutex_);
    std::vector<core::pin> out;
    for (auto const& [k, p] : pins_) out.push_back(p);
    co_return out;
}

}  // namespace airlock::store
