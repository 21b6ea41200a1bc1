#include "service/agents/runner.hpp"
#include "core/rfc3339.hpp"

#include "core/canonical_json.hpp"
#include "core/model_json.hpp"
#include "core/sha256.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <set>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace asio::experimental::awaitable_operators;

using cancel_channel = asio::experimental::concurrent_channel<void(boost::system::error_code)>;

struct runner::run_slot {
    std::string run_id;
    std::atomic<bool> cancel{false};
    bool counted = true;  // holds one of max_concurrent_runs
    // Rung by async_cancel (safe from any thread; a ring before anyone listens is kept): a model
    // call under way is no longer waited for. Absent for replays, which make no calls.
    std::shared_ptr<cancel_channel> cancelled;
};

// One async_wait caller. The driver's thread signals it through a channel (safe from any thread,
// and a signal sent before the caller starts waiting is kept), never through the caller's timer.
struct runner::waiter {
    explicit waiter(asio::any_io_executor ex) : wake(std::move(ex), 1) {}
    asio::experimental::concurrent_channel<void(boost::system::error_code)> wake;
};

struct runner::drive_result {
    core::run_status status = core::run_status::running;
    std::string reason;
    json::value output;
    core::label output_label;
    std::uint64_t records = 0;  // journal records matched against the loop's actions
    bool parked = false;        // stopped at an approval with no decision yet
};

namespace {

void csprng(std::uint8_t* out, std::size_t n) {
    if (RAND_bytes(out, static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
}

std::string str_at(json::object const& o, std::string_view key) {
    if (auto const* v = o.if_contains(key); v && v->is_string()) return std::string(v->get_string());
    return {};
}

std::uint64_t u64_at(json::object const& o, std::string_view key) {
    if (auto const* v = o.if_contains(key)) {
        if (v->is_uint64()) return v->get_uint64();
        if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
    }
    return 0;
}

bool same_json(json::value const& a, json::value const& b) {
    auto ca = core::canonical(a);
    auto cb = core::canonical(b);
    return ca && cb ? *ca == *cb : a == b;
}

// What a record is, in a divergence message: kind and effect key, never the arguments.
std::string describe(core::record const& r) {
    std::string s = std::string(core::to_string(r.kind));
    if (auto key = str_at(r.body, "effect_key"); !key.empty()) s += " " + key;
    if (auto tool = str_at(r.body, "tool"); !tool.empty()) s += " (" + tool + ")";
    return s;
}

core::error divergence(core::record const& r, std::string const& expected) {
    return core::make_error("divergence", "seq " + std::to_string(r.seq) + ": the current manifest and code would " +
                                              expected + ", the journal has " + describe(r));
}

bool is_annotation(core::record const& r) {
    // Records the driver writes for people, not for the loop: they match no action.
    if (r.kind != core::record_kind::note) return false;
    auto event = str_at(r.body, "event");
    return event == "effect_retried" || event == "resumed";
}

json::object failure_body(std::string const& key, core::tool_error const& e, std::uint64_t at_ms) {
    return {{"effect_key", key},
            {"error_kind", core::to_string(e.kind)},
            {"disposition", core::to_string(core::disposition_of(e.kind))},
            {"detail", e.detail},
            {"at_ms", at_ms}};
}

core::tool_error failure_from(json::object const& body, std::string tool) {
    auto kind = core::parse_tool_error_kind(str_at(body, "error_kind")).value_or(core::tool_error_kind::tool_failed);
    return core::tool_error{kind, std::move(tool), str_at(body, "detail")};
}

}  // namespace

json::object admitted_body(agent_entry const& agent, run_request const& request, std::string const& admitted_at,
                           std::uint64_t admitted_at_ms) {
    json::object body;
    body["agent"] = {{"name", agent.manifest.name}, {"version", agent.manifest.version}, {"digest", agent.manifest.digest}};
    body["mode"] = "agent";
    body["provider"] = {{"name", agent.provider_name}, {"kind", agent.provider ? agent.provider->kind() : ""}};
    body["input"] = request.input;
    body["input_label"] = core::to_json(request.input_label);
    if (request.idempotency_key) body["idempotency_key"] = *request.idempotency_key;
    if (!request.principal.empty()) body["principal"] = request.principal;
    body["admitted_at"] = admitted_at;
    body["admitted_at_ms"] = admitted_at_ms;
    return body;
}

core::result<std::shared_ptr<runner>> runner::make(runner_options options) {
    if (!options.journal) return core::make_error("invalid_runner", "the runner needs a journal");
    if (!options.tools) return core::make_error("invalid_runner", "the runner needs a tool client");
    if (!options.executor) return core::make_error("invalid_runner", "the runner needs an executor");
    std::set<std::string> names;
    for (auto const& a : options.agents) {
        if (!names.insert(a.manifest.name).second)
            return core::make_error("invalid_runner", "agent '" + a.manifest.name + "' is configured twice");
        if (!a.provider) return core::make_error("invalid_runner", "agent '" + a.manifest.name + "' has no model provider");
    }
    if (!options.random) options.random = csprng;
    return std::shared_ptr<runner>(new runner(std::move(options)));
}

runner::runner(runner_options options)
    : options_(std::move(options)),
      ids_([clock = options_.clock] {
               return static_cast<std::uint64_t>(
                   std::chrono::duration_cast<std::chrono::milliseconds>(clock().time_since_epoch()).count());
           },
           options_.random) {}

runner::~runner() = default;

std::uint64_t runner::now_ms() const {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock().time_since_epoch()).count());
}

std::string runner::nonce() {
    std::uint8_t b[16];
    options_.random(b, sizeof b);
    return core::to_hex(b, sizeof b);
}

agent_entry const* runner::agent(std::string const& name) const {
    for (auto const& a : options_.agents)
        if (a.manifest.name == name) return &a;
    return nullptr;
}

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

namespace {

// A model call raced against its run's cancellation: the call runs in a coroutine of its own, so
// a cancel need not wait for a provider that is slow to answer (a model may think for minutes).
struct model_race {
    explicit model_race(asio::any_io_executor ex) : done(std::move(ex), 1) {}
    std::optional<core::model_result<core::completion>> result;  // written before `done` is rung
    cancel_channel done;
};

asio::awaitable<void> async_complete_into(std::shared_ptr<core::model_provider> provider, core::completion_request request,
                                          std::shared_ptr<model_race> race) {
    core::model_result<core::completion> r = core::model_error{core::tool_error_kind::unreachable, "", ""};
    try {
        r = co_await provider->async_complete(std::move(request));
    } catch (std::exception const& e) {
        r = core::model_error{core::tool_error_kind::unreachable, "", std::string("the provider failed: ") + e.what()};
    }
    race->result = std::move(r);
    race->done.try_send(boost::system::error_code{});
}

// The completion, or nullopt when the run was cancelled first (the answer, if one comes, is dropped).
asio::awaitable<std::optional<core::model_result<core::completion>>> async_complete_unless_cancelled(
    std::shared_ptr<core::model_provider> provider, core::completion_request request, std::shared_ptr<cancel_channel> cancelled) {
    if (!cancelled) co_return co_await provider->async_complete(std::move(request));
    auto exec = co_await asio::this_coro::executor;
    auto race = std::make_shared<model_race>(exec);
    asio::co_spawn(exec, async_complete_into(std::move(provider), std::move(request), race), asio::detached);
    using namespace asio::experimental::awaitable_operators;
    auto answered = race->done.async_receive(asio::as_tuple(asio::use_awaitable));
    auto stopped = cancelled->async_receive(asio::as_tuple(asio::use_awaitable));
    auto first = co_await (std::move(answered) || std::move(stopped));
    if (first.index() == 1) co_return std::nullopt;
    co_return std::move(*race->result);
}

}  // namespace

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
    asio::co_spawn(strand, task(self, std::move(slot)), asio::detached);
}

// ---- admission ------------------------------------------------------------------------------

asio::awaitable<core::result<run_ticket>> runner::async_start(run_request request) {
    agent_entry const* chosen = nullptr;
    if (!request.agent.empty()) {
        chosen = agent(request.agent);
        if (!chosen) co_return core::make_error("unknown_agent", "agent: no agent named '" + request.agent + "'");
    } else if (!request.capability.empty()) {
        std::vector<agent_entry const*> providers;
        for (auto const& a : options_.agents)
            for (auto const& c : a.manifest.provides)
                if (c == request.capability) providers.push_back(&a);
        if (providers.empty())
            co_return core::make_error("unknown_capability", "capability: no agent provides '" + request.capability + "'");
        if (providers.size() > 1)
            co_return core::make_error("ambiguous_capability", "capability: '" + request.capability +
                                                                   "' is provided by several agents; name the agent");
        chosen = providers.front();
    } else {
        co_return core::make_error("invalid_request", "agent or capability is required");
    }
    auto canonical_input = core::canonical(request.input);
    if (!canonical_input) co_return core::make_error("invalid_request", "input: " + canonical_input.error().message);
    if (canonical_input->size() > options_.max_input_bytes)
        co_return core::make_error("invalid_request", "input: " + std::to_string(canonical_input->size()) +
                                                          " bytes is more than the " +
                                                          std::to_string(options_.max_input_bytes) + " allowed");
    if (request.idempotency_key && (request.idempotency_key->empty() || request.idempotency_key->size() > 256))
        co_return core::make_error("invalid_request", "idempotency_key: must be 1 to 256 bytes");

    std::string run_id;
    {
        std::lock_guard lock(mutex_);
        run_id = ids_.next().str();
    }
    if (request.idempotency_key) {
        // Keys are each principal's own: one principal's key never finds (or blocks) another's run.
        // Principal names hold no ':', so "name:key" cannot be spelt by two principals.
        auto scoped_key = request.principal + ":" + *request.idempotency_key;
        auto claim = co_await options_.journal->async_claim_admission(std::move(scoped_key), run_id);
        if (!claim) co_return claim.error();
        if (!claim->fresh) {
            auto head = co_await options_.journal->async_head(claim->run_id);
            if (!head) co_return head.error();
            if (*head) co_return run_ticket{claim->run_id, false};
            // Claimed by an admission that never became durable (a crash in between): admit it now.
            run_id = claim->run_id;
        }
    }
    core::error why;
    auto slot = claim_slot(run_id, true, why);
    if (!slot) co_return why;
    auto now = options_.clock();
    auto body = admitted_body(*chosen, request, rfc3339(now), now_ms());
    auto admit = core::one_record(core::record_kind::run_admitted, std::move(body));
    auto appended = co_await options_.journal->async_append(run_id, std::move(admit));
    if (!appended) {
        release_slot(run_id);
        co_return appended.error();
    }
    spawn(slot);
    co_return run_ticket{run_id, true};
}

// ---- the driver -----------------------------------------------------------------------------

asio::awaitable<core::result<runner::drive_result>> runner::async_drive(std::shared_ptr<run_slot> slot, bool live) {
    auto const run_id = slot->run_id;
    auto read = co_await options_.journal->async_read(run_id, 1);
    if (!read) co_return read.error();
    auto records = std::move(*read);
    if (records.empty()) co_return core::make_error("unknown_run", "no run " + run_id);
    if (records.front().kind != core::record_kind::run_admitted)
        co_return core::make_error("not_admitted", "run " + run_id + " does not start with run_admitted");
    auto const& admitted = records.front().body;
    std::string agent_name;
    if (auto const* a = admitted.if_contains("agent"); a && a->is_object()) agent_name = str_at(a->get_object(), "name");
    auto const* entry = agent(agent_name);
    if (!entry) co_return core::make_error("unknown_agent", "run " + run_id + " was made by agent '" + agent_name +
                                                                "', which is not configured");
    auto parsed_id = core::run_id::parse(run_id);
    if (!parsed_id) co_return core::make_error("invalid_run", "run id " + run_id + " is not a ULID");
    core::run_input input;
    if (auto const* in = admitted.if_contains("input")) input.value = *in;
    if (auto const* l = admitted.if_contains("input_label")) {
        auto label = core::label_from_json(*l);
        if (!label) co_return core::make_error("malformed_record", "seq 1: input_label: " + label.error().message);
        input.input_label = *label;
    }

    core::agent_loop_options lo;
    lo.agent = entry->manifest;
    lo.provider = entry->provider->kind();
    lo.model = entry->manifest.privileged_model ? entry->manifest.privileged_model->model : "";
    lo.egress = options_.egress;
    lo.destination_of = [tools = options_.tools](core::tool_id const& t) { return tools->destination_of(t); };
    if (live && options_.catalogue) lo.tools = co_await options_.catalogue(entry->manifest);
    core::agent_loop loop(std::move(lo), *parsed_id, std::move(input), u64_at(admitted, "admitted_at_ms"));

    drive_result out;
    std::size_t cursor = 1;
    // The next record the loop must account for, skipping annotations; nullptr past the end.
    auto peek = [&]() -> core::record const* {
        while (cursor < records.size() && is_annotation(records[cursor])) ++cursor;
        return cursor < records.size() ? &records[cursor] : nullptr;
    };
    auto take = [&] {
        ++cursor;
        ++out.records;
    };
    auto append = [this, run_id](std::vector<core::new_record> batch) {
        return options_.journal->async_append(run_id, std::move(batch));
    };
    auto ended = [&](core::run_status s, std::string reason) {
        out.status = s;
        out.reason = std::move(reason);
        return out;
    };

    core::loop_event start{core::start_event{}, u64_at(admitted, "admitted_at_ms")};
    auto action = loop.next(start);
    for (;;) {
        auto const* rec = peek();
        // A seal where the loop expected to go on: the run was ended from outside (cancelled,
        // quarantined, failed by a bug) and stays as recorded. A cancel is an outside decision even
        // where the loop would now finish: a model call cancelled mid-way is journaled as failed,
        // and the run sealed cancelled right after, before the loop could take that failure in.
        if (rec && rec->kind == core::record_kind::run_sealed &&
            (!std::holds_alternative<core::finish_action>(action) || str_at(rec->body, "status") == "cancelled")) {
            take();
            auto status = core::parse_run_status(str_at(rec->body, "status")).value_or(core::run_status::failed);
            co_return ended(status, str_at(rec->body, "reason"));
        }
        if (!rec && live) {
            bool stop_now;
            {
                std::lock_guard lock(mutex_);
                stop_now = stopping_;
            }
            if (stop_now) co_return ended(core::run_status::running, "stopped with the service; resumed at its next start");
            if (slot->cancel.load() && !std::holds_alternative<core::finish_action>(action)) {
                std::string status = "cancelled", reason = "cancelled by request";
                auto sealed = co_await options_.journal->async_seal(run_id, status, reason);
                if (!sealed) co_return sealed.error();
                co_return ended(core::run_status::cancelled, reason);
            }
        }
        if (!rec && !live && !std::holds_alternative<core::await_approval_action>(action))
            co_return core::make_error("incomplete", "the journal of run " + run_id + " ends at seq " +
                                                         std::to_string(records.back().seq) + " before the run finished (next: " +
                                                         std::string(core::action_name(action)) + ")");

        if (auto* model = std::get_if<core::call_model_action>(&action)) {
            core::loop_event event;
            bool perform = !rec;
            bool cancelled_mid_call = false;
            if (rec) {
                if (rec->kind != core::record_kind::effect_started || str_at(rec->body, "effect_key") != model->effect_key ||
                    str_at(rec->body, "target") != "model" || str_at(rec->body, "request_sha256") != model->request_sha256)
                    co_return divergence(*rec, "call the model as " + model->effect_key);
                take();
                auto const* outcome = peek();
                if (!outcome) {
                    if (!live) co_return core::make_error("incomplete", "seq " + std::to_string(rec->seq) + ": model call " +
                                                                            model->effect_key + " has no outcome");
                    // A model call changes nothing in the world: asking again is always safe.
                    json::object note{{"event", "effect_retried"}, {"effect_key", model->effect_key}, {"attempt", 2}};
                    auto batch = core::one_record(core::record_kind::note, std::move(note));
                    if (auto r = co_await append(std::move(batch)); !r) co_return r.error();
                    perform = true;
                } else if (str_at(outcome->body, "effect_key") != model->effect_key) {
                    co_return divergence(*outcome, "see the outcome of " + model->effect_key);
                } else if (outcome->kind == core::record_kind::effect_done) {
                    auto const* o = outcome->body.if_contains("output");
                    auto c = o ? core::completion_from_json(*o) : core::result<core::completion>(core::make_error(
                                                                      "malformed_record", "output is missing"));
                    if (!c) co_return core::make_error("malformed_record", "seq " + std::to_string(outcome->seq) + ": " +
                                                                                c.error().message);
                    event = core::loop_event{core::model_done_event{std::move(*c)}, u64_at(outcome->body, "at_ms")};
                    take();
                } else if (outcome->kind == core::record_kind::effect_failed) {
                    event = core::loop_event{core::model_failed_event{failure_from(outcome->body, "")},
                                             u64_at(outcome->body, "at_ms")};
                    take();
                } else {
                    co_return divergence(*outcome, "see the outcome of " + model->effect_key);
                }
            } else {
                json::object started{{"effect_key", model->effect_key},
                                     {"target", "model"},
                                     {"provider", entry->provider_name},
                                     {"model", model->request.model},
                                     {"request_sha256", model->request_sha256},
                                     {"mutates", false},
                                     {"attempt", 1},
                                     {"at_ms", now_ms()}};
                auto batch = core::one_record(core::record_kind::effect_started, std::move(started));
                if (auto r = co_await append(std::move(batch)); !r) co_return r.error();
            }
            if (perform) {
                auto dest = entry->provider->destination_of();
                core::model_result<core::completion> result = core::model_error{core::tool_error_kind::unreachable, "", ""};
                if (!options_.egress.permits(dest)) {
                    result = core::model_error{core::tool_error_kind::unreachable, "model://" + entry->provider_name,
                                               "egress_denied: " + core::to_string(dest) +
                                                   " is not in the egress allowlist; nothing was sent"};
                } else {
                    auto request = model->request;
                    auto raced = co_await async_complete_unless_cancelled(entry->provider, std::move(request), slot->cancelled);
                    if (raced) {
                        result = std::move(*raced);
                    } else {
                        cancelled_mid_call = true;
                        result = core::model_error{core::tool_error_kind::timed_out, "model://" + entry->provider_name,
                                                   "cancelled by request before the model answered; a late answer is dropped"};
                    }
                }
                auto at = now_ms();
                core::new_record after;
                if (result) {
                    json::object done{{"effect_key", model->effect_key},
                                      {"output", core::to_json(*result)},
                                      {"output_label", {{"trust", "untrusted"},
                                                        {"sources", json::array{"model://" + entry->provider->kind() + "/" +
                                                                                model->request.model}}}},
                                      {"usage", core::to_json(result->usage)},
                                      {"at_ms", at}};
                    after = {core::record_kind::effect_done, std::move(done)};
                    event = core::loop_event{core::model_done_event{std::move(*result)}, at};
                } else {
                    after = {core::record_kind::effect_failed, failure_body(model->effect_key, result.error(), at)};
                    event = core::loop_event{core::model_failed_event{result.error()}, at};
                }
                auto batch = core::one_record(std::move(after));
                if (auto r = co_await append(std::move(batch)); !r) co_return r.error();
                if (cancelled_mid_call) {
                    std::string status = "cancelled", reason = "cancelled by request during a model call";
                    auto sealed = co_await options_.journal->async_seal(run_id, status, reason);
                    if (!sealed) co_return sealed.error();
                    co_return ended(core::run_status::cancelled, reason);
                }
            }
            action = loop.next(event);
            continue;
        }

        if (auto* call = std::get_if<core::call_tool_action>(&action)) {
            core::loop_event event;
            bool perform = !rec;
            int attempt = 1;
            if (rec) {
                auto const* args = rec->body.if_contains("arguments");
                if (rec->kind != core::record_kind::effect_started || str_at(rec->body, "effect_key") != call->effect_key ||
                    str_at(rec->body, "target") != "tool" || str_at(rec->body, "tool") != call->tool.uri() || !args ||
                    !same_json(*args, call->arguments))
                    co_return divergence(*rec, "call " + call->tool.uri() + " as " + call->effect_key);
                take();
                auto const* outcome = peek();
                if (!outcome) {
                    if (!live) co_return core::make_error("incomplete", "seq " + std::to_string(rec->seq) + ": tool call " +
                                                                            call->effect_key + " has no outcome");
                    if (call->mutates && !call->idempotent) {
                        auto reason = "effect " + call->effect_key + " (" + call->tool.uri() +
                                      ") was started and its outcome is unknown; it mutates and is not idempotent, "
                                      "so it is not performed again";
                        std::string status = "quarantined";
                        auto sealed = co_await options_.journal->async_seal(run_id, status, reason);
                        if (!sealed) co_return sealed.error();
                        spdlog::warn("run {}: quarantined: {}", run_id, reason);
                        co_return ended(core::run_status::quarantined, reason);
                    }
                    attempt = 2;
                    json::object note{{"event", "effect_retried"},
                                      {"effect_key", call->effect_key},
                                      {"attempt", attempt},
                                      {"why", call->mutates ? "the grant is idempotent" : "the grant does not mutate"}};
                    auto batch = core::one_record(core::record_kind::note, std::move(note));
                    if (auto r = co_await append(std::move(batch)); !r) co_return r.error();
                    perform = true;
                } else if (str_at(outcome->body, "effect_key") != call->effect_key) {
                    co_return divergence(*outcome, "see the outcome of " + call->effect_key);
                } else if (outcome->kind == core::record_kind::effect_done) {
                    auto const* o = outcome->body.if_contains("output");
                    event = core::loop_event{core::tool_done_event{o ? *o : json::value()}, u64_at(outcome->body, "at_ms")};
                    take();
                } else if (outcome->kind == core::record_kind::effect_failed) {
                    event = core::loop_event{core::tool_failed_event{failure_from(outcome->body, call->tool.uri())},
                                             u64_at(outcome->body, "at_ms")};
                    take();
                } else {
                    co_return divergence(*outcome, "see the outcome of " + call->effect_key);
                }
            }
            if (perform) {
                auto issued = std::chrono::floor<std::chrono::seconds>(options_.clock());
                auto prov = core::make_provenance(run_id, call->effect_key, entry->manifest.name, entry->manifest.digest,
                                                  call->tool, call->arguments, issued, options_.provenance_lifetime,
                                                  nonce());
                if (!prov) co_return prov.error();
                if (options_.signer)
                    if (auto s = options_.signer->sign(*prov); !s) co_return s.error();
                if (attempt == 1) {
                    json::object started{{"effect_key", call->effect_key},
                                         {"target", "tool"},
                                         {"tool", call->tool.uri()},
                                         {"arguments", call->arguments},
                                         {"arguments_label", core::to_json(call->arguments_label)},
                                         {"mutates", call->mutates},
                                         {"idempotent", call->idempotent},
                                         {"attempt", attempt},
                                         {"call_id", call->call_id},
                                         {"provenance", core::to_json(*prov)},
                                         {"at_ms", now_ms()}};
                    auto batch = core::one_record(core::record_kind::effect_started, std::move(started));
                    if (auto r = co_await append(std::move(batch)); !r) co_return r.error();
                } else {
                    // The store takes one effect_started per key; a retry's block is kept in a note.
                    json::object note{{"event", "effect_retried"},
                                      {"effect_key", call->effect_key},
                                      {"attempt", attempt},
                                      {"provenance", core::to_json(*prov)}};
                    auto batch = core::one_record(core::record_kind::note, std::move(note));
                    if (auto r = co_await append(std::move(batch)); !r) co_return r.error();
                }
                auto tool = call->tool;
                auto arguments = call->arguments;
                std::optional<core::provenance> block = std::move(*prov);
                auto result = co_await options_.tools->async_call(std::move(tool), std::move(arguments), std::move(block));
                auto at = now_ms();
                core::new_record after;
                if (result) {
                    auto const* grant = entry->manifest.grant_for(call->tool);
                    core::label out_label{{call->tool.uri()}, core::trust::untrusted,
                                          grant && grant->max_sensitivity ? *grant->max_sensitivity
                                                                          : core::sensitivity::public_};
                    json::object done{{"effect_key", call->effect_key},
                                      {"output", *result},
                                      {"output_label", core::to_json(out_label)},
                                      {"at_ms", at}};
                    after = {core::record_kind::effect_done, std::move(done)};
                    event = core::loop_event{core::tool_done_event{std::move(*result)}, at};
                } else {
                    after = {core::record_kind::effect_failed, failure_body(call->effect_key, result.error(), at)};
                    event = core::loop_event{core::tool_failed_event{result.error()}, at};
                }
                auto batch = core::one_record(std::move(after));
                if (auto r = co_await append(std::move(batch)); !r) co_return r.error();
            }
            action = loop.next(event);
            continue;
        }

        if (auto* add = std::get_if<core::append_action>(&action)) {
            std::vector<core::new_record> rest;
            for (auto& nr : add->records) {
                auto const* r = peek();
                if (!r) {
                    rest.push_back(nr);
                    continue;
                }
                if (r->kind != nr.kind || !same_json(r->body, nr.body))
                    co_return divergence(*r, "write " + std::string(core::to_string(nr.kind)) + " " +
                                                 str_at(nr.body, "effect_key"));
                take();
            }
            if (!rest.empty()) {
                if (auto r = co_await append(std::move(rest)); !r) co_return r.error();
            }
            core::loop_event event{core::appended_event{}, 0};
            action = loop.next(event);
            continue;
        }

        if (auto* wait = std::get_if<core::await_approval_action>(&action)) {
            if (!rec) {
                out.parked = true;
                co_return ended(core::run_status::awaiting_approval, "awaiting approval of " + wait->effect_key);
            }
            if (rec->kind != core::record_kind::approval_decided || str_at(rec->body, "effect_key") != wait->effect_key)
                co_return divergence(*rec, "wait for a decision on " + wait->effect_key);
            bool approved = false;
            if (auto const* a = rec->body.if_contains("approved"); a && a->is_bool()) approved = a->get_bool();
            core::loop_event event{core::approval_event{approved}, u64_at(rec->body, "at_ms")};
            take();
            action = loop.next(event);
            continue;
        }

        auto const& fin = std::get<core::finish_action>(action);
        std::string status(core::to_string(fin.status));
        out.output = fin.output;
        out.output_label = fin.output_label;
        if (rec) {
            if (rec->kind == core::record_kind::note && str_at(rec->body, "event") == "run_output") {
                auto const* o = rec->body.if_contains("output");
                if (str_at(rec->body, "status") != status || !o || !same_json(*o, fin.output))
                    co_return divergence(*rec, "finish " + status);
                take();
                rec = peek();
            }
        } else {
            json::object note{{"event", "run_output"},
                              {"status", status},
                              {"reason", fin.reason},
                              {"output", fin.output},
                              {"output_label", core::to_json(fin.output_label)}};
            auto batch = core::one_record(core::record_kind::note, std::move(note));
            if (auto r = co_await append(std::move(batch)); !r) co_return r.error();
        }
        if (rec) {
            if (rec->kind != core::record_kind::run_sealed || str_at(rec->body, "status") != status)
                co_return divergence(*rec, "finish " + status);
            take();
            co_return ended(fin.status, fin.reason);
        }
        if (!live)
            co_return core::make_error("incomplete", "the journal of run " + run_id + " ends before its seal (" + status + ")");
        auto reason = fin.reason;
        auto sealed = co_await options_.journal->async_seal(run_id, status, reason);
        if (!sealed) co_return sealed.error();
        co_return ended(fin.status, fin.reason);
    }
}

// ---- queries and control --------------------------------------------------------------------

asio::awaitable<core::result<run_view>> runner::async_get(std::string run_id) {
    auto head = co_await options_.journal->async_head(run_id);
    if (!head) co_return head.error();
    if (!*head) co_return core::make_error("unknown_run", "no run " + run_id);
    run_view v;
    v.summary = **head;
    v.output = nullptr;
    if (v.summary.sealed) {
        // The output note and the seal are the run's last two records.
        auto from = v.summary.head_seq > 1 ? v.summary.head_seq - 1 : 1;
        auto tail = co_await options_.journal->async_read(run_id, from);
        if (!tail) co_return tail.error();
        for (auto const& r : *tail) {
            if (r.kind == core::record_kind::run_sealed) v.reason = str_at(r.body, "reason");
            if (r.kind == core::record_kind::note && str_at(r.body, "event") == "run_output") {
                if (auto const* o = r.body.if_contains("output")) v.output = *o;
                if (auto const* l = r.body.if_contains("output_label"))
                    if (auto label = core::label_from_json(*l)) v.output_label = *label;
            }
        }
    }
    co_return v;
}

asio::awaitable<core::result<run_view>> runner::async_wait(std::string run_id, std::chrono::milliseconds up_to) {
    auto const deadline = std::chrono::steady_clock::now() + up_to;
    auto ex = co_await asio::this_coro::executor;
    for (;;) {
        // Registered before the status is read: a driver that lets go in between still wakes us.
        auto w = std::make_shared<waiter>(ex);
        bool driven_here;
        {
            std::lock_guard lock(mutex_);
            waiters_.emplace(run_id, w);
            driven_here = active_.contains(run_id) || resume_queue_.contains(run_id);
        }
        auto v = co_await async_get(run_id);
        if (!v || v->summary.status != "running" || std::chrono::steady_clock::now() >= deadline) {
            forget_waiter(run_id, w);
            co_return v;
        }
        // A run this runner drives wakes us when its driver lets go. One nothing here drives (a
        // gateway session, a run left behind by stop()) can only be looked at again now and then.
        auto until = driven_here ? deadline : std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(250));
        asio::steady_timer timer(ex, until);
        auto woken = w->wake.async_receive(asio::as_tuple(asio::use_awaitable));
        auto expired = timer.async_wait(asio::as_tuple(asio::use_awaitable));
        co_await (std::move(woken) || std::move(expired));
        forget_waiter(run_id, w);
    }
}

asio::awaitable<core::result<core::run_page>> runner::async_list(core::run_filter filter) {
    co_return co_await options_.journal->async_runs(std::move(filter));
}

asio::awaitable<core::result<std::vector<core::record>>> runner::async_journal(std::string run_id, std::uint64_t from_seq) {
    auto head = co_await options_.journal->async_head(run_id);
    if (!head) co_return head.error();
    if (!*head) co_return core::make_error("unknown_run", "no run " + run_id);
    co_return co_await options_.journal->async_read(run_id, from_seq);
}

asio::awaitable<core::result<std::optional<core::chain_fault>>> runner::async_verify(std::string run_id) {
    auto head = co_await options_.journal->async_head(run_id);
    if (!head) co_return head.error();
    if (!*head) co_return core::make_error("unknown_run", "no run " + run_id);
    co_return co_await options_.journal->async_verify(run_id);
}

asio::awaitable<core::result<void>> runner::async_cancel(std::string run_id) {
    bool was_queued = false;
    {
        std::lock_guard lock(mutex_);
        if (auto it = active_.find(run_id); it != active_.end()) {
            it->second->cancel = true;
            if (it->second->cancelled) it->second->cancelled->try_send(boost::system::error_code{});
            co_return core::result<void>{};
        }
        was_queued = resume_queue_.erase(run_id) > 0;
    }
    auto head = co_await options_.journal->async_head(run_id);
    if (!head) co_return head.error();
    if (!*head) co_return core::make_error("unknown_run", "no run " + run_id);
    if ((*head)->sealed)
        co_return core::make_error("not_cancellable", "run " + run_id + " has already ended (" + (*head)->status + ")");
    if ((*head)->status != "awaiting_approval" && !was_queued)
        co_return core::make_error("not_cancellable", "run " + run_id + " is not being driven by this airlock");
    // Parked, or queued for resumption: nothing drives it, so the seal is written here, under the
    // slot so no decision races it.
    core::error why;
    auto slot = claim_slot(run_id, false, why);
    if (!slot) co_return why;
    std::string status = "cancelled",
                reason = was_queued ? "cancelled by request while waiting to be resumed"
                                    : "cancelled by request while awaiting approval";
    auto sealed = co_await options_.journal->async_seal(run_id, status, reason);
    release_slot(run_id);
    if (!sealed) co_return sealed.error();
    co_return core::result<void>{};
}

asio::awaitable<core::result<replay_report>> runner::async_replay(std::string run_id) {
    auto slot = std::make_shared<run_slot>();
    slot->run_id = run_id;
    auto r = co_await async_drive(slot, false);
    if (!r) co_return r.error();
    replay_report rep;
    rep.status = r->status;
    rep.reason = r->reason;
    rep.output = r->output;
    rep.records = r->records;
    co_return rep;
}

asio::awaitable<core::result<std::vector<pending_approval>>> runner::async_approvals(std::string run_id) {
    auto records = co_await async_journal(run_id, 1);
    if (!records) co_return records.error();
    std::vector<pending_approval> pending;
    for (auto const& r : *records) {
        if (r.kind == core::record_kind::approval_requested) {
            pending_approval p{run_id, str_at(r.body, "effect_key"), str_at(r.body, "tool"), nullptr, r.seq};
            if (auto const* a = r.body.if_contains("arguments")) p.arguments = *a;
            pending.push_back(std::move(p));
        } else if (r.kind == core::record_kind::approval_decided) {
            auto key = str_at(r.body, "effect_key");
            std::erase_if(pending, [&](pending_approval const& p) { return p.effect_key == key; });
        } else if (r.kind == core::record_kind::run_sealed) {
            pending.clear();
        }
    }
    co_return pending;
}

asio::awaitable<core::result<void>> runner::async_decide(std::string run_id, std::string effect_key,
                                                        approval_decision decision) {
    core::error why;
    auto slot = claim_slot(run_id, false, why);
    if (!slot) co_return why;
    auto pending = co_await async_approvals(run_id);
    if (!pending) {
        release_slot(run_id);
        co_return pending.error();
    }
    bool found = std::any_of(pending->begin(), pending->end(), [&](auto const& p) { return p.effect_key == effect_key; });
    if (!found) {
        release_slot(run_id);
        co_return core::make_error(pending->empty() ? "not_awaiting_approval" : "unknown_effect",
                                   pending->empty() ? "run " + run_id + " is not awaiting approval"
                                                    : "run " + run_id + " awaits no decision on " + effect_key);
    }
    json::object body{{"effect_key", effect_key}, {"approved", decision.approved}, {"at_ms", now_ms()}};
    if (!decision.reviewer.empty()) body["reviewer"] = decision.reviewer;
    if (!decision.reason.empty()) body["comment"] = decision.reason;
    auto batch = core::one_record(core::record_kind::approval_decided, std::move(body));
    auto appended = co_await options_.journal->async_append(run_id, std::move(batch));
    if (!appended) {
        release_slot(run_id);
        co_return appended.error();
    }
    spawn(slot);
    co_return core::result<void>{};
}

asio::awaitable<core::result<std::size_t>> runner::async_resume_all() {
    std::size_t resumed = 0;
    core::run_filter filter;
    filter.status = "running";
    filter.limit = 500;
    std::vector<std::string> candidates;
    for (;;) {
        auto page = co_await options_.journal->async_runs(filter);
        if (!page) co_return page.error();
        for (auto const& s : page->runs)
            if (agent(s.agent)) candidates.push_back(s.run_id);
        if (!page->next_cursor) break;
        filter.cursor = page->next_cursor;
    }
    for (auto const& id : candidates) {
        auto first = co_await options_.journal->async_read(id, 1);
        if (!first || first->empty() || str_at(first->front().body, "mode") != "agent") continue;
        // Driven at once while there is room, queued otherwise: thousands of unsealed runs after a
        // crash must not all call their models and tools in the same instant.
        std::shared_ptr<run_slot> slot;
        {
            std::lock_guard lock(mutex_);
            if (stopping_) break;
            if (active_.contains(id) || resume_queue_.contains(id)) continue;
            if (active_.size() >= options_.max_concurrent_runs || !resume_queue_.empty()) {
                resume_queue_.insert(id);
                ++resumed;
                continue;
            }
            slot = insert_slot_locked(id, true);
        }
        spdlog::info("run {}: resuming from its journal", id);
        spawn(slot);
        ++resumed;
    }
    co_return resumed;
}

}  // namespace airlock::service
