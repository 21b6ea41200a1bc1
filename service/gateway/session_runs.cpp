#include "service/gateway/session_runs.hpp"

#include "core/effect_records.hpp"
#include "core/rfc3339.hpp"
#include "mcp/client/spawn_logged.hpp"
#include "mcp/protocol/era.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <utility>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// How long a caller waits for another caller's admission of the run they share.
constexpr auto admission_wait = std::chrono::seconds(10);

void wake_all(std::vector<std::shared_ptr<waiter>> const& waiting) {
    for (auto const& w : waiting) w->wake();
}

// A call whose outcome record the journal refused (a full disk, a full map) may or may not have
// taken effect, like one cut off by a crash: its run must not read as a clean end. Each such call
// gets an effect_in_doubt note before the seal, and one that mutates quarantines the run, as the
// next start does for a session a dead process left open. When the notes cannot be written either,
// the run is left unsealed: the next airlock to open the journal seals it with its notes.
asio::awaitable<void> async_seal_session_run(std::shared_ptr<core::journal_store> journal, std::string run,
                                             std::string reason, std::vector<journaled_call> lost) {
    std::string status = "succeeded";
    if (!lost.empty()) {
        std::vector<core::new_record> notes;
        std::string keys;
        bool mutating = false;
        for (auto const& c : lost) {
            notes.push_back({core::record_kind::note,
                             core::in_doubt_note(c.effect_key, c.tool, c.mutates,
                                                 "the call was made and the journal refused its outcome record")});
            keys += (keys.empty() ? "" : ", ") + c.effect_key + " (" + c.tool + ")";
            mutating = mutating || c.mutates;
        }
        if (auto noted = co_await journal->async_append(run, std::move(notes)); !noted) {
            spdlog::error("journal: run {} left unsealed: cannot note {} calls in doubt: {}", run, lost.size(),
                          noted.error().message);
            co_return;
        }
        if (mutating) status = "quarantined";
        reason += "; " + std::to_string(lost.size()) + (lost.size() == 1 ? " call is" : " calls are") +
                  " in doubt (the journal refused its outcome record): " + keys;
    }
    auto r = co_await journal->async_seal(run, status, reason);
    if (!r) spdlog::warn("journal: sealing run {}: {}", run, r.error().message);
}

// A call's outcome record, written after the reply. Nobody waits for it, so on LMDB it rides in the
// transaction of the next effect_started (one fsync instead of two on the next call's path) or is
// committed within the store's defer_limit.
// `hold` keeps the run open (unsealed) until the record is written; a refusal is reported to
// `lost` first, so the seal that the hold's release may start knows of it.
asio::awaitable<void> async_journal_outcome(std::shared_ptr<core::journal_store> journal, std::string run,
                                            core::new_record rec, std::shared_ptr<void> hold,
                                            std::function<void()> lost) {
    auto batch = core::one_record(std::move(rec));
    auto r = co_await journal->async_append_deferred(run, std::move(batch));
    if (!r) {
        spdlog::error("journal: run {}: a call's outcome record was refused, the call is in doubt: {}", run,
                      r.error().message);
        lost();
    }
    hold.reset();
}

}  // namespace

std::shared_ptr<session_runs> session_runs::make(session_runs_options options) {
    return std::shared_ptr<session_runs>(new session_runs(std::move(options)));
}

session_runs::session_runs(session_runs_options options)
    : options_(std::move(options)),
      ids_([clock = options_.clock] {
               return static_cast<std::uint64_t>(
                   std::chrono::duration_cast<std::chrono::milliseconds>(clock().time_since_epoch()).count());
           },
           options_.random) {}

std::string session_runs::key_of(std::string const& session_id, std::string const& principal) {
    return session_id.empty() ? "principal:" + principal : "session:" + session_id;
}

std::optional<std::string> session_runs::run_of(std::string const& session_id, std::string const& principal) const {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(key_of(session_id, principal));
    if (it == runs_.end() || !it->second.admitted) return std::nullopt;
    return it->second.run;
}

std::string session_runs::past_limits(run_slot const& slot, time_point now) const {
    auto const& limits = options_.limits;
    if (auto it = steps_.find(slot.run); it != steps_.end() && it->second >= limits.max_calls)
        return "rolled over: it holds " + std::to_string(it->second) + " calls (journal.session_runs.max_calls)";
    if (now - slot.admitted_at >= limits.max_age) return "rolled over: it was open for journal.session_runs.max_age";
    return {};
}

session_runs::admission_step session_runs::next_admission_step(std::string const& key, asio::any_io_executor const& exec) {
    admission_step step;
    auto const now = options_.clock();
    std::lock_guard lock(mutex_);
    auto it = runs_.find(key);
    if (it != runs_.end() && it->second.admitted) {
        auto why = past_limits(it->second, now);
        if (why.empty()) {
            it->second.last_used = now;
            step.done.emplace(it->second.run);
            return step;
        }
        // Full or old: this caller seals it and admits the run that continues it.
        step.continues = it->second.run;
        step.why_continued = std::move(why);
        runs_.erase(it);
        it = runs_.end();
    }
    if (it == runs_.end()) {
        // Once close_all has begun, a run admitted now would be left running.
        if (stopping_) {
            step.done.emplace(core::make_error(stop_refusal_, "no run is admitted: " + stop_reason_));
        } else {
            step.mine = ids_.next().str();
            runs_[key] = run_slot{step.mine, false, {}, now, now};
        }
    } else {
        step.wait = std::make_shared<waiter>(exec);
        it->second.waiting.push_back(step.wait);
    }
    return step;
}

asio::awaitable<core::result<std::string>> session_runs::async_admitted_run(std::string key, json::object admitted_body) {
    // The first caller admits the run; callers that arrive meanwhile wait until run_admitted is
    // durable, since the store refuses any other record before it. They are woken when admission
    // ends, either way, and look again: the run may be theirs to admit now.
    auto exec = co_await asio::this_coro::executor;
    auto const until = std::chrono::steady_clock::now() + admission_wait;
    std::string run;
    for (;;) {
        auto step = next_admission_step(key, exec);
        if (!step.continues.empty()) {
            auto why = std::move(step.why_continued);
            if (!step.mine.empty()) {
                why += "; its calls continue in run " + step.mine;
                admitted_body["continues"] = step.continues;
            }
            close_run(step.continues, std::move(why));
        }
        if (step.done) co_return std::move(*step.done);
        if (!step.mine.empty()) {
            run = std::move(step.mine);
            break;
        }
        if (!co_await step.wait->async_wait_until(until))
            co_return core::make_error("journal_timeout", "the run of " + key + " was not admitted in time");
    }
    admitted_body["mode"] = "gateway";
    if (!options_.instance.empty()) admitted_body["instance"] = options_.instance;
    admitted_body["admitted_at"] = core::rfc3339(options_.clock());
    auto admit = core::one_record(core::record_kind::run_admitted, std::move(admitted_body));
    auto r = co_await options_.journal->async_append(run, std::move(admit));
    bool ended_meanwhile = false, stopped_meanwhile = false;
    std::vector<std::shared_ptr<waiter>> waiting;
    {
        std::lock_guard lock(mutex_);
        auto it = runs_.find(key);
        bool const ours = it != runs_.end() && it->second.run == run;
        if (ours) waiting = std::move(it->second.waiting);
        if (!r) {
            if (ours) runs_.erase(it);
        } else if (ours) {
            it->second.admitted = true;
        } else {
            // Its session ended, or airlock began stopping, during admission: close_all did not
            // see it admitted, so it is sealed here.
            ended_meanwhile = true;
            stopped_meanwhile = stopping_;
        }
    }
    wake_all(waiting);
    if (!r) co_return r.error();
    if (stopped_meanwhile) {
        std::string why, refusal;
        {
            std::lock_guard lock(mutex_);
            why = stop_reason_;
            refusal = stop_refusal_;
        }
        close_run(run, why);
        co_return core::make_error(refusal, "the run was being admitted when runs stopped being admitted: " + why);
    }
    if (ended_meanwhile) {
        close_run(run, "session ended");
        co_return core::make_error("run_ended", "the session ended while its run was being admitted");
    }
    co_return run;
}

asio::awaitable<core::result<std::string>> session_runs::async_run_for(mcp::request_context const& ctx,
                                                                       gateway_principal const& p) {
    auto key = key_of(ctx.session_id, p.name);
    // Every call but a session's first finds its run admitted: no admission body to build.
    {
        auto const now = options_.clock();
        std::lock_guard lock(mutex_);
        if (auto it = runs_.find(key); it != runs_.end() && it->second.admitted && past_limits(it->second, now).empty()) {
            it->second.last_used = now;
            co_return it->second.run;
        }
    }
    json::object body;
    body["agent"] = {{"name", p.grants.name}, {"version", p.grants.version}, {"digest", p.grants.digest}};
    body["input"] = {{"principal", p.name}, {"session", ctx.session_id}, {"era", mcp::to_string(ctx.client_era)},
                     {"protocol_version", ctx.protocol_version}};
    if (!ctx.authentication.empty()) body["input"].as_object()["authentication"] = ctx.authentication;
    body["input_label"] = {{"trust", p.trusted ? "trusted" : "untrusted"}, {"sources", json::array{"principal:" + p.name}}};
    co_return co_await async_admitted_run(std::move(key), std::move(body));
}

asio::awaitable<core::result<std::string>> session_runs::async_gateway_run(std::string version) {
    json::object body;
    body["agent"] = {{"name", "airlock-gateway"}, {"version", version}, {"digest", ""}};
    body["input"] = {{"purpose", "events of the gateway itself"}};
    body["input_label"] = {{"trust", "trusted"}, {"sources", json::array{"airlock"}}};
    std::string key = "gateway";
    co_return co_await async_admitted_run(std::move(key), std::move(body));
}

asio::awaitable<core::result<void>> session_runs::async_note(mcp::request_context const& ctx, gateway_principal const& p,
                                                             json::object body) {
    auto run = co_await async_run_for(ctx, p);
    if (!run) co_return run.error();
    auto held = hold(*run);
    body["principal"] = p.name;
    auto batch = core::one_record(core::record_kind::note, std::move(body));
    auto r = co_await options_.journal->async_append(*run, std::move(batch));
    if (!r) co_return r.error();
    co_return core::result<void>{};
}

asio::awaitable<core::result<std::vector<core::record>>> session_runs::async_append(std::string run,
                                                                                    std::vector<core::new_record> records) {
    co_return co_await options_.journal->async_append(std::move(run), std::move(records));
}

asio::awaitable<void> session_runs::async_journal(std::string run, core::new_record rec) {
    auto batch = core::one_record(std::move(rec));
    auto r = co_await options_.journal->async_append(run, std::move(batch));
    if (!r) spdlog::error("journal: run {}: {}", run, r.error().message);
}

void session_runs::journal_outcome(asio::any_io_executor const& exec, std::string run, core::new_record rec,
                                   std::shared_ptr<void> hold, journaled_call call) {
    std::weak_ptr<session_runs> weak = weak_from_this();
    auto lost = [weak, run, call = std::move(call)] {
        if (auto self = weak.lock()) self->outcome_lost(run, call);
    };
    auto task = async_journal_outcome(options_.journal, std::move(run), std::move(rec), std::move(hold), std::move(lost));
    mcp::spawn_logged(exec, std::move(task), "gateway call outcome");
}

void session_runs::outcome_lost(std::string const& run, journaled_call call) {
    std::lock_guard lock(mutex_);
    lost_[run].push_back(std::move(call));
}

std::uint32_t session_runs::next_step(std::string const& run) {
    std::lock_guard lock(mutex_);
    return ++steps_[run];
}

std::shared_ptr<void> session_runs::hold(std::string const& run) {
    {
        std::lock_guard lock(mutex_);
        ++open_calls_[run];
    }
    std::weak_ptr<session_runs> weak = weak_from_this();
    return std::shared_ptr<void>(nullptr, [weak, run](void*) {
        if (auto self = weak.lock()) self->call_ended(run);
    });
}

void session_runs::call_ended(std::string const& run) {
    std::vector<std::shared_ptr<waiter>> waiting;
    {
        std::lock_guard lock(mutex_);
        auto it = open_calls_.find(run);
        if (it == open_calls_.end() || --it->second > 0) return;
        open_calls_.erase(it);
        auto c = closing_.find(run);
        if (c == closing_.end()) return;
        auto reason = std::move(c->second);
        closing_.erase(c);
        seal(run, std::move(reason));
        if (closing_.empty() && sealing_ == 0) waiting = std::exchange(closed_waiting_, {});
    }
    wake_all(waiting);
}

void session_runs::close_run(std::string const& run, std::string reason) {
    std::lock_guard lock(mutex_);
    // A call still in the run would find it sealed when it journals its outcome: wait for it.
    if (open_calls_.contains(run)) closing_.emplace(run, std::move(reason));
    else seal(run, std::move(reason));
}

void session_runs::seal(std::string run, std::string reason) {
    if (!options_.executor) return;
    ++sealing_;
    std::weak_ptr<session_runs> weak = weak_from_this();
    auto done = [weak](std::exception_ptr e) {
        if (e) mcp::log_task_end("gateway run seal", e);
        auto self = weak.lock();
        if (!self) return;
        std::vector<std::shared_ptr<waiter>> waiting;
        {
            std::lock_guard lock(self->mutex_);
            --self->sealing_;
            if (self->closing_.empty() && self->sealing_ == 0) waiting = std::exchange(self->closed_waiting_, {});
        }
        wake_all(waiting);
    };
    std::vector<journaled_call> lost;
    if (auto it = lost_.find(run); it != lost_.end()) {
        lost = std::move(it->second);
        lost_.erase(it);
    }
    // Posted: the caller holds mutex_, and the seal must not begin (or complete) under it.
    auto exec = options_.executor;
    asio::post(exec, [exec, journal = options_.journal, run = std::move(run), reason = std::move(reason),
                      lost = std::move(lost), done = std::move(done)]() mutable {
        asio::co_spawn(exec, async_seal_session_run(journal, std::move(run), std::move(reason), std::move(lost)),
                       std::move(done));
    });
}

void session_runs::session_closed(std::string const& session_id) {
    std::optional<std::string> run;
    std::vector<std::shared_ptr<waiter>> waiting;
    {
        std::lock_guard lock(mutex_);
        if (auto it = runs_.find("session:" + session_id); it != runs_.end()) {
            if (it->second.admitted) run = it->second.run;
            waiting = std::move(it->second.waiting);
            runs_.erase(it);
        }
    }
    wake_all(waiting);
    if (!options_.executor) return;  // nothing runs on its own without an executor
    if (run) close_run(*run, "session ended");
}

std::size_t session_runs::expire() {
    std::vector<std::pair<std::string, std::string>> expired;  // run, why
    std::vector<std::shared_ptr<waiter>> waiting;
    auto const now = options_.clock();
    {
        std::lock_guard lock(mutex_);
        for (auto it = runs_.begin(); it != runs_.end();) {
            auto& slot = it->second;
            std::string why;
            if (slot.admitted) why = past_limits(slot, now);
            // A legacy session's run ends with its session; a principal's has no session to end.
            if (slot.admitted && why.empty() && !it->first.starts_with("session:") && now - slot.last_used >= options_.limits.idle)
                why = "idle: no call for server.sessions.idle_timeout";
            if (why.empty()) {
                ++it;
                continue;
            }
            expired.emplace_back(slot.run, why + "; the next call begins a new run");
            it = runs_.erase(it);
        }
    }
    for (auto& [run, why] : expired) close_run(run, std::move(why));
    return expired.size();
}

void session_runs::start_upkeep(std::chrono::milliseconds every) {
    if (!options_.executor) return;
    auto timer = std::make_shared<asio::steady_timer>(options_.executor);
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        upkeep_timer_ = timer;
    }
    std::weak_ptr<session_runs> weak = weak_from_this();
    auto loop = [](std::weak_ptr<session_runs> weak, std::shared_ptr<asio::steady_timer> timer,
                   std::chrono::milliseconds every) -> asio::awaitable<void> {
        for (;;) {
            timer->expires_after(every);
            // close_all cancels it: stopping does not wait for the next tick.
            [[maybe_unused]] auto [ec] = co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
            auto self = weak.lock();
            if (!self) co_return;
            {
                std::lock_guard lock(self->mutex_);
                if (self->stopping_) co_return;
            }
            if (auto n = self->expire()) spdlog::info("journal: sealed {} gateway runs past their limits or idle", n);
        }
    };
    mcp::spawn_logged(options_.executor, loop(std::move(weak), std::move(timer), every), "gateway run upkeep");
}

void session_runs::close_all(std::string reason, std::string refusal) {
    std::vector<std::string> admitted;
    std::vector<std::shared_ptr<waiter>> waiting;
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        stopping_ = true;
        stop_reason_ = reason;
        stop_refusal_ = std::move(refusal);
        if (upkeep_timer_) asio::post(options_.executor, [t = std::move(upkeep_timer_)] { t->cancel(); });
        for (auto& [key, slot] : runs_) {
            if (slot.admitted) admitted.push_back(slot.run);
            for (auto& w : slot.waiting) waiting.push_back(std::move(w));
        }
        runs_.clear();
    }
    wake_all(waiting);
    for (auto const& run : admitted) close_run(run, reason);
}

bool session_runs::settled() const {
    std::lock_guard lock(mutex_);
    return stopping_ && closing_.empty() && sealing_ == 0;
}

asio::awaitable<void> session_runs::async_closed(std::chrono::milliseconds limit) {
    auto const until = std::chrono::steady_clock::now() + limit;
    auto exec = co_await asio::this_coro::executor;
    for (;;) {
        auto w = std::make_shared<waiter>(exec);
        {
            std::lock_guard lock(mutex_);
            if (closing_.empty() && sealing_ == 0) co_return;
            closed_waiting_.push_back(w);
        }
        if (!co_await w->async_wait_until(until)) break;
    }
    std::lock_guard lock(mutex_);
    if (closing_.empty() && sealing_ == 0) co_return;
    spdlog::warn("stopping: {} runs still had calls in flight and {} seals were unfinished; those runs are left unsealed",
                 closing_.size(), sealing_);
}

}  // namespace airlock::service
