// The gateway's journal runs on a real (in-memory) journal store: a run per session or principal,
// sealed and continued past its limits, sealed when a principal's calls stop, and refused once its
// gateway is replaced or stopping.
#include "service/gateway/session_runs.hpp"

#include "store/memory_store.hpp"
#include "tests/support/run_awaitable.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>

#include <openssl/rand.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using namespace airlock;
namespace asio = boost::asio;

namespace {

using clock_type = std::chrono::system_clock;

struct harness {
    asio::io_context ioc;
    std::shared_ptr<store::memory_store> journal = std::make_shared<store::memory_store>();
    clock_type::time_point now = clock_type::time_point(std::chrono::hours(24 * 20'000));
    std::shared_ptr<service::session_runs> runs;
    service::gateway_principal alice;

    explicit harness(service::gateway_run_limits limits) {
        service::session_runs_options o;
        o.executor = ioc.get_executor();
        o.journal = journal;
        o.instance = "0123456789abcdef0123456789abcdef";
        o.clock = [this] { return now; };
        o.random = [](std::uint8_t* out, std::size_t n) { RAND_bytes(out, static_cast<int>(n)); };
        o.limits = limits;
        runs = service::session_runs::make(std::move(o));
        auto m = core::parse_manifest(
            "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: desk, version: \"1\" }\nspec:\n  tools: []\n  budgets: {}\n");
        REQUIRE(m.has_value());
        alice = {"alice", *m, false, false};
    }

    static mcp::request_context context(std::string session) {
        mcp::request_context ctx;
        ctx.principal = "alice";
        ctx.session_id = std::move(session);
        ctx.protocol_version = session.empty() ? "2026-07-28" : "2025-11-25";
        return ctx;
    }

    // Runs `body` on the io_context, then waits for every seal it caused.
    template <class F>
    void run(F body) {
        auto task = [&]() -> asio::awaitable<void> {
            co_await body();
            runs->close_all();
            co_await runs->async_closed(std::chrono::seconds(10));
        };
        auto fut = asio::co_spawn(ioc, task(), asio::use_future);
        ioc.run();
        fut.get();
    }

    // One tools/call's use of its run: the run, one step, the hold released.
    asio::awaitable<std::string> async_call(std::string session = "") {
        auto run = co_await runs->async_run_for(context(session), alice);
        REQUIRE(run.has_value());
        auto held = runs->hold(*run);
        runs->next_step(*run);
        co_return *run;
    }

    std::vector<core::record> records(std::string const& run) {
        auto r = testing::run_awaitable(journal->async_read(run, 1));
        REQUIRE(r.has_value());
        return *r;
    }
    std::string seal_reason(std::string const& run) {
        auto r = records(run);
        REQUIRE(r.back().kind == core::record_kind::run_sealed);
        return std::string(r.back().body.at("reason").as_string());
    }
};

}  // namespace

TEST_CASE("a principal's calls roll over into a new run after max_calls, each run naming the one it continues") {
    service::gateway_run_limits limits;
    limits.max_calls = 3;
    harness h(limits);
    std::vector<std::string> used;
    h.run([&]() -> asio::awaitable<void> {
        for (int i = 0; i < 7; ++i) used.push_back(co_await h.async_call());
    });
    REQUIRE(used.size() == 7);
    auto const a = used[0], b = used[3], c = used[6];
    CHECK(std::vector<std::string>(used.begin(), used.begin() + 3) == std::vector<std::string>(3, a));
    CHECK(std::vector<std::string>(used.begin() + 3, used.begin() + 6) == std::vector<std::string>(3, b));
    CHECK(a != b);
    CHECK(b != c);
    CHECK_THAT(h.seal_reason(a), Catch::Contains("3 calls (journal.session_runs.max_calls)") &&
                                     Catch::Contains("continue in run " + b));
    CHECK(h.records(b).front().body.at("continues").as_string() == a);
    CHECK(h.records(c).front().body.at("continues").as_string() == b);
    CHECK_FALSE(h.records(a).front().body.contains("continues"));
    // Each is a session run alice owns, listed as such.
    core::run_filter f;
    f.kind = "session";
    auto page = testing::run_awaitable(h.journal->async_runs(f));
    REQUIRE(page.has_value());
    REQUIRE(page->runs.size() == 3);
    for (auto const& s : page->runs) {
        CHECK(s.principal == "alice");
        CHECK(s.sealed);
    }
    f.kind = "agent";
    CHECK(testing::run_awaitable(h.journal->async_runs(f))->runs.empty());
}

TEST_CASE("a run open for max_age is continued by the next call; a run still in a call is sealed only when it ends") {
    service::gateway_run_limits limits;
    limits.max_age = std::chrono::hours(1);
    harness h(limits);
    std::string first, second;
    bool sealed_while_held = true;
    h.run([&]() -> asio::awaitable<void> {
        first = co_await h.async_call("s1");
        auto open = co_await h.runs->async_run_for(h.context("s1"), h.alice);
        auto held = h.runs->hold(*open);  // a call of the old run, still waiting for its upstream
        h.now += std::chrono::minutes(61);
        second = co_await h.async_call("s1");
        // The seal is posted; give it time to run if it were going to.
        asio::steady_timer pause(h.ioc, std::chrono::milliseconds(100));
        co_await pause.async_wait(asio::use_awaitable);
        sealed_while_held = testing::run_awaitable(h.journal->async_head(first))->value().sealed;
        held.reset();
    });
    CHECK(first != second);
    CHECK_FALSE(sealed_while_held);
    CHECK_THAT(h.seal_reason(first), Catch::Contains("open for journal.session_runs.max_age"));
    CHECK(h.records(second).front().body.at("continues").as_string() == first);
}

TEST_CASE("a principal's run with no call for the idle timeout is sealed by expire; a legacy session's is left to its session") {
    service::gateway_run_limits limits;
    limits.idle = std::chrono::minutes(30);
    harness h(limits);
    std::string stateless, session, later;
    std::size_t expired_early = 99, expired = 99;
    h.run([&]() -> asio::awaitable<void> {
        stateless = co_await h.async_call();
        session = co_await h.async_call("s1");
        h.now += std::chrono::minutes(29);
        expired_early = h.runs->expire();
        h.now += std::chrono::minutes(2);
        expired = h.runs->expire();
        later = co_await h.async_call();
        co_await h.runs->async_closed(std::chrono::seconds(5));
    });
    CHECK(expired_early == 0);
    CHECK(expired == 1);
    CHECK_THAT(h.seal_reason(stateless), Catch::Contains("idle: no call for server.sessions.idle_timeout"));
    CHECK(later != stateless);
    CHECK(h.seal_reason(session) == "airlock stopped");
}

TEST_CASE("a gateway replaced by a reload seals its runs with that reason and refuses to admit another, saying why") {
    harness h(service::gateway_run_limits{});
    std::string run;
    std::optional<core::error> refused;
    h.run([&]() -> asio::awaitable<void> {
        run = co_await h.async_call("s1");
        h.runs->close_all("configuration reloaded; the next call begins a new run", "reloaded");
        auto again = co_await h.runs->async_run_for(h.context("s2"), h.alice);
        if (!again) refused = again.error();
    });
    REQUIRE(refused.has_value());
    CHECK(refused->code == "reloaded");
    CHECK(h.seal_reason(run) == "configuration reloaded; the next call begins a new run");
    CHECK(h.runs->settled());
}

namespace {

// A call of `run` journaled as the gateway journals one: its start now, its outcome deferred after
// the reply. `output` is the outcome's output; one over a journal record's limit is refused.
asio::awaitable<std::string> async_journaled_call(harness& h, std::string const& run, std::string const& tool,
                                                  bool mutates, boost::json::value output) {
    auto held = h.runs->hold(run);
    auto key = run + "/" + std::to_string(h.runs->next_step(run)) + "/tool";
    boost::json::object started{{"effect_key", key}, {"target", "tool"}, {"tool", tool},
                                {"arguments", boost::json::object{}}, {"mutates", mutates}};
    std::vector<core::new_record> start;
    start.push_back({core::record_kind::effect_started, std::move(started)});
    auto appended = co_await h.runs->async_append(run, std::move(start));
    REQUIRE(appended.has_value());
    boost::json::object done{{"effect_key", key}, {"output", std::move(output)}};
    core::new_record outcome{core::record_kind::effect_done, std::move(done)};
    service::journaled_call call{key, tool, mutates};
    h.runs->journal_outcome(h.ioc.get_executor(), run, std::move(outcome), std::move(held), std::move(call));
    co_return key;
}

}  // namespace

TEST_CASE("a session run whose call's outcome record the journal refused is sealed quarantined, the call noted in doubt") {
    harness h(service::gateway_run_limits{});
    std::string run, lost, kept;
    h.run([&]() -> asio::awaitable<void> {
        auto admitted = co_await h.runs->async_run_for(h.context("s1"), h.alice);
        REQUIRE(admitted.has_value());
        run = *admitted;
        std::string const peek = "tool://counter/peek", add = "tool://counter/add";
        boost::json::value small = boost::json::object{{"total", 1}};
        kept = co_await async_journaled_call(h, run, peek, false, small);
        // An outcome larger than a journal record: the store refuses it, as a full disk would.
        boost::json::value too_large = boost::json::string(std::string(core::max_record_bytes + 1, 'x'));
        lost = co_await async_journaled_call(h, run, add, true, too_large);
    });
    auto records = h.records(run);
    std::vector<std::string> noted;
    for (auto const& r : records)
        if (r.kind == core::record_kind::note && r.body.at("event") == "effect_in_doubt")
            noted.emplace_back(r.body.at("effect_key").as_string());
    CHECK(noted == std::vector<std::string>{lost});
    REQUIRE(records.back().kind == core::record_kind::run_sealed);
    CHECK(records.back().body.at("status") == "quarantined");
    CHECK_THAT(h.seal_reason(run), Catch::Contains("1 call is in doubt (the journal refused its outcome record): " + lost +
                                                   " (tool://counter/add)"));
}

TEST_CASE("a session run whose only lost outcome is a read's is sealed succeeded, the read noted in doubt") {
    harness h(service::gateway_run_limits{});
    std::string run, lost;
    h.run([&]() -> asio::awaitable<void> {
        run = co_await h.async_call();
        std::string const peek = "tool://counter/peek";
        boost::json::value too_large = boost::json::string(std::string(core::max_record_bytes + 1, 'x'));
        lost = co_await async_journaled_call(h, run, peek, false, too_large);
    });
    auto records = h.records(run);
    REQUIRE(records.size() >= 2);
    auto const& note = records[records.size() - 2];
    CHECK(note.kind == core::record_kind::note);
    CHECK(note.body.at("effect_key").as_string() == lost);
    CHECK(note.body.at("mutates") == false);
    CHECK(records.back().body.at("status") == "succeeded");
}
