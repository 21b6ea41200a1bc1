#include "service/agents/runner_driver.hpp"
#include "service/agents/runner_slots.hpp"
#include "service/agents/runner.hpp"

#include "mcp/client/spawn_logged.hpp"

#include <boost/asio/strand.hpp>

#include <spdlog/spdlog.h>

// The runner's slots: which runs are being driven, the queue of resumed runs waiting for room, the
// async_wait callers to wake, and the start of a run's driver on a strand of its own.

namespace airlock::service {

namespace asio = boost::asio;


std::size_t runner::active_runs() const {
    std::lock_guard lock(mutex_);
    return active_.size();
}

void runner::stop() {
    std::lock_guard lock(mutex_);
    stopping_ = true;
}

std::shared_ptr<runner::run_slot> runner::claim_slot(std::string const& run_id, bool count_against_limit,
                                                     core::error& why) {
    std::lock_guard lock(mutex_);
    if (stopping_) {
        why = core::make_error("stopping", "airlock is shutting down; the run continues after the restart");
        return nullptr;
    }
    if (active_.contains(run_id)) {
        why = core::make_error("run_busy", "run " + run_id + " is being driven right now");
        return nullptr;
    }
    // Resumed runs still queued go first: a slot that frees up is theirs before a new admission's.
    if (count_against_limit && (active_.size() >= options_.max_concurrent_runs || !resume_queue_.empty())) {
        why = core::make_error("too_many_runs", "runs.max_concurrent_runs (" + std::to_string(options_.max_concurrent_runs) +
                                                    ") runs are under way; retry in " +
                                                    std::to_string(options_.retry_after.count()) + "s");
        return nullptr;
    }
    return insert_slot_locked(run_id, count_against_limit);
}

std::shared_ptr<runner::run_slot> runner::insert_slot_locked(std::string const& run_id, bool counted) {
    auto slot = std::make_shared<run_slot>();
    slot->cancelled = std::make_shared<cancel_channel>(options_.executor, 1);
    slot->run_id = run_id;
    slot->counted = counted;
    active_[run_id] = slot;
    return slot;
}

void runner::release_slot(std::string const& run_id) {
    std::vector<std::shared_ptr<waiter>> wake;
    std::shared_ptr<run_slot> next;
    {
        std::lock_guard lock(mutex_);
        active_.erase(run_id);
        auto [first, last] = waiters_.equal_range(run_id);
        for (auto it = first; it != last; ++it) wake.push_back(it->second);
        waiters_.erase(first, last);
        // The room goes to the oldest queued resume, if any (none once stopping: they stay unsealed
        // and are resumed at the next start). Any slot's release counts, a run continuing after an
        // approval included: it took room in active_ too.
        while (!stopping_ && !resume_queue_.empty() && active_.size() < options_.max_concurrent_runs) {
            auto id = std::move(resume_queue_.extract(resume_queue_.begin()).value());
            if (active_.contains(id)) continue;
            next = insert_slot_locked(id, true);
            break;
        }
    }
    for (auto const& w : wake) w->wake.try_send(boost::system::error_code{});
    if (next) {
        spdlog::info("run {}: resuming from its journal", next->run_id);
        spawn(next);
    }
}

void runner::forget_waiter(std::string const& run_id, std::shared_ptr<waiter> const& w) {
    std::lock_guard lock(mutex_);
    auto [first, last] = waiters_.equal_range(run_id);
    for (auto it = first; it != last; ++it) {
        if (it->second == w) {
            waiters_.erase(it);
            return;
        }
    }
}

void runner::spawn(std::shared_ptr<run_slot> slot) {
    auto self = shared_from_this();
    auto strand = asio::make_strand(options_.executor);
    auto task = [](std::shared_ptr<runner> self, std::shared_ptr<run_slot> slot) -> asio::awaitable<void> {
        auto run_id = slot->run_id;
        std::optional<std::string> quarantine, fail;
        try {
            auto r = co_await self->async_drive(slot, true);
            if (!r && r.error().code == "divergence") {
                // Resuming, the current manifest or code would not do what the journal says was
                // done: going on would act on a history that is not this run's.
                quarantine = "resumed run diverges from its journal: " + r.error().message;
            } else if (!r && r.error().code == "corrupt") {
                // Its own records do not read back: nothing can drive, replay or resume it.
                quarantine = "its journal cannot be read, so it cannot go on: " + r.error().message;
            } else if (!r) {
                spdlog::error("run {}: {}", run_id, r.error().message);
            }
        } catch (std::exception const& e) {
            // A bug: the run ends failed rather than being resumed into the same bug at every start.
            spdlog::error("run {}: internal error: {}", run_id, e.what());
            fail = std::string("internal error: ") + e.what();
        }
        if (quarantine || fail) {
            std::string status = quarantine ? "quarantined" : "failed";
            std::string reason = quarantine ? *quarantine : *fail;
            auto sealed = co_await self->options_.journal->async_seal(run_id, status, reason);
            if (!sealed) spdlog::error("run {}: cannot seal it {}: {}", run_id, status, sealed.error().message);
        }
        self->release_slot(run_id);
    };
    mcp::spawn_logged(strand, task(self, std::move(slot)), "agent run");
}

}  // namespace airlock::service
