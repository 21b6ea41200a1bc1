// The run driver with real parts: the scripted provider, the example's typed in-process ledger
// (examples/ledger/ledger_toolbox.hpp) routed by the ToolRouter, and the journal (in memory; the LMDB
// store is exercised by the crash test). The seed's five checks are in seed_example_test.cpp.

#include "core/manifest.hpp"
#include "core/provenance.hpp"
#include "core/toolbox.hpp"
#include "examples/ledger/ledger_toolbox.hpp"
#include "mcp/client/router.hpp"
#include "service/agents/providers/scripted.hpp"
#include "service/agents/runner.hpp"
#include "store/memory_store.hpp"
#include "tests/support/agent_runs.hpp"
#include "tests/support/observing_client.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <atomic>
#include <functional>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace airlock;
using namespace std::chrono_literals;

namespace {

// TELLER as examples/teller.yaml has it, with the scripted provider and a few knobs.
std::string teller(std::string read_extra = "", std::string budgets = "max_tokens: 100000") {
    return "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: teller, version: \"1.0.0\" }\nspec:\n"
           "  identity: { role: \"Answer questions about a ledger account.\" }\n"
           "  capabilities: { provides: [ledger.ask] }\n"
           "  models: { privileged: { provider: scripted, model: teller-1 } }\n"
           "  security: { max_sensitivity_egress: internal }\n  tools:\n"
           "    - { ref: tool://ledger/read, mutates: false, max_sensitivity: internal, "
           "description: \"Read a ledger account's balance.\"" + read_extra + " }\n"
           "    - ref: tool://ledger/post\n      mutates: true\n      max_sensitivity: internal\n"
           "      description: Post an amount to an account.\n"
           "      protected_fields: [{ path: /account, require_trusted: true }]\n"
           "  execution: { kind: tool-calling, max_turns: 4 }\n  budgets: { " + budgets + " }\n";
}

core::manifest manifest_of(std::string const& yaml) {
    auto m = core::parse_manifest(yaml);
    INFO((m ? std::string() : m.error().message));
    REQUIRE(m.has_value());
    return *m;
}

std::shared_ptr<service::scripted_provider> script(std::string const& yaml) {
    auto s = service::parse_script(yaml);
    INFO((s ? std::string() : s.error().message));
    REQUIRE(s.has_value());
    return std::make_shared<service::scripted_provider>(*s);
}

// Records what reaches the in-process tools: the provenance block of every call.
class recording_client final : public testing::observing_client {
public:
    using observing_client::observing_client;
    std::vector<std::optional<core::provenance>> seen;

private:
    void observe(core::tool_id const&, std::optional<core::provenance> const& prov) override { seen.push_back(prov); }
};

// A provider that does not answer until released: runs stay under way as long as a test needs.
class held_provider final : public core::model_provider {
public:
    explicit held_provider(std::shared_ptr<core::model_provider> inner) : inner_(std::move(inner)) {}
    asio::awaitable<core::model_result<core::completion>> async_complete(core::completion_request request) override {
        if (held) {
            ++waiting;
            asio::steady_timer t(co_await asio::this_coro::executor, 1h);
            timers_.push_back(&t);
            co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            std::erase(timers_, &t);
            --waiting;
        }
        co_return co_await inner_->async_complete(std::move(request));
    }
    // Completes once a run's model call is held here.
    asio::awaitable<void> async_until_asked() {
        while (waiting == 0) {
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(5));
            co_await t.async_wait(asio::use_awaitable);
        }
    }
    void release() {
        held = false;
        for (auto* t : timers_) t->cancel();
    }
    core::destination destination_of() const override { return core::local_destination{}; }
    std::string kind() const override { return "scripted"; }
    int waiting = 0;
    bool held = true;

private:
    std::shared_ptr<core::model_provider> inner_;
    std::vector<asio::steady_timer*> timers_;
};

struct world {
    asio::io_context ioc;
    std::shared_ptr<store::memory_store> journal = std::make_shared<store::memory_store>();
    std::shared_ptr<examples::ledger_state> state = std::make_shared<examples::ledger_state>();
    std::shared_ptr<recording_client> ledger;
    std::shared_ptr<mcp::tool_router> router;
    std::shared_ptr<core::provenance_signer const> signer;

    world() {
        ledger = std::make_shared<recording_client>(examples::make_ledger_toolbox(state));
        router = std::make_shared<mcp::tool_router>(egress());
        REQUIRE(router->add_route("ledger", ledger).has_value());
        auto s = core::provenance_signer::from_raw_seed("test-key", std::string(32, '\x07'));
        REQUIRE(s.has_value());
        signer = std::make_shared<core::provenance_signer const>(std::move(*s));
    }

    static core::egress_allowlist egress() {
        core::egress_allowlist a;
        REQUIRE(a.add(core::local_destination{}).has_value());
        return a;
    }

    std::shared_ptr<service::runner> make(std::vector<service::agent_entry> agents, std::size_t max_runs = 64) {
        service::runner_options o;
        o.executor = ioc.get_executor();
        o.agents = std::move(agents);
        o.tools = router;
        o.egress = egress();
        o.journal = journal;
        o.signer = signer;
        o.max_concurrent_runs = max_runs;
        auto r = service::runner::make(std::move(o));
        REQUIRE(r.has_value());
        return *r;
    }

    // Runs `test` to completion on the world's io_context, with every run it starts.
    void run(std::function<asio::awaitable<void>()> test) {
        auto done = asio::co_spawn(ioc, test(), asio::use_future);
        ioc.run();
        ioc.restart();
        done.get();
    }
};

service::run_request ask(std::string question, std::string agent = "teller") {
    return testing::operator_question(std::move(question), std::move(agent));
}

asio::awaitable<testing::finished_run> run_to_end(std::shared_ptr<service::runner> r, service::run_request req) {
    return testing::async_run_to_end(std::move(r), std::move(req), 30s);
}

std::vector<std::string> kinds(std::vector<core::record> const& records) {
    std::vector<std::string> out;
    for (auto const& r : records) out.emplace_back(core::to_string(r.kind));
    return out;
}

std::size_t count(std::vector<std::string> const& v, std::string const& what) {
    return static_cast<std::size_t>(std::count(v.begin(), v.end(), what));
}

constexpr char read_then_say[] = R"(
model: teller-1
turns:
  - call: { tool: ledger__read, arguments: { account: AC-1 }, id: call_1 }
  - say: "AC-1 holds 42."
)";

}  // namespace

TEST_CASE("every tool call carries a signed provenance block to the in-process tool, and the journal keeps it") {
    world w;
    auto provider = script(read_then_say);
    auto m = manifest_of(teller());
    auto r = w.make({{m, "demo", provider}});
    w.run([&]() -> asio::awaitable<void> {
        auto req5 = ask("what is in AC-1?");
        auto ticket = co_await r->async_start(req5);
        co_await r->async_wait(ticket->run_id, 30s);
        REQUIRE(w.ledger->seen.size() == 1);
        REQUIRE(w.ledger->seen[0].has_value());
        auto const& p = *w.ledger->seen[0];
        CHECK(p.run_id == ticket->run_id);
        CHECK(p.effect_key == ticket->run_id + "/000002/tool");
        CHECK(p.agent_name == "teller");
        CHECK(p.agent_digest == m.digest);
        CHECK(p.tool == "tool://ledger/read");
        core::provenance_verifier v;
        REQUIRE(v.trust_raw("test-key", w.signer->public_key_raw()).has_value());
        auto tool = core::tool_id::parse("tool://ledger/read").value();
        auto args = json::parse(R"({"account":"AC-1"})");
        CHECK(v.verify(p, tool, args, p.issued_at) == core::provenance_verdict::ok);

        auto records = co_await r->async_journal(ticket->run_id, 1);
        bool journaled = false;
        for (auto const& rec : *records)
            if (rec.kind == core::record_kind::effect_started && rec.body.at("target") == "tool") {
                auto kept = core::provenance_from_json(rec.body.at("provenance"));
                REQUIRE(kept.has_value());
                CHECK(kept->attestation->sig == p.attestation->sig);
                journaled = true;
            }
        CHECK(journaled);
    });
}

TEST_CASE("admission beyond max_concurrent_runs is refused with a retry hint until a run ends") {
    world w;
    auto held = std::make_shared<held_provider>(script(read_then_say));
    auto r = w.make({{manifest_of(teller()), "demo", held}}, 2);
    w.run([&]() -> asio::awaitable<void> {
        auto req6 = ask("1");
        auto one = co_await r->async_start(req6);
        auto req7 = ask("2");
        auto two = co_await r->async_start(req7);
        REQUIRE(one.has_value());
        REQUIRE(two.has_value());
        auto req8 = ask("3");
        auto three = co_await r->async_start(req8);
        REQUIRE(three.has_error());
        CHECK(three.error().code == "too_many_runs");
        CHECK(three.error().message.find("max_concurrent_runs (2)") != std::string::npos);
        CHECK(r->retry_after() == 1s);
        held->release();
        auto a = co_await r->async_wait(one->run_id, 30s);
        auto b = co_await r->async_wait(two->run_id, 30s);
        CHECK(a->summary.status == "succeeded");
        CHECK(b->summary.status == "succeeded");
        // The slots are free again once the drivers have let go of them.
        asio::steady_timer settle(co_await asio::this_coro::executor, 50ms);
        co_await settle.async_wait(asio::use_awaitable);
        auto req9 = ask("4");
        auto four = co_await r->async_start(req9);
        REQUIRE(four.has_value());
        co_await r->async_wait(four->run_id, 30s);
    });
}

TEST_CASE("the same idempotency key returns the same run instead of starting another") {
    world w;
    auto provider = script(read_then_say);
    auto r = w.make({{manifest_of(teller()), "demo", provider}});
    w.run([&]() -> asio::awaitable<void> {
        auto req = ask("what is in AC-1?");
        req.idempotency_key = "order-7";
        auto first = co_await r->async_start(req);
        auto second = co_await r->async_start(req);
        REQUIRE(first.has_value());
        REQUIRE(second.has_value());
        CHECK(first->fresh);
        CHECK_FALSE(second->fresh);
        CHECK(second->run_id == first->run_id);
        co_await r->async_wait(first->run_id, 30s);
        CHECK(w.state->reads() == 1);
    });
}

TEST_CASE("a cancelled run stops at its next step without calling its tool") {
    world w;
    auto held = std::make_shared<held_provider>(script(read_then_say));
    auto r = w.make({{manifest_of(teller()), "demo", held}});
    w.run([&]() -> asio::awaitable<void> {
        auto req10 = ask("what is in AC-1?");
        auto ticket = co_await r->async_start(req10);
        co_await held->async_until_asked();
        auto cancelled = co_await r->async_cancel(ticket->run_id);
        CHECK(cancelled.has_value());
        held->release();
        auto done = co_await r->async_wait(ticket->run_id, 30s);
        CHECK(done->summary.status == "cancelled");
        CHECK(w.state->reads() == 0);
        auto again = co_await r->async_cancel(ticket->run_id);
        REQUIRE(again.has_error());
        CHECK(again.error().code == "not_cancellable");
    });
}

TEST_CASE("a run cancelled while its model is thinking ends cancelled at once, without waiting for the answer") {
    world w;
    auto held = std::make_shared<held_provider>(script(read_then_say));
    auto r = w.make({{manifest_of(teller()), "demo", held}});
    w.run([&]() -> asio::awaitable<void> {
        auto req = ask("what is in AC-1?");
        auto ticket = co_await r->async_start(req);
        co_await held->async_until_asked();
        auto cancelled = co_await r->async_cancel(ticket->run_id);
        CHECK(cancelled.has_value());
        // The provider has not answered (it is held for an hour), and the run has ended anyway.
        auto done = co_await r->async_wait(ticket->run_id, 30s);
        CHECK(done->summary.status == "cancelled");
        CHECK(done->reason == "cancelled by request during a model call");
        CHECK(held->waiting == 1);
        CHECK(w.state->reads() == 0);
        // The model call is journaled as failed (in doubt), and replay ends the run the same way.
        auto records = co_await r->async_journal(ticket->run_id, 1);
        REQUIRE(records.has_value());
        bool failed_call = false;
        for (auto const& rec : *records)
            failed_call = failed_call || (rec.kind == core::record_kind::effect_failed &&
                                          json::serialize(rec.body).find("before the model answered") != std::string::npos);
        CHECK(failed_call);
        auto replayed = co_await r->async_replay(ticket->run_id);
        held->release();  // the late answer is dropped
        INFO((replayed ? std::string() : replayed.error().message));
        REQUIRE(replayed.has_value());
        CHECK(replayed->status == core::run_status::cancelled);
        CHECK(replayed->model_calls == 0);
    });
    CHECK(held->waiting == 0);
}

TEST_CASE("a call needing approval waits for a reviewer, and an approved run completes and replays") {
    world w;
    auto provider = script(read_then_say);
    auto r = w.make({{manifest_of(teller(", requires_approval: true")), "demo", provider}});
    w.run([&]() -> asio::awaitable<void> {
        auto req11 = ask("what is in AC-1?");
        auto ticket = co_await r->async_start(req11);
        auto waiting = co_await r->async_wait(ticket->run_id, 30s);
        CHECK(waiting->summary.status == "awaiting_approval");
        CHECK(w.state->reads() == 0);
        auto pending = co_await r->async_approvals(ticket->run_id);
        REQUIRE(pending->size() == 1);
        CHECK(pending->at(0).tool == "tool://ledger/read");
        CHECK(pending->at(0).arguments == json::parse(R"({"account":"AC-1"})"));

        service::approval_decision approve{true, "fine", "alice"};
        std::string no_such_effect = "nope";
        auto wrong = co_await r->async_decide(ticket->run_id, no_such_effect, approve);
        REQUIRE(wrong.has_error());
        CHECK(wrong.error().code == "unknown_effect");
        auto decided = co_await r->async_decide(ticket->run_id, pending->at(0).effect_key, approve);
        REQUIRE(decided.has_value());
        auto done = co_await r->async_wait(ticket->run_id, 30s);
        CHECK(done->summary.status == "succeeded");
        CHECK(w.state->reads() == 1);
        auto replay = co_await r->async_replay(ticket->run_id);
        REQUIRE(replay.has_value());
        CHECK(replay->status == core::run_status::succeeded);
        CHECK(w.state->reads() == 1);
    });
}

TEST_CASE("a rejected call is never made, and the model hears that a reviewer did not approve it") {
    world w;
    auto provider = script(R"(
turns:
  - call: { tool: ledger__read, arguments: { account: AC-1 } }
  - say: "I was not allowed to look."
)");
    auto r = w.make({{manifest_of(teller(", requires_approval: true")), "demo", provider}});
    w.run([&]() -> asio::awaitable<void> {
        auto req12 = ask("what is in AC-1?");
        auto ticket = co_await r->async_start(req12);
        co_await r->async_wait(ticket->run_id, 30s);
        auto pending = co_await r->async_approvals(ticket->run_id);
        REQUIRE(pending->size() == 1);
        service::approval_decision reject{false, "not today", "bob"};
        co_await r->async_decide(ticket->run_id, pending->at(0).effect_key, reject);
        auto done = co_await r->async_wait(ticket->run_id, 30s);
        CHECK(done->summary.status == "succeeded");
        CHECK(w.state->reads() == 0);
        auto records = co_await r->async_journal(ticket->run_id, 1);
        // The second model request carried the rejection as the tool's answer.
        bool told = false;
        for (auto const& rec : *records)
            if (rec.kind == core::record_kind::approval_decided) told = rec.body.at("approved") == false;
        CHECK(told);
    });
}

TEST_CASE("a replay under a manifest that would act differently stops with a divergence naming the seq") {
    world w;
    auto provider = script(read_then_say);
    auto r = w.make({{manifest_of(teller()), "demo", provider}});
    std::string run_id;
    w.run([&]() -> asio::awaitable<void> {
        auto req13 = ask("what is in AC-1?");
        auto ticket = co_await r->async_start(req13);
        run_id = ticket->run_id;
        co_await r->async_wait(run_id, 30s);
    });
    // The reviewed manifest changed: reads now need approval, so the journal's read would not happen.
    auto changed = w.make({{manifest_of(teller(", requires_approval: true")), "demo", provider}});
    w.run([&]() -> asio::awaitable<void> {
        auto replay = co_await changed->async_replay(run_id);
        REQUIRE(replay.has_error());
        CHECK(replay.error().code == "divergence");
        CHECK(replay.error().message.rfind("seq 4:", 0) == 0);
        CHECK(provider->calls() == 2);
    });
}

TEST_CASE("a budget that runs out ends the run exhausted, naming the limit") {
    world w;
    auto provider = script(read_then_say);
    auto r = w.make({{manifest_of(teller("", "max_effects: 2")), "demo", provider}});
    w.run([&]() -> asio::awaitable<void> {
        auto req14 = ask("what is in AC-1?");
        auto run = co_await run_to_end(r, req14);
        CHECK(run.view.summary.status == "exhausted");
        CHECK(run.view.reason == "budget max_effects (2) is spent");
    });
}

TEST_CASE("a model provider outside the egress allowlist is never asked, and the run fails saying why") {
    world w;
    auto provider = script(read_then_say);
    struct remote_provider final : core::model_provider {
        std::shared_ptr<service::scripted_provider> inner;
        asio::awaitable<core::model_result<core::completion>> async_complete(core::completion_request r) override {
            co_return co_await inner->async_complete(std::move(r));
        }
        core::destination destination_of() const override {
            return core::remote_destination{"https", "api.example.com", 443};
        }
        std::string kind() const override { return "openai"; }
    };
    auto remote = std::make_shared<remote_provider>();
    remote->inner = provider;
    auto r = w.make({{manifest_of(teller()), "far", remote}});
    w.run([&]() -> asio::awaitable<void> {
        auto req15 = ask("what is in AC-1?");
        auto run = co_await run_to_end(r, req15);
        CHECK(run.view.summary.status == "failed");
        CHECK(run.view.reason.find("egress_denied") != std::string::npos);
        CHECK(provider->calls() == 0);
    });
}

TEST_CASE("bad run requests are refused naming the field") {
    world w;
    auto r = w.make({{manifest_of(teller()), "demo", script(read_then_say)}});
    w.run([&]() -> asio::awaitable<void> {
        auto req16 = ask("x", "nobody");
        auto unknown = co_await r->async_start(req16);
        CHECK(unknown.error().code == "unknown_agent");
        CHECK(unknown.error().message.rfind("agent:", 0) == 0);
        service::run_request none;
        auto missing = co_await r->async_start(none);
        CHECK(missing.error().code == "invalid_request");
        auto by_capability = ask("x", "");
        by_capability.capability = "ledger.ask";
        auto found = co_await r->async_start(by_capability);
        CHECK(found.has_value());
        by_capability.capability = "ledger.pay";
        auto not_provided = co_await r->async_start(by_capability);
        CHECK(not_provided.error().code == "unknown_capability");
        auto big = ask(std::string(300 * 1024, 'x'));
        auto too_big = co_await r->async_start(big);
        CHECK(too_big.error().code == "invalid_request");
        CHECK(too_big.error().message.rfind("input:", 0) == 0);
        co_await r->async_wait(found->run_id, 30s);
    });
}

namespace {

// A tool that never answers: the call is in flight when the "crash" comes.
template <class Args>
std::shared_ptr<mcp::tool_router> hanging(std::string name, bool mutates, std::shared_ptr<bool> entered) {
    auto box = std::make_shared<core::toolbox>("ledger");
    REQUIRE(box->add<Args>(name, {.description = "Hangs.", .mutates = mutates},
                           [entered](Args) -> asio::awaitable<json::value> {
                               *entered = true;
                               asio::steady_timer t(co_await asio::this_coro::executor, 1h);
                               co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
                               co_return json::value(nullptr);
                           })
                .has_value());
    auto router = std::make_shared<mcp::tool_router>(world::egress());
    REQUIRE(router->add_route("ledger", box).has_value());
    return router;
}

// The first airlock: starts `req` with tools that hang, and stops running once the call is in flight
// (w.ioc is never run again), as a crash would. Returns the run id.
std::string crash_in_call(world& w, service::runner_options o, std::shared_ptr<bool> entered, service::run_request req) {
    o.executor = w.ioc.get_executor();
    auto first = service::runner::make(o).value();
    auto ticket = asio::co_spawn(w.ioc, first->async_start(req), asio::use_future);
    for (int i = 0; i < 1000 && !(*entered && ticket.wait_for(0s) == std::future_status::ready); ++i)
        w.ioc.run_one_for(10ms);
    REQUIRE(*entered);
    return ticket.get().value().run_id;
}

// The second airlock, on the same journal with working tools: resumes everything, then runs `check`.
void restart(world& w, service::runner_options o, std::function<asio::awaitable<void>(service::runner&)> check) {
    asio::io_context second_ioc;
    o.executor = second_ioc.get_executor();
    o.tools = w.router;
    auto second = service::runner::make(o).value();
    auto test = [&]() -> asio::awaitable<void> {
        auto resumed = co_await second->async_resume_all();
        REQUIRE(resumed.has_value());
        CHECK(*resumed == 1);
        co_await check(*second);
    };
    auto done = asio::co_spawn(second_ioc, test(), asio::use_future);
    second_ioc.run();
    done.get();
}

service::runner_options options_for(world& w, std::string manifest_yaml, std::string script_yaml) {
    service::runner_options o;
    o.agents = {{manifest_of(manifest_yaml), "demo", script(script_yaml)}};
    o.egress = world::egress();
    o.journal = w.journal;
    return o;
}

}  // namespace

TEST_CASE("after a crash, a read-only call in doubt is made again with the same effect key and the run completes") {
    world w;
    auto entered = std::make_shared<bool>(false);
    auto o = options_for(w, teller(), read_then_say);
    o.tools = hanging<examples::ledger_read_args>("read", false, entered);
    auto run_id = crash_in_call(w, o, entered, ask("what is in AC-1?"));
    restart(w, o, [&](service::runner& second) -> asio::awaitable<void> {
        auto done = co_await second.async_wait(run_id, 30s);
        CHECK(done->summary.status == "succeeded");
        CHECK(done->output == json::value("AC-1 holds 42."));
        CHECK(w.state->reads() == 1);
        REQUIRE(w.ledger->seen.size() == 1);
        CHECK(w.ledger->seen[0]->effect_key == run_id + "/000002/tool");
        auto after = co_await second.async_journal(run_id, 1);
        CHECK(count(kinds(*after), "effect_started") == 3);
        auto replay = co_await second.async_replay(run_id);
        REQUIRE(replay.has_value());
        CHECK(replay->status == core::run_status::succeeded);
    });
}

TEST_CASE("after a crash, a mutating call in doubt is not made again and the run is quarantined naming it") {
    world w;
    auto entered = std::make_shared<bool>(false);
    // Posting is allowed here for amounts the model picks into an account the caller named.
    auto yaml = teller();
    std::string trusted_only = "protected_fields: [{ path: /account, require_trusted: true }]";
    yaml.replace(yaml.find(trusted_only), trusted_only.size(),
                 "protected_fields: [{ path: /account, allowed_sources: [operator, \"model://scripted/teller-1\"] }]");
    auto o = options_for(w, yaml, R"(
turns:
  - call: { tool: ledger__post, arguments: { account: AC-1, amount: 5 } }
  - say: "posted"
)");
    o.tools = hanging<examples::ledger_post_args>("post", true, entered);
    auto run_id = crash_in_call(w, o, entered, ask("post 5 to AC-1"));
    restart(w, o, [&](service::runner& second) -> asio::awaitable<void> {
        auto done = co_await second.async_wait(run_id, 30s);
        CHECK(done->summary.status == "quarantined");
        CHECK(done->reason.find(run_id + "/000002/tool (tool://ledger/post)") != std::string::npos);
        CHECK(w.state->posts() == 0);
    });
}

TEST_CASE("at restart, unsealed runs beyond max_concurrent_runs wait their turn ahead of new admissions, and all complete") {
    world w;
    // Three runs stuck in a read when the first airlock "crashes".
    auto in_call = std::make_shared<int>(0);
    auto box = std::make_shared<core::toolbox>("ledger");
    REQUIRE(box->add<examples::ledger_read_args>("read", {.description = "Hangs.", .mutates = false},
                                [in_call](examples::ledger_read_args) -> asio::awaitable<json::value> {
                                    ++*in_call;
                                    asio::steady_timer t(co_await asio::this_coro::executor, 1h);
                                    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
                                    co_return json::value(nullptr);
                                })
                .has_value());
    auto stuck = std::make_shared<mcp::tool_router>(world::egress());
    REQUIRE(stuck->add_route("ledger", box).has_value());
    auto o = options_for(w, teller(), read_then_say);
    o.tools = stuck;
    o.executor = w.ioc.get_executor();
    auto first = service::runner::make(o).value();
    std::vector<std::string> ids;
    for (int i = 0; i < 3; ++i) {
        auto ticket = asio::co_spawn(w.ioc, first->async_start(ask("what is in AC-1?")), asio::use_future);
        for (int k = 0; k < 1000 && ticket.wait_for(0s) != std::future_status::ready; ++k) w.ioc.run_one_for(10ms);
        REQUIRE(ticket.wait_for(0s) == std::future_status::ready);
        ids.push_back(ticket.get().value().run_id);
    }
    for (int k = 0; k < 1000 && *in_call < 3; ++k) w.ioc.run_one_for(10ms);
    REQUIRE(*in_call == 3);

    // The second airlock drives one run at a time; its model answers once released, so the runs
    // stay where they are while the test looks.
    asio::io_context second_ioc;
    auto held = std::make_shared<held_provider>(script(read_then_say));
    o.executor = second_ioc.get_executor();
    o.tools = w.router;
    o.max_concurrent_runs = 1;
    o.agents = {{manifest_of(teller()), "demo", held}};
    auto second = service::runner::make(o).value();
    auto test = [&]() -> asio::awaitable<void> {
        auto resumed = co_await second->async_resume_all();
        REQUIRE(resumed.has_value());
        CHECK(*resumed == 3);
        CHECK(second->active_runs() == 1);
        // A slot that frees up goes to a queued run first.
        auto req = ask("another");
        auto refused = co_await second->async_start(req);
        REQUIRE(refused.has_error());
        CHECK(refused.error().code == "too_many_runs");
        held->release();
        for (auto const& id : ids) {
            auto done = co_await second->async_wait(id, 30s);
            REQUIRE(done.has_value());
            CHECK(done->summary.status == "succeeded");
            CHECK(second->active_runs() <= 1);
        }
        CHECK(w.state->reads() == 3);
        CHECK(second->active_runs() == 0);
        auto later = co_await second->async_start(req);
        CHECK(later.has_value());
        if (later) co_await second->async_wait(later->run_id, 30s);
    };
    auto done = asio::co_spawn(second_ioc, test(), asio::use_future);
    second_ioc.run();
    done.get();
}

TEST_CASE("cancelling a run queued for resumption seals it cancelled without driving it") {
    world w;
    auto entered = std::make_shared<bool>(false);
    auto o = options_for(w, teller(), read_then_say);
    o.tools = hanging<examples::ledger_read_args>("read", false, entered);
    auto queued_id = crash_in_call(w, o, entered, ask("what is in AC-1?"));

    // The second airlock's only slot is taken by a run that waits for its model.
    asio::io_context second_ioc;
    auto held = std::make_shared<held_provider>(script(read_then_say));
    o.executor = second_ioc.get_executor();
    o.tools = w.router;
    o.max_concurrent_runs = 1;
    o.agents = {{manifest_of(teller()), "demo", held}};
    auto second = service::runner::make(o).value();
    auto test = [&]() -> asio::awaitable<void> {
        auto req = ask("first");
        auto busy = co_await second->async_start(req);
        REQUIRE(busy.has_value());
        auto resumed = co_await second->async_resume_all();
        REQUIRE(resumed.has_value());
        CHECK(*resumed == 1);
        auto cancelled = co_await second->async_cancel(queued_id);
        CHECK(cancelled.has_value());
        auto view = co_await second->async_wait(queued_id, 30s);
        REQUIRE(view.has_value());
        CHECK(view->summary.status == "cancelled");
        CHECK(view->reason == "cancelled by request while waiting to be resumed");
        held->release();
        auto other = co_await second->async_wait(busy->run_id, 30s);
        CHECK(other->summary.status == "succeeded");
        CHECK(w.state->reads() == 1);  // the busy run's read; the cancelled one never ran again
    };
    auto done = asio::co_spawn(second_ioc, test(), asio::use_future);
    second_ioc.run();
    done.get();
}
