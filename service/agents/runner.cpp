#include "service/agents/runner.hpp"

#include "core/journal_rules.hpp"

#include "core/record_body.hpp"
#include "core/canonical_json.hpp"
#include "core/label.hpp"
#include "core/rfc3339.hpp"
#include "service/agents/runner_driver.hpp"
#include "service/agents/runner_slots.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <set>

// The runner's admission (make, async_start) and its queries and control (get, wait, cancel,
// replay, approvals, decide, resume). Its slots are in runner_slots.cpp; the driver of one run, which
// performs core::recovery's decisions, in runner_driver.cpp.

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace asio::experimental::awaitable_operators;

namespace {

void csprng(std::uint8_t* out, std::size_t n) {
    if (RAND_bytes(out, static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
}

// Why a run that no agent drove cannot be replayed, resumed or decided, and what to do with it instead.
std::string not_an_agent_run_text(std::string const& run_id, std::string const& kind) {
    if (kind == "session")
        return "run " + run_id + " is a gateway session's run: a gateway session has nothing to replay (no model chose its "
               "calls; its clients did). Read its calls with `airlock journal show " + run_id +
               "` and check its chain with `airlock journal verify " + run_id + "`";
    return "run " + run_id + " is airlock's own record keeping, not an agent's run: nothing to replay. Read it with "
           "`airlock journal show " + run_id + "`";
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
    if (!options.journal) return core::make_error(core::errc::invalid_runner, "the runner needs a journal");
    if (!options.tools) return core::make_error(core::errc::invalid_runner, "the runner needs a tool client");
    if (!options.executor) return core::make_error(core::errc::invalid_runner, "the runner needs an executor");
    std::set<std::string> names;
    for (auto const& a : options.agents) {
        if (!names.insert(a.manifest.name).second)
            return core::make_error(core::errc::invalid_runner, "agent '" + a.manifest.name + "' is configured twice");
        if (!a.provider) return core::make_error(core::errc::invalid_runner, "agent '" + a.manifest.name + "' has no model provider");
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

std::uint64_t runner::now_ms() const { return unix_ms(options_); }

agent_entry const* runner::agent(std::string const& name) const {
    for (auto const& a : options_.agents)
        if (a.manifest.name == name) return &a;
    return nullptr;
}

// ---- admission ------------------------------------------------------------------------------

asio::awaitable<core::result<run_ticket>> runner::async_start(run_request request) {
    agent_entry const* chosen = nullptr;
    if (!request.agent.empty()) {
        chosen = agent(request.agent);
        if (!chosen) co_return core::make_error(core::errc::unknown_agent, "agent: no agent named '" + request.agent + "'");
    } else if (!request.capability.empty()) {
        std::vector<agent_entry const*> providers;
        for (auto const& a : options_.agents)
            for (auto const& c : a.manifest.provides)
                if (c == request.capability) providers.push_back(&a);
        if (providers.empty())
            co_return core::make_error(core::errc::unknown_capability, "capability: no agent provides '" + request.capability + "'");
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
    auto body = admitted_body(*chosen, request, core::rfc3339(now), now_ms());
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

// Reads the run's journal and builds its loop as admitted; run_driver performs the rest.
asio::awaitable<core::result<runner::drive_result>> runner::async_drive(std::shared_ptr<run_slot> slot, bool live) {
    auto const run_id = slot->run_id;
    auto read = co_await options_.journal->async_read(run_id, 1);
    if (!read) co_return read.error();
    auto records = std::move(*read);
    if (records.empty()) co_return core::make_error(core::errc::unknown_run, "no run " + run_id);
    if (records.front().kind != core::record_kind::run_admitted)
        co_return core::make_error(core::errc::not_admitted, "run " + run_id + " does not start with run_admitted");
    auto const& admitted = records.front().body;
    if (auto kind = core::run_kind_of(admitted); kind != "agent")
        co_return core::make_error(core::errc::not_an_agent_run, not_an_agent_run_text(run_id, kind));
    std::string agent_name;
    if (auto const* a = admitted.if_contains("agent"); a && a->is_object()) agent_name = core::body_string(a->get_object(), "name");
    auto const* entry = agent(agent_name);
    if (!entry) co_return core::make_error(core::errc::unknown_agent, "run " + run_id + " was made by agent '" + agent_name +
                                                                "', which is not configured");
    auto parsed_id = core::run_id::parse(run_id);
    if (!parsed_id) co_return core::make_error(core::errc::invalid_run, "run id " + run_id + " is not a ULID");
    core::run_input input;
    if (auto const* in = admitted.if_contains("input")) input.value = *in;
    if (auto const* l = admitted.if_contains("input_label")) {
        auto label = core::label_from_json(*l);
        if (!label) co_return core::make_error(core::errc::malformed_record, "seq 1: input_label: " + label.error().message);
        input.input_label = *label;
    }

    core::agent_loop_options lo;
    lo.agent = entry->manifest;
    lo.provider = entry->provider->kind();
    lo.model = entry->manifest.privileged_model ? entry->manifest.privileged_model->model : "";
    lo.egress = options_.egress;
    lo.destination_of = [tools = options_.tools](core::tool_id const& t) { return tools->destination_of(t); };
    if (live && options_.catalogue) lo.tools = co_await options_.catalogue(entry->manifest);
    auto const admitted_at_ms = core::body_u64(admitted, "admitted_at_ms");
    core::agent_loop loop(std::move(lo), *parsed_id, std::move(input), admitted_at_ms);

    auto stopping = [this] {
        std::lock_guard lock(mutex_);
        return stopping_;
    };
    run_driver driver(run_driver::context{options_, *entry, std::move(slot), std::move(stopping), live}, std::move(records),
                      std::move(loop));
    co_return co_await driver.async_run(admitted_at_ms);
}

// ---- queries and control --------------------------------------------------------------------

asio::awaitable<core::result<run_view>> runner::async_get(std::string run_id) {
    auto head = co_await options_.journal->async_head(run_id);
    if (!head) co_return head.error();
    if (!*head) co_return core::make_error(core::errc::unknown_run, "no run " + run_id);
    run_view v;
    v.summary = **head;
    v.output = nullptr;
    if (v.summary.sealed) {
        // The output note and the seal are the run's last two records.
        auto from = v.summary.head_seq > 1 ? v.summary.head_seq - 1 : 1;
        auto tail = co_await options_.journal->async_read(run_id, from);
        if (!tail) co_return tail.error();
        for (auto const& r : *tail) {
            if (r.kind == core::record_kind::run_sealed) v.reason = core::body_string(r.body, "reason");
            if (r.kind == core::record_kind::note && core::body_string(r.body, "event") == "run_output") {
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
    if (!*head) co_return core::make_error(core::errc::unknown_run, "no run " + run_id);
    co_return co_await options_.journal->async_read(run_id, from_seq);
}

asio::awaitable<core::result<std::optional<core::chain_fault>>> runner::async_verify(std::string run_id) {
    auto head = co_await options_.journal->async_head(run_id);
    if (!head) co_return head.error();
    if (!*head) co_return core::make_error(core::errc::unknown_run, "no run " + run_id);
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
    if (!*head) co_return core::make_error(core::errc::unknown_run, "no run " + run_id);
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
            pending_approval p{run_id, core::body_string(r.body, "effect_key"), core::body_string(r.body, "tool"), nullptr, r.seq};
            if (auto const* a = r.body.if_contains("arguments")) p.arguments = *a;
            pending.push_back(std::move(p));
        } else if (r.kind == core::record_kind::approval_decided) {
            auto key = core::body_string(r.body, "effect_key");
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
        if (!first || first->empty() || core::body_string(first->front().body, "mode") != "agent") continue;
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