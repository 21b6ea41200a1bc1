// The seed's TELLER example end to end, the five things it shows, each against both ledgers: the
// typed in-process ToolBox (examples/ledger/ledger_toolbox.hpp) and the example MCP server over
// stdio (examples/ledger/server.mjs). The manifest is examples/teller.yaml as shipped, the model
// the scripted provider, the journal the real LMDB store in a temporary directory.
//   (1) the model's read is answered, and strict replay reassembles the run with zero calls;
//   (2) an ungranted ledger__write is refused, reported to the model, and the run still succeeds;
//   (3) a model-chosen /account on post is refused while the amount would have been fine;
//   (4) a model that never stops asking fails at max_turns;
//   (5) the first run's journal holds an effect per model turn and per tool call, and verifies.

#include "examples/ledger/ledger_toolbox.hpp"
#include "mcp/client/client.hpp"
#include "mcp/client/router.hpp"
#include "mcp/client/stdio_transport.hpp"
#include "service/config/config.hpp"
#include "service/agents/providers/scripted.hpp"
#include "service/agents/runner.hpp"
#include "store/lmdb_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/agent_runs.hpp"
#include "tests/support/observing_client.hpp"
#include "tests/support/teller_example.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>

#include <atomic>
#include <optional>
#include <functional>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace airlock;
using namespace std::chrono_literals;

namespace {

enum class ledger_kind { toolbox, stdio };

// Counts the calls that reach the ledger, by tool name, whichever ledger it is.
class counting_client final : public testing::observing_client {
public:
    using observing_client::observing_client;
    std::atomic<int> reads{0}, posts{0};

private:
    void observe(core::tool_id const& tool, std::optional<core::provenance> const&) override {
        ++(tool.name() == "post" ? posts : reads);
    }
};

// What the model was sent, turn by turn.
class recording_provider final : public core::model_provider {
public:
    explicit recording_provider(std::shared_ptr<core::model_provider> inner) : inner_(std::move(inner)) {}
    asio::awaitable<core::model_result<core::completion>> async_complete(core::completion_request request) override {
        requests.push_back(request);
        co_return co_await inner_->async_complete(std::move(request));
    }
    core::destination destination_of() const override { return inner_->destination_of(); }
    std::string kind() const override { return inner_->kind(); }
    std::vector<core::completion_request> requests;

private:
    std::shared_ptr<core::model_provider> inner_;
};

// The example's configuration (ledger upstream, egress, journal) in a temporary directory, with one
// of the two ledgers behind the ToolRouter.
struct seed_world {
    ledger_kind kind;
    testing::temp_dir dir{"airlock-seed"};
    asio::io_context ioc;
    service::config config;
    std::shared_ptr<store::lmdb_store> journal;
    std::shared_ptr<examples::ledger_state> state;  // the ToolBox's
    std::shared_ptr<mcp::mcp_client> stdio_ledger;  // the server's
    std::shared_ptr<counting_client> ledger;        // either, counted
    std::shared_ptr<mcp::tool_router> router;
    std::shared_ptr<core::provenance_signer const> signer;

    explicit seed_world(ledger_kind k) : kind(k) {
        auto c = service::load_config(testing::teller::write_config(dir.path(), testing::teller::manifest()));
        INFO((c ? std::string() : c.error().message));
        REQUIRE(c.has_value());
        config = std::move(*c);
        journal = std::shared_ptr<store::lmdb_store>(store::lmdb_store::open(config.journal).value());
        std::shared_ptr<core::tool_client> inner;
        if (kind == ledger_kind::toolbox) {
            state = std::make_shared<examples::ledger_state>();
            inner = examples::make_ledger_toolbox(state);
        } else {
            auto const& u = config.upstreams.at(0);
            mcp::client_options co;
            co.server_name = u.name;
            co.kind = mcp::transport_kind::stdio;
            stdio_ledger = std::make_shared<mcp::mcp_client>(
                std::make_unique<mcp::stdio_transport>(ioc.get_executor(), u.stdio), co);
            inner = stdio_ledger;
        }
        ledger = std::make_shared<counting_client>(inner);
        router = std::make_shared<mcp::tool_router>(config.egress);
        REQUIRE(router->add_route("ledger", ledger).has_value());
        auto s = core::provenance_signer::from_raw_seed("seed-key", std::string(32, '\x05'));
        REQUIRE(s.has_value());
        signer = std::make_shared<core::provenance_signer const>(std::move(*s));
    }
    ~seed_world() { journal->close(); }

    std::shared_ptr<service::runner> make(std::shared_ptr<core::model_provider> provider) {
        service::runner_options o;
        o.executor = ioc.get_executor();
        o.agents.push_back({config.agents.at(0).manifest, "script", std::move(provider)});
        o.tools = router;
        o.egress = config.egress;
        o.journal = journal;
        o.signer = signer;
        auto r = service::runner::make(std::move(o));
        REQUIRE(r.has_value());
        return *r;
    }

    // Runs `test` on the world's loop, then stops the ledger server (if any).
    void run(std::function<asio::awaitable<void>()> test) {
        auto body = [this, test]() -> asio::awaitable<void> {
            co_await test();
            if (stdio_ledger) co_await stdio_ledger->async_close();
        };
        auto done = asio::co_spawn(ioc, body(), asio::use_future);
        ioc.run();
        done.get();
    }

    // AC-1's balance as the ledger itself has it (asked directly, not through a run).
    asio::awaitable<std::int64_t> balance() {
        auto tool = core::tool_id::parse("tool://ledger/read").value();
        json::value args = json::object{{"account", "AC-1"}};
        std::shared_ptr<core::tool_client> direct = stdio_ledger;
        if (!direct) direct = examples::make_ledger_toolbox(state);
        auto got = co_await direct->async_call(tool, args, std::nullopt);
        REQUIRE(got.has_value());
        co_return got->at("balance").to_number<std::int64_t>();
    }
};

std::shared_ptr<recording_provider> scripted(std::string const& yaml) {
    auto s = service::parse_script(yaml);
    INFO((s ? std::string() : s.error().message));
    REQUIRE(s.has_value());
    return std::make_shared<recording_provider>(std::make_shared<service::scripted_provider>(*s));
}

asio::awaitable<testing::finished_run> run_to_end(std::shared_ptr<service::runner> r) {
    return testing::async_run_to_end(std::move(r), testing::operator_question("what is in AC-1?"));
}

std::vector<core::record> of_kind(std::vector<core::record> const& records, core::record_kind k) {
    std::vector<core::record> out;
    for (auto const& r : records)
        if (r.kind == k) out.push_back(r);
    return out;
}

// The tool message the model was sent last, answering its call `call_id`.
core::model_message const* tool_answer(recording_provider const& p, std::string const& call_id) {
    if (p.requests.empty()) return nullptr;
    for (auto const& m : p.requests.back().messages)
        if (m.role == core::message_role::tool && m.tool_call_id == call_id) return &m;
    return nullptr;
}

constexpr char read_then_say[] = R"(
model: teller-1
turns:
  - call: { tool: ledger__read, arguments: { account: AC-1 }, id: call_1 }
  - say: "AC-1 holds 42."
)";

// What a scenario's run came to: the test case states its headline on it, the helper checks the rest.
struct seed_outcome {
    std::string status;                       // the run's final status
    std::size_t denials = 0;                  // its policy_denied records
    std::optional<std::uint64_t> replay_calls;  // model + tool calls its strict replay made, if replayed
};

seed_outcome outcome_of(testing::finished_run const& run) {
    return {run.view.summary.status, of_kind(run.records, core::record_kind::policy_denied).size(), std::nullopt};
}

// Checks that the run succeeded with exactly one refusal, of `tool` for `reason`, and that the
// model was told its call `call_id` failed; that refusal's record.
core::record the_one_refusal(testing::finished_run const& run, recording_provider const& provider,
                             std::string const& call_id, char const* reason, char const* tool) {
    CHECK(run.view.summary.status == "succeeded");
    auto denied = of_kind(run.records, core::record_kind::policy_denied);
    REQUIRE(denied.size() == 1);
    CHECK(denied[0].body.at("reason") == reason);
    CHECK(denied[0].body.at("tool") == tool);
    auto answered = tool_answer(provider, call_id);
    REQUIRE(answered != nullptr);
    CHECK(answered->is_error);
    return denied[0];
}

// (1) and (5): the first run.
seed_outcome the_read_is_answered_and_replays_with_zero_calls(ledger_kind kind) {
    seed_world w(kind);
    seed_outcome out;
    auto provider = scripted(read_then_say);
    auto r = w.make(provider);
    w.run([&]() -> asio::awaitable<void> {
        auto run = co_await run_to_end(r);
        out = outcome_of(run);
        CHECK(run.view.summary.status == "succeeded");
        CHECK(run.view.output == json::value("AC-1 holds 42."));
        // The answer is the model's: labelled untrusted.
        CHECK(run.view.output_label.trust == core::trust::untrusted);
        CHECK(w.ledger->reads == 1);
        auto answered = tool_answer(*provider, "call_1");
        REQUIRE(answered != nullptr);
        CHECK_FALSE(answered->is_error);
        CHECK(answered->text.find("42") != std::string::npos);

        auto replay = co_await r->async_replay(run.run_id);
        REQUIRE(replay.has_value());
        out.replay_calls = replay->model_calls + replay->tool_calls;
        CHECK(replay->status == core::run_status::succeeded);
        CHECK(replay->output == run.view.output);
        CHECK(replay->model_calls == 0);
        CHECK(replay->tool_calls == 0);
        // Measured, not claimed: nothing reached the model or the ledger.
        CHECK(provider->requests.size() == 2);
        CHECK(w.ledger->reads == 1);
    });
    return out;
}

seed_outcome the_journal_has_an_effect_per_turn_and_call_and_verifies(ledger_kind kind) {
    seed_world w(kind);
    seed_outcome out;
    auto provider = scripted(read_then_say);
    auto r = w.make(provider);
    std::string run_id;
    w.run([&]() -> asio::awaitable<void> {
        auto run = co_await run_to_end(r);
        out = outcome_of(run);
        REQUIRE(run.view.summary.status == "succeeded");
        run_id = run.run_id;
        auto started = of_kind(run.records, core::record_kind::effect_started);
        std::size_t model = 0, tool = 0;
        for (auto const& s : started) {
            auto key = std::string(s.body.at("effect_key").as_string());
            (key.ends_with("/model") ? model : tool) += 1;
            // Each effect's outcome is journaled too.
            bool done = false;
            for (auto const& d : of_kind(run.records, core::record_kind::effect_done))
                done = done || d.body.at("effect_key") == json::value(key);
            CHECK(done);
        }
        CHECK(model >= provider->requests.size());
        CHECK(tool >= static_cast<std::size_t>(w.ledger->reads + w.ledger->posts));
        CHECK(model == 2);
        CHECK(tool == 1);
        CHECK(of_kind(run.records, core::record_kind::effect_done).size() == 3);
        CHECK(run.records.front().kind == core::record_kind::run_admitted);
        CHECK(run.records.back().kind == core::record_kind::run_sealed);
        auto verified = co_await r->async_verify(run.run_id);
        REQUIRE(verified.has_value());
        CHECK_FALSE(verified->has_value());
    });
    // And the chain verifies from the LMDB file alone, as an auditor would check it.
    w.journal->close();
    auto verify = testing::run_command({AIRLOCK_BINARY, "journal", "verify", run_id, "--journal",
                                        (w.dir.path() / "journal").string()});
    INFO(verify.out << verify.err);
    CHECK(verify.exit_code == 0);
    return out;
}

// (2)
seed_outcome an_ungranted_write_is_refused_and_the_run_succeeds(ledger_kind kind) {
    seed_world w(kind);
    seed_outcome out;
    auto provider = scripted(R"(
turns:
  - call: { tool: ledger__write, arguments: { account: AC-1, amount: 0 }, id: call_w }
  - say: "I could not write; AC-1 is unchanged."
)");
    auto r = w.make(provider);
    w.run([&]() -> asio::awaitable<void> {
        auto run = co_await run_to_end(r);
        out = outcome_of(run);
        // Reported to the model as a failed call, and nothing reached the ledger.
        the_one_refusal(run, *provider, "call_w", "not_granted", "ledger__write");
        CHECK(w.ledger->reads + w.ledger->posts == 0);
    });
    return out;
}

// (3)
seed_outcome a_model_chosen_account_is_refused_though_the_amount_was_fine(ledger_kind kind) {
    seed_world w(kind);
    seed_outcome out;
    auto provider = scripted(R"(
turns:
  - call: { tool: ledger__post, arguments: { account: AC-1, amount: 100 }, id: call_p }
  - say: "I was not permitted to post to AC-1."
)");
    auto r = w.make(provider);
    w.run([&]() -> asio::awaitable<void> {
        auto run = co_await run_to_end(r);
        out = outcome_of(run);
        auto denied = the_one_refusal(run, *provider, "call_p", "protected_field_untrusted", "tool://ledger/post");
        INFO(json::serialize(denied.body));
        CHECK(std::string(denied.body.at("detail").as_string()).find("/account") != std::string::npos);
        // The ledger never saw the post: its count stays 0 and the balance is as it opened.
        CHECK(w.ledger->posts == 0);
        if (w.state) CHECK(w.state->posts() == 0);
        auto balance = co_await w.balance();
        CHECK(balance == 42);

        // The amount was fine: the same post with a trusted account (from the operator, not the
        // model) goes through to the same ledger.
        auto tool = core::tool_id::parse("tool://ledger/post").value();
        json::value args = json::object{{"account", "AC-1"}, {"amount", 100}};
        auto posted = co_await w.ledger->async_call(tool, args, std::nullopt);
        REQUIRE(posted.has_value());
        CHECK(posted->at("balance") == 142);
        if (w.state) CHECK(w.state->posts() == 1);
    });
    return out;
}

// (4)
seed_outcome a_model_that_never_stops_asking_fails_at_max_turns(ledger_kind kind) {
    seed_world w(kind);
    seed_outcome out;
    auto provider = scripted(R"(
after_last: repeat
turns:
  - call: { tool: ledger__read, arguments: { account: AC-1 } }
)");
    auto r = w.make(provider);
    w.run([&]() -> asio::awaitable<void> {
        auto run = co_await run_to_end(r);
        out = outcome_of(run);
        CHECK(run.view.summary.status == "failed");
        CHECK(run.view.reason.find("max_turns (4)") != std::string::npos);
        CHECK(run.view.output.is_null());
        CHECK(provider->requests.size() == 4);
        CHECK(w.ledger->reads == 4);
        // Its replay ends the same way, with no call made.
        auto replay = co_await r->async_replay(run.run_id);
        REQUIRE(replay.has_value());
        out.replay_calls = replay->model_calls + replay->tool_calls;
        CHECK(replay->status == core::run_status::failed);
        CHECK(provider->requests.size() == 4);
        CHECK(w.ledger->reads == 4);
    });
    return out;
}

}  // namespace

TEST_CASE("seed (1) with the in-process ToolBox ledger: the read is answered and strict replay makes zero calls") {
    auto out = the_read_is_answered_and_replays_with_zero_calls(ledger_kind::toolbox);
    CHECK(out.status == "succeeded");
    CHECK(out.replay_calls == std::optional<std::uint64_t>(0));
}
TEST_CASE("seed (1) with the stdio MCP ledger: the read is answered and strict replay makes zero calls") {
    auto out = the_read_is_answered_and_replays_with_zero_calls(ledger_kind::stdio);
    CHECK(out.status == "succeeded");
    CHECK(out.replay_calls == std::optional<std::uint64_t>(0));
}
TEST_CASE("seed (2) with the in-process ToolBox ledger: an ungranted ledger__write is refused, told, and the run succeeds") {
    auto out = an_ungranted_write_is_refused_and_the_run_succeeds(ledger_kind::toolbox);
    CHECK(out.status == "succeeded");
    CHECK(out.denials == 1);
}
TEST_CASE("seed (2) with the stdio MCP ledger: an ungranted ledger__write is refused, told, and the run succeeds") {
    auto out = an_ungranted_write_is_refused_and_the_run_succeeds(ledger_kind::stdio);
    CHECK(out.status == "succeeded");
    CHECK(out.denials == 1);
}
TEST_CASE("seed (3) with the in-process ToolBox ledger: a model-chosen account on post is refused, the amount was fine") {
    auto out = a_model_chosen_account_is_refused_though_the_amount_was_fine(ledger_kind::toolbox);
    CHECK(out.status == "succeeded");
    CHECK(out.denials == 1);
}
TEST_CASE("seed (3) with the stdio MCP ledger: a model-chosen account on post is refused, the amount was fine") {
    auto out = a_model_chosen_account_is_refused_though_the_amount_was_fine(ledger_kind::stdio);
    CHECK(out.status == "succeeded");
    CHECK(out.denials == 1);
}
TEST_CASE("seed (4) with the in-process ToolBox ledger: a model that never stops asking fails at max_turns") {
    auto out = a_model_that_never_stops_asking_fails_at_max_turns(ledger_kind::toolbox);
    CHECK(out.status == "failed");
    CHECK(out.replay_calls == std::optional<std::uint64_t>(0));
}
TEST_CASE("seed (4) with the stdio MCP ledger: a model that never stops asking fails at max_turns") {
    auto out = a_model_that_never_stops_asking_fails_at_max_turns(ledger_kind::stdio);
    CHECK(out.status == "failed");
    CHECK(out.replay_calls == std::optional<std::uint64_t>(0));
}
TEST_CASE("seed (5) with the in-process ToolBox ledger: the journal has an effect per turn and call, and verifies") {
    auto out = the_journal_has_an_effect_per_turn_and_call_and_verifies(ledger_kind::toolbox);
    CHECK(out.status == "succeeded");
}
TEST_CASE("seed (5) with the stdio MCP ledger: the journal has an effect per turn and call, and verifies") {
    auto out = the_journal_has_an_effect_per_turn_and_call_and_verifies(ledger_kind::stdio);
    CHECK(out.status == "succeeded");
}
