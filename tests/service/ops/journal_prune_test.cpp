// Retention on a real LMDB journal: which runs a prune takes and which it never does, that what
// stays verifies, that a pruned run leaves nothing behind (records, index, effect entries,
// admissions), that the prune is journaled with the runs' final hashes, and that an export is a
// chain `journal import` takes back.
#include "service/ops/journal_prune.hpp"

#include "core/journal_rules.hpp"
#include "core/rfc3339.hpp"
#include "core/sha256.hpp"
#include "tests/support/run_awaitable.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <set>

using namespace airlock;
namespace ops = airlock::service::ops;
using airlock::testing::run_awaitable;
using airlock::testing::temp_dir;
namespace json = boost::json;
using std::chrono::hours;

namespace {

std::unique_ptr<store::lmdb_store> open_store(std::filesystem::path const& dir, bool exclusive = false) {
    store::lmdb_options o{dir, std::size_t{64} << 20};
    o.exclusive = exclusive;
    auto s = store::lmdb_store::open(o);
    INFO((s ? "" : s.error().message));
    REQUIRE(s.has_value());
    return std::move(*s);
}

core::new_record admitted(std::string const& admitted_at = "2026-11-30T08:00:00Z") {
    return {core::record_kind::run_admitted,
            {{"agent", {{"name", "teller"}, {"version", "1"}}}, {"input", "hi"}, {"admitted_at", admitted_at}}};
}

core::new_record started(std::string const& key) {
    return {core::record_kind::effect_started,
            {{"effect_key", key}, {"target", "tool"}, {"tool", "tool://fs/read"}, {"arguments", json::object{}}}};
}

core::new_record done(std::string const& key) {
    return {core::record_kind::effect_done, {{"effect_key", key}, {"output", "text of " + key}}};
}

void append(store::lmdb_store& s, std::string const& run, std::vector<core::new_record> records) {
    auto r = run_awaitable(s.async_append(run, std::move(records)));
    INFO((r ? "" : r.error().message));
    REQUIRE(r.has_value());
}

void sealed_run(store::lmdb_store& s, std::string const& run, std::string const& status) {
    append(s, run, {admitted(), started(run + "/000001/tool"), done(run + "/000001/tool")});
    REQUIRE(run_awaitable(s.async_seal(run, status, "test")).has_value());
}

ops::prune_request before(std::chrono::system_clock::duration from_now) {
    return {std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now() + from_now)};
}

std::set<std::string> ids(std::vector<ops::pruned_run> const& runs) {
    std::set<std::string> out;
    for (auto const& r : runs) out.insert(r.run_id);
    return out;
}

std::set<std::string> all_runs(store::lmdb_store const& s) {
    auto page = s.runs({});
    REQUIRE(page.has_value());
    std::set<std::string> out;
    for (auto const& r : page->runs) out.insert(r.run_id);
    return out;
}

}  // namespace

TEST_CASE("prune removes sealed runs whole and never a running, awaiting or quarantined one; what stays verifies") {
    temp_dir dir;
    auto s = open_store(dir.path());
    sealed_run(*s, "run-ok", "succeeded");
    sealed_run(*s, "run-failed", "failed");
    sealed_run(*s, "run-doubt", "quarantined");
    append(*s, "run-live", {admitted(), started("run-live/000001/tool")});
    append(*s, "run-waiting", {admitted(), {core::record_kind::approval_requested,
                                            {{"effect_key", "run-waiting/000001/tool"}, {"tool", "tool://fs/write"},
                                             {"arguments", json::object{}}}}});
    auto head_ok = s->head("run-ok");
    REQUIRE(head_ok.has_value());
    auto const final_hash = core::to_hex((*head_ok)->head_hash);

    auto report = run_awaitable(ops::async_prune(*s, before(hours(1))));
    INFO((report ? "" : report.error().message));
    REQUIRE(report.has_value());
    CHECK(ids(report->runs) == std::set<std::string>{"run-ok", "run-failed"});
    CHECK(report->records == 8);  // admitted, started, done, sealed: four each

    // Gone whole: no records, no index entry.
    CHECK(s->read("run-ok")->empty());
    CHECK_FALSE(s->head("run-ok")->has_value());
    // The rest is there and verifies.
    for (auto const& run : {"run-doubt", "run-live", "run-waiting"}) {
        INFO(run);
        CHECK(s->head(run)->has_value());
        CHECK_FALSE(s->verify(run)->has_value());
    }
    // The prune is a sealed run of its own, naming each run with its final hash.
    auto prune = s->read(report->record_run);
    REQUIRE(prune.has_value());
    REQUIRE(prune->size() == 3);
    CHECK(prune->front().body.at("agent").at("name") == "airlock-journal");
    auto const& listed = prune->at(1).body.at("runs").as_array();
    bool found = false;
    for (auto const& e : listed)
        if (e.at("run_id") == "run-ok") found = e.at("head_hash") == final_hash.c_str() && e.at("head_seq") == 4;
    CHECK(found);
    CHECK(prune->back().kind == core::record_kind::run_sealed);
    CHECK(prune->back().body.at("status") == "succeeded");
    CHECK(prune->back().body.at("reason") == "pruned 2 runs");
    CHECK_FALSE(s->verify(report->record_run)->has_value());

    // A second prune finds nothing to take: not the prune's own run either.
    auto again = run_awaitable(ops::async_prune(*s, before(hours(1))));
    REQUIRE(again.has_value());
    CHECK(again->runs.empty());
    CHECK(again->record_run.empty());
}

TEST_CASE("prune counts from the seal's time; a seal from before sealed_at was recorded counts from the admission") {
    temp_dir dir;
    auto s = open_store(dir.path());
    // Admitted long ago, sealed now: not past a one-hour retention.
    append(*s, "run-recent", {admitted("2020-01-01T00:00:00Z")});
    REQUIRE(run_awaitable(s->async_seal("run-recent", "succeeded", "")).has_value());
    // The seal an older airlock wrote has no sealed_at: the admission is all there is to go by.
    append(*s, "run-old-format", {admitted("2020-01-01T00:00:00Z"),
                                  {core::record_kind::run_sealed, {{"status", "succeeded"}, {"reason", ""}, {"chain_head", "x"}}}});

    auto dry = before(-hours(1));
    dry.dry_run = true;
    auto listed = run_awaitable(ops::async_prune(*s, dry));
    REQUIRE(listed.has_value());
    CHECK(ids(listed->runs) == std::set<std::string>{"run-old-format"});
    CHECK(listed->runs.front().sealed_at == "2020-01-01T00:00:00Z");
    // A dry run removes nothing and journals nothing.
    CHECK(all_runs(*s) == std::set<std::string>{"run-recent", "run-old-format"});
    // Nothing is older than an hour before the epoch of the journal.
    auto none = run_awaitable(ops::async_prune(*s, {std::chrono::sys_seconds{}}));
    REQUIRE(none.has_value());
    CHECK(none->runs.empty());
}

TEST_CASE("a pruned run leaves no effect entry or admission behind: its id and idempotency key are free again") {
    temp_dir dir;
    auto s = open_store(dir.path());
    REQUIRE(run_awaitable(s->async_claim_admission("order-42", "run-a"))->fresh);
    sealed_run(*s, "run-a", "succeeded");
    REQUIRE(run_awaitable(ops::async_prune(*s, before(hours(1)))).has_value());

    // The same effect key starts again in a new run under the same id: no stale exactly-once entry.
    append(*s, "run-a", {admitted(), started("run-a/000001/tool")});
    // The idempotency key names no pruned run any more.
    auto claim = run_awaitable(s->async_claim_admission("order-42", "run-b"));
    REQUIRE(claim.has_value());
    CHECK(claim->fresh);
    CHECK(claim->run_id == "run-b");
}

TEST_CASE("removal is all or nothing: a batch naming a run that is not sealed removes none of it") {
    temp_dir dir;
    auto s = open_store(dir.path());
    sealed_run(*s, "run-done", "succeeded");
    append(*s, "run-live", {admitted()});
    auto refused = run_awaitable(s->async_remove_sealed({"run-done", "run-live"}));
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == "not_sealed");
    CHECK_THAT(refused.error().message, Catch::Contains("run-live is running, not sealed"));
    CHECK(s->head("run-done")->has_value());
    CHECK(s->read("run-done")->size() == 4);
    auto unknown = run_awaitable(s->async_remove_sealed({"no-such-run"}));
    REQUIRE_FALSE(unknown.has_value());
    CHECK_THAT(unknown.error().message, Catch::Contains("no run no-such-run"));
}

TEST_CASE("an export before pruning writes each run as a chain that verifies and ends at the hash the prune journaled") {
    temp_dir dir;
    auto s = open_store(dir.path());
    sealed_run(*s, "run-1", "succeeded");
    sealed_run(*s, "run-2", "cancelled");
    auto req = before(hours(1));
    req.export_to = dir.path() / "exported";
    auto report = run_awaitable(ops::async_prune(*s, req));
    REQUIRE(report.has_value());
    REQUIRE(report->runs.size() == 2);
    for (auto const& r : report->runs) {
        INFO(r.run_id);
        std::ifstream in(dir.path() / "exported" / (r.run_id + ".jsonl"));
        REQUIRE(in);
        std::vector<core::record> records;
        for (std::string line; std::getline(in, line);) {
            auto rec = core::parse_record(line);
            REQUIRE(rec.has_value());
            records.push_back(std::move(*rec));
        }
        REQUIRE(records.size() == 4);
        CHECK_FALSE(core::verify_chain(records).has_value());
        CHECK(core::to_hex(records.back().hash) == r.head_hash);
    }
    // An export that cannot be written prunes nothing.
    sealed_run(*s, "run-3", "succeeded");
    std::ofstream(dir.path() / "a-file") << "not a directory";
    auto blocked = before(hours(1));
    blocked.export_to = dir.path() / "a-file";
    REQUIRE_FALSE(run_awaitable(ops::async_prune(*s, blocked)).has_value());
    CHECK(s->head("run-3")->has_value());
}

TEST_CASE("pruned pages are reused by later appends, and a compacting copy is smaller than the file") {
    temp_dir dir;
    auto s = open_store(dir.path());
    std::string const text(4000, 'x');
    auto fill = [&](std::string const& prefix) {
        for (int i = 0; i < 300; ++i) {
            auto run = prefix + std::to_string(i);
            append(*s, run, {admitted(), {core::record_kind::note, {{"text", text}}}});
            REQUIRE(run_awaitable(s->async_seal(run, "succeeded", "")).has_value());
        }
    };
    fill("a-");
    REQUIRE(run_awaitable(ops::async_prune(*s, before(hours(1)))).has_value());
    auto const after_prune = s->map_usage().used_bytes;
    fill("b-");
    // The second 300 runs fit mostly in the pages the first 300 left.
    CHECK(s->map_usage().used_bytes < after_prune + after_prune / 4);

    REQUIRE(run_awaitable(ops::async_prune(*s, before(hours(1)))).has_value());
    auto copied = s->copy_compacted(dir.path() / "copy");
    REQUIRE(copied.has_value());
    CHECK(std::filesystem::file_size(dir.path() / "copy" / "data.mdb") <
          std::filesystem::file_size(dir.path() / "data.mdb") / 4);
    // A copy is refused over a journal.
    auto again = s->copy_compacted(dir.path() / "copy");
    REQUIRE_FALSE(again.has_value());
    CHECK_THAT(again.error().message, Catch::Contains("already holds a journal"));
}

TEST_CASE("an exclusive open (compaction) is refused while the journal is open, and keeps every other open out") {
    temp_dir dir;
    {
        auto shared = open_store(dir.path());
        auto second = open_store(dir.path());  // two shared opens: fine, as two airlocks on one journal
        store::lmdb_options o{dir.path(), std::size_t{64} << 20};
        o.exclusive = true;
        auto refused = store::lmdb_store::open(o);
        REQUIRE_FALSE(refused.has_value());
        CHECK(refused.error().code == "journal_busy");
        CHECK_THAT(refused.error().message, Catch::Contains("open in another process"));
    }
    auto only = open_store(dir.path(), true);
    auto refused = store::lmdb_store::open({dir.path(), std::size_t{64} << 20});
    REQUIRE_FALSE(refused.has_value());
    CHECK_THAT(refused.error().message, Catch::Contains("is being compacted"));
}
