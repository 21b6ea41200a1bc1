#include "store/lmdb_store.hpp"

#include "tests/support/run_awaitable.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <type_traits>
#include <optional>
#include <random>
#include <sstream>

using namespace airlock;
using airlock::testing::run_awaitable;
using airlock::testing::temp_dir;
namespace asio = boost::asio;

namespace {

core::new_record admitted(std::string agent = "teller") {
    boost::json::object body;
    body["agent"] = {{"name", agent}, {"version", "1.0.0"}, {"digest", std::string(64, 'a')}};
    body["input"] = "hello";
    body["admitted_at"] = "2026-11-30T08:00:00Z";
    return {core::record_kind::run_admitted, body};
}

core::new_record note(std::string text) {
    boost::json::object body;
    body["text"] = text;
    return {core::record_kind::note, body};
}

std::unique_ptr<store::lmdb_store> open_store(std::filesystem::path const& dir,
                                              store::durability mode = store::durability::durable,
                                              std::size_t map_size = std::size_t{64} << 20) {
    auto s = store::lmdb_store::open({dir, map_size, mode});
    REQUIRE(s.has_value());
    return std::move(*s);
}

// Tampers with the closed journal in `dir` behind the store's back: `edit` rewrites the file's bytes
// and returns how many places it changed (at least one must be), then the journal is opened again.
template <class Edit>
std::unique_ptr<store::lmdb_store> reopened_after(std::filesystem::path const& dir, Edit edit) {
    auto file = dir / "data.mdb";
    std::string bytes;
    {
        std::ifstream in(file, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    REQUIRE(edit(bytes) > 0);
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out << bytes;
    }
    return open_store(dir);
}

// One run of a burst: run_admitted, then five notes, each its own append; counts those that succeed.
asio::awaitable<void> append_six(store::lmdb_store& s, std::string id, std::atomic<int>& ok) {
    std::vector<core::new_record> first{admitted()};
    if (co_await s.async_append(id, std::move(first))) ++ok;
    for (int k = 0; k < 5; ++k) {
        std::vector<core::new_record> next{note("n" + std::to_string(k))};
        if (co_await s.async_append(id, std::move(next))) ++ok;
    }
}

// Runs append_six for the runs PREFIX0 … PREFIX(n-1) at once on `ctx` (a thread pool or an
// io_context) until all have ended; how many appends succeeded.
template <class Context>
int burst(Context& ctx, store::lmdb_store& s, std::string const& prefix, int n) {
    std::atomic<int> ok{0};
    for (int i = 0; i < n; ++i) asio::co_spawn(ctx, append_six(s, prefix + std::to_string(i), ok), asio::detached);
    if constexpr (std::is_same_v<Context, asio::io_context>) ctx.run();
    else ctx.join();
    return ok;
}

// How many of the runs PREFIX0 … PREFIX(n-1) verify whole.
int whole_chains(store::lmdb_store const& s, std::string const& prefix, int n) {
    int whole = 0;
    for (int i = 0; i < n; ++i) {
        auto v = s.verify(prefix + std::to_string(i));
        if (v && !v->has_value()) ++whole;
    }
    return whole;
}

}  // namespace

TEST_CASE("records appended to an LMDB journal are there after the store is closed and reopened") {
    temp_dir dir;
    {
        auto s = open_store(dir.path());
        auto r = run_awaitable(s->async_append("run-1", {admitted(), note("one"), note("two")}));
        REQUIRE(r.has_value());
        CHECK(r->back().seq == 3);
    }
    auto s = open_store(dir.path());
    auto recs = s->read("run-1");
    REQUIRE(recs.has_value());
    REQUIRE(recs->size() == 3);
    CHECK(recs->at(2).body.at("text") == "two");
    CHECK_FALSE(core::verify_chain(*recs).has_value());
    auto head = s->head("run-1");
    REQUIRE(head.has_value());
    REQUIRE(head->has_value());
    CHECK((*head)->head_seq == 3);
    CHECK((*head)->agent == "teller");
}

// From a thread pool (durable), and from coroutines on one io thread (fast: `airlock run`,
// `--threads 1`), where the inline commit of a quiet append must not turn a burst into one commit
// per append: appends that come close together go to the writer.
TEST_CASE("concurrent appends are group-committed: fewer transactions than appends") {
    for (bool one_thread : {false, true}) {
        INFO((one_thread ? "fast, one thread" : "durable, thread pool"));
        temp_dir dir;
        auto s = open_store(dir.path(), one_thread ? store::durability::fast : store::durability::durable);
        constexpr int runs = 64;
        int appended = 0;
        if (one_thread) {
            asio::io_context ioc(1);
            appended = burst(ioc, *s, "run-", runs);
        } else {
            asio::thread_pool pool(4);
            appended = burst(pool, *s, "run-", runs);
        }
        CHECK(appended == runs * 6);
        auto st = s->writer_stats();
        CHECK(st.operations == runs * 6);
        CHECK(st.batches < st.operations);
        CHECK(whole_chains(*s, "run-", runs) == runs);
    }
}

// Appends to a run never admitted are refused; spawned among valid ones, they land in the same
// group-committed batches, and must take none of their neighbours down with them.
asio::awaitable<void> append_refused(store::lmdb_store& s, std::string id, std::atomic<int>& refused) {
    for (int k = 0; k < 3; ++k) {
        std::vector<core::new_record> stray{note("stray" + std::to_string(k))};
        if (!co_await s.async_append(id, std::move(stray))) ++refused;
    }
}

TEST_CASE("a refused append in a group-committed batch undoes none of the other appends of the batch") {
    for (auto mode : {store::durability::durable, store::durability::fast}) {
        INFO((mode == store::durability::durable ? "durable" : "fast"));
        temp_dir dir;
        auto s = open_store(dir.path(), mode);
        constexpr int runs = 48;
        std::atomic<int> ok{0}, refused{0};
        {
            asio::thread_pool pool(4);
            for (int i = 0; i < runs; ++i) {
                asio::co_spawn(pool, append_six(*s, "run-" + std::to_string(i), ok), asio::detached);
                asio::co_spawn(pool, append_refused(*s, "ghost-" + std::to_string(i), refused), asio::detached);
            }
            pool.join();
        }
        CHECK(ok == runs * 6);
        CHECK(refused == runs * 3);
        auto st = s->writer_stats();
        CHECK(st.batches < st.operations);
        CHECK(whole_chains(*s, "run-", runs) == runs);
        for (int i = 0; i < runs; ++i) {
            auto recs = s->read("run-" + std::to_string(i), 0);
            REQUIRE(recs.has_value());
            CHECK(recs->size() == 6);
            auto ghost = s->head("ghost-" + std::to_string(i));
            REQUIRE(ghost.has_value());
            CHECK_FALSE(ghost->has_value());
        }
    }
}

// Fast mode: an append that comes when the journal is quiet is committed by the appending
// coroutine itself (no hand-off to the writer thread and back). Durable mode always hands appends
// to the writer, so no io thread waits for an fsync. Either way a burst keeps every chain whole.
TEST_CASE("a quiet fast-mode append is committed on the appending thread and a durable one by the writer") {
    for (auto mode : {store::durability::durable, store::durability::fast}) {
        INFO((mode == store::durability::fast ? "fast" : "durable"));
        temp_dir dir;
        std::mutex m;
        std::vector<std::pair<std::thread::id, std::size_t>> commits;  // committing thread, appends held
        store::lmdb_options o;
        o.directory = dir.path();
        o.map_size = std::size_t{64} << 20;
        o.mode = mode;
        o.sync_interval = std::chrono::minutes(1);  // no sync (which holds appends for the writer) mid-test
        o.on_commit = [&](std::size_t writes, std::chrono::steady_clock::duration) {
            std::lock_guard lock(m);
            commits.emplace_back(std::this_thread::get_id(), writes);
        };
        auto opened = store::lmdb_store::open(o);
        REQUIRE(opened.has_value());
        auto s = std::move(*opened);

        // One append at a time, with the journal quiet in between (a pause, not a measurement).
        REQUIRE(run_awaitable(s->async_append("one", {admitted()})).has_value());
        for (int i = 0; i < 5; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            REQUIRE(run_awaitable(s->async_append("one", {note("n" + std::to_string(i))})).has_value());
        }
        {
            std::lock_guard lock(m);
            REQUIRE(commits.size() == 6);
            for (auto const& [thread, writes] : commits) {
                CHECK((thread == std::this_thread::get_id()) == (mode == store::durability::fast));
                CHECK(writes == 1);
            }
            commits.clear();
        }

        asio::thread_pool pool(4);
        constexpr int runs = 64;
        CHECK(burst(pool, *s, "burst-", runs) == runs * 6);
        std::size_t total = 0;
        {
            std::lock_guard lock(m);
            for (auto const& c : commits) total += c.second;
        }
        CHECK(total == runs * 6);
        CHECK(whole_chains(*s, "burst-", runs) == runs);
        auto recs = s->read("one");
        REQUIRE(recs.has_value());
        REQUIRE(recs->size() == 6);
        CHECK(recs->back().body.at("text") == "n4");
    }
}

TEST_CASE("a full map gives a clear map_full error, loses nothing acknowledged, and the store stays usable") {
    temp_dir dir;
    auto s = open_store(dir.path(), store::durability::durable, std::size_t{1} << 20);  // 1 MiB map
    std::string filler(50 * 1024, 'x');
    std::uint64_t acknowledged = 0;
    std::optional<core::error> failure;
    REQUIRE(run_awaitable(s->async_append("big", {admitted()})).has_value());
    acknowledged = 1;
    for (int i = 0; i < 200 && !failure; ++i) {
        auto r = run_awaitable(s->async_append("big", {note(filler)}));
        if (r) acknowledged = r->back().seq;
        else failure = r.error();
    }
    REQUIRE(failure.has_value());
    CHECK(failure->code == "map_full");
    CHECK_THAT(failure->message, Catch::Contains("map size"));
    auto recs = s->read("big");
    REQUIRE(recs.has_value());
    CHECK(recs->size() == acknowledged);
    auto v = s->verify("big");
    REQUIRE(v.has_value());
    CHECK_FALSE(v->has_value());
    // A small append to another run may still fit; either way the answer is an error, not a crash.
    auto small = run_awaitable(s->async_append("small", {admitted()}));
    CHECK((small.has_value() || small.error().code == "map_full"));
}

TEST_CASE("a file that is not an LMDB journal gives a clear error instead of a crash") {
    temp_dir dir;
    {
        std::ofstream junk(dir.path() / "data.mdb", std::ios::binary);
        std::string garbage(64 * 1024, '\x5a');
        junk << garbage;
    }
    auto s = store::lmdb_store::open({dir.path()});
    REQUIRE_FALSE(s.has_value());
    CHECK(s.error().code == "corrupt");
    CHECK_THAT(s.error().message, Catch::Contains(dir.path().string()));
}

TEST_CASE("a run index entry written before runs had owners reads as owned by nobody") {
    temp_dir dir;
    {
        auto s = open_store(dir.path());
        auto rec = admitted();
        rec.body["mode"] = "agent";
        rec.body["principal"] = "alice";
        REQUIRE(run_awaitable(s->async_append("old-run", {rec})).has_value());
        REQUIRE(run_awaitable(s->async_append("new-run", {rec})).has_value());
        REQUIRE(s->head("old-run")->value().principal == "alice");
    }
    // The index entry follows admitted_at with the principal; an earlier version wrote no principal.
    // Renaming the key in place (same length) turns the entry of old-run into one of that version's,
    // an unknown key included: every copy, as LMDB may keep stale pages.
    auto s = reopened_after(dir.path(), [](std::string& bytes) {
        std::string const entry = R"("run_id":"old-run",)";
        std::string const key = R"(Z","principal":"alice")";
        int renamed = 0;
        for (auto at = bytes.find(entry); at != std::string::npos; at = bytes.find(entry, at + 1)) {
            auto k = bytes.find(key, at);
            if (k == std::string::npos || k - at > 200) continue;
            bytes.replace(k, key.size(), R"(Z","principaX":"alice")");
            ++renamed;
        }
        return renamed;
    });
    auto old_head = s->head("old-run");
    REQUIRE(old_head.has_value());
    REQUIRE(old_head->has_value());
    CHECK((*old_head)->principal.empty());
    CHECK(s->head("new-run")->value().principal == "alice");
    core::run_filter mine;
    mine.principal = "alice";
    auto page = run_awaitable(s->async_runs(mine));
    REQUIRE(page.has_value());
    REQUIRE(page->runs.size() == 1);
    CHECK(page->runs[0].run_id == "new-run");
}

TEST_CASE("a byte flipped in a stored record makes verify name that run and seq") {
    temp_dir dir;
    {
        auto s = open_store(dir.path());
        REQUIRE(run_awaitable(s->async_append("victim", {admitted(), note("alpha"), note("MARKER-PAYLOAD"), note("omega")}))
                    .has_value());
        REQUIRE(run_awaitable(s->async_append("bystander", {admitted(), note("fine")})).has_value());
    }
    // LMDB copies pages on write, so stale copies of the record may sit in free pages: flip every
    // copy so the live one is surely hit. The result is still valid JSON: only the hash can tell.
    auto s = reopened_after(dir.path(), [](std::string& bytes) {
        int flipped = 0;
        for (auto at = bytes.find("MARKER-PAYLOAD"); at != std::string::npos; at = bytes.find("MARKER-PAYLOAD", at + 1)) {
            bytes[at] = 'N';
            ++flipped;
        }
        return flipped;
    });
    auto v = s->verify("victim");
    REQUIRE(v.has_value());
    REQUIRE(v->has_value());
    CHECK((*v)->seq == 3);
    CHECK_THAT((*v)->reason, Catch::Contains("hash"));
    auto ok = s->verify("bystander");
    REQUIRE(ok.has_value());
    CHECK_FALSE(ok->has_value());
}

namespace {

std::unique_ptr<store::lmdb_store> open_deferring(std::filesystem::path const& dir, std::chrono::milliseconds limit,
                                                  store::durability mode = store::durability::durable) {
    store::lmdb_options o;
    o.directory = dir;
    o.map_size = std::size_t{64} << 20;
    o.defer_limit = limit;
    o.mode = mode;
    // Fast mode's periodic sync must not be what commits a deferred append in these tests.
    o.sync_interval = std::chrono::minutes(10);
    auto s = store::lmdb_store::open(o);
    REQUIRE(s.has_value());
    return std::move(*s);
}

// The records of `run` as a fresh open of the journal in `dir` sees them.
std::vector<core::record> reread(std::filesystem::path const& dir, std::string const& run) {
    auto s = open_store(dir);
    auto recs = s->read(run);
    REQUIRE(recs.has_value());
    return std::move(*recs);
}

}  // namespace

TEST_CASE("a deferred append is committed in the same transaction as the next append, in submission order") {
    temp_dir dir;
    // A limit no test waits for: only the second append can get the first one committed.
    auto s = open_deferring(dir.path(), std::chrono::minutes(10));
    REQUIRE(run_awaitable(s->async_append("d", {admitted()})).has_value());
    auto const before = s->writer_stats();
    asio::io_context ioc;
    std::optional<core::result<std::vector<core::record>>> outcome, next;
    auto deferred = [&]() -> asio::awaitable<void> {
        std::vector<core::new_record> rec{note("outcome")};
        std::string run = "d";
        outcome = co_await s->async_append_deferred(run, std::move(rec));
    };
    auto urgent = [&]() -> asio::awaitable<void> {
        std::vector<core::new_record> rec{note("next call")};
        std::string run = "d";
        next = co_await s->async_append(run, std::move(rec));
    };
    // One thread, in this order: the deferred append is queued before the urgent one.
    asio::co_spawn(ioc, deferred, asio::detached);
    asio::co_spawn(ioc, urgent, asio::detached);
    ioc.run();
    REQUIRE(outcome.has_value());
    REQUIRE(outcome->has_value());
    REQUIRE(next.has_value());
    REQUIRE(next->has_value());
    CHECK((*outcome)->front().seq == 2);
    CHECK((*next)->front().seq == 3);
    auto const after = s->writer_stats();
    CHECK(after.operations - before.operations == 2);
    CHECK(after.batches - before.batches == 1);
    auto v = s->verify("d");
    REQUIRE(v.has_value());
    CHECK_FALSE(v->has_value());
}

TEST_CASE("a deferred append with nothing to ride along is committed on its own") {
    // Right after a commit the writer is not woken for a deferred append: it looks at the queue
    // every defer_limit by itself. Were it not to, the append would wait for the next urgent one
    // (durable) or the ten-minute sync (fast), and this test would hang.
    auto mode = GENERATE(store::durability::durable, store::durability::fast);
    temp_dir dir;
    auto s = open_deferring(dir.path(), std::chrono::milliseconds(5), mode);
    REQUIRE(run_awaitable(s->async_append("alone", {admitted()})).has_value());
    auto r = run_awaitable(s->async_append_deferred("alone", {note("outcome")}));
    REQUIRE(r.has_value());
    CHECK(r->front().seq == 2);
    s.reset();
    auto recs = reread(dir.path(), "alone");
    REQUIRE(recs.size() == 2);
    CHECK(recs.back().body.at("text") == "outcome");
}

TEST_CASE("a deferred append to an idle journal wakes the writer") {
    // With no recent commit the writer sleeps until woken (durable) or until the ten-minute sync
    // (fast): the deferred append must wake it, or this test hangs. The pause lets the new
    // writer thread reach its sleep first.
    auto mode = GENERATE(store::durability::durable, store::durability::fast);
    temp_dir dir;
    auto s = open_deferring(dir.path(), std::chrono::milliseconds(5), mode);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto r = run_awaitable(s->async_append_deferred("first", {admitted()}));
    REQUIRE(r.has_value());
    CHECK(r->front().seq == 1);
    s.reset();
    CHECK(reread(dir.path(), "first").size() == 1);
}

TEST_CASE("closing the journal commits deferred appends instead of dropping them") {
    temp_dir dir;
    {
        auto s = open_deferring(dir.path(), std::chrono::minutes(10));
        REQUIRE(run_awaitable(s->async_append("c", {admitted()})).has_value());
        asio::io_context ioc;
        std::optional<core::result<std::vector<core::record>>> outcome;
        auto deferred = [&]() -> asio::awaitable<void> {
            std::vector<core::new_record> rec{note("last outcome")};
            std::string run = "c";
            outcome = co_await s->async_append_deferred(run, std::move(rec));
        };
        asio::co_spawn(ioc, deferred, asio::detached);
        // Runs once the append above is queued (same thread, in order): shutdown, as the service does it.
        asio::post(ioc, [&] { s->close(); });
        ioc.run();
        REQUIRE(outcome.has_value());
        CHECK(outcome->has_value());
    }
    auto recs = reread(dir.path(), "c");
    REQUIRE(recs.size() == 2);
    CHECK(recs.back().body.at("text") == "last outcome");
}

TEST_CASE("fast mode keeps what it acknowledged across a clean close") {
    temp_dir dir;
    {
        auto s = open_store(dir.path(), store::durability::fast);
        REQUIRE(run_awaitable(s->async_append("f", {admitted(), note("quick")})).has_value());
    }
    auto s = open_store(dir.path());
    auto recs = s->read("f");
    REQUIRE(recs.has_value());
    CHECK(recs->size() == 2);
}

// The child appends from many coroutines and reports each acknowledged (run, seq) on a pipe; the
// parent kills it at a random moment and checks that every acknowledged record survived.
TEST_CASE("SIGKILL at a random moment loses no acknowledged record, 20 rounds in a row") {
    temp_dir dir;
    std::mt19937 rng(std::random_device{}());
    std::map<std::string, std::uint64_t> acknowledged;  // run → highest acknowledged seq
    for (int round = 0; round < 20; ++round) {
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            auto opened = store::lmdb_store::open({dir.path()});
            if (!opened) _exit(3);
            auto& s = *opened;
            asio::thread_pool pool(2);
            int fd = fds[1];
            for (int w = 0; w < 32; ++w) {
                auto task = [&s, w, round, fd]() -> asio::awaitable<void> {
                    auto id = "r" + std::to_string(round) + "-w" + std::to_string(w);
                    std::vector<core::new_record> admit{admitted()};
                    auto first = co_await s->async_append(id, std::move(admit));
                    if (!first) co_return;
                    // Bounded: the parent kills the child long before this ends.
                    for (int i = 0; i < 100000; ++i) {
                        std::vector<core::new_record> tick{note("tick")};
                        auto r = co_await s->async_append(id, std::move(tick));
                        if (!r) co_return;
                        auto line = id + " " + std::to_string(r->back().seq) + "\n";
                        if (write(fd, line.data(), line.size()) < 0) co_return;
                    }
                };
                asio::co_spawn(pool, task, asio::detached);
            }
            pool.join();
            _exit(0);
        }
        close(fds[1]);
        std::uniform_int_distribution<int> wait_ms(20, 150);
        usleep(static_cast<useconds_t>(wait_ms(rng)) * 1000);
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        std::string data;
        char buf[65536];
        ssize_t n;
        while ((n = read(fds[0], buf, sizeof buf)) > 0) data.append(buf, static_cast<std::size_t>(n));
        close(fds[0]);
        std::istringstream lines(data);
        std::string run;
        std::uint64_t seq;
        while (lines >> run >> seq) acknowledged[run] = std::max(acknowledged[run], seq);

        auto s = open_store(dir.path());
        for (auto const& [id, seq_acked] : acknowledged) {
            INFO("round " << round << " run " << id);
            auto recs = s->read(id);
            REQUIRE(recs.has_value());
            CHECK(recs->size() >= seq_acked);
            auto v = s->verify(id);
            REQUIRE(v.has_value());
            CHECK_FALSE(v->has_value());
        }
    }
    CHECK(acknowledged.size() > 0);
}

TEST_CASE("the journal's file size is the data file's, and grows with what is appended") {
    temp_dir dir;
    auto s = open_store(dir.path(), store::durability::durable, std::size_t{64} << 20);
    auto const data_file = dir.path() / "data.mdb";
    auto before = s->map_usage();
    CHECK(before.file_bytes > 0);
    CHECK(before.file_bytes == std::filesystem::file_size(data_file));
    CHECK(before.file_bytes < before.map_size);  // the map is not written through: the file is what is used
    REQUIRE(run_awaitable(s->async_append("grows", {admitted()})).has_value());
    std::string filler(16 * 1024, 'x');
    for (int i = 0; i < 40; ++i) REQUIRE(run_awaitable(s->async_append("grows", {note(filler)})).has_value());
    auto after = s->map_usage();
    CHECK(after.file_bytes == std::filesystem::file_size(data_file));
    CHECK(after.file_bytes >= before.file_bytes + 40 * filler.size());
    CHECK(after.file_bytes <= after.used_bytes);
}

TEST_CASE("a full map is the store's write fault, named with journal.map_size, and its map use shows it") {
    temp_dir dir;
    auto s = open_store(dir.path(), store::durability::durable, std::size_t{1} << 20);  // 1 MiB map
    CHECK_FALSE(s->write_fault().has_value());
    auto before = s->map_usage();
    CHECK(before.map_size == std::size_t{1} << 20);
    CHECK(before.used_bytes > 0);
    CHECK(before.used_bytes < before.map_size / 4);
    REQUIRE(run_awaitable(s->async_append("big", {admitted()})).has_value());
    std::string filler(50 * 1024, 'x');
    std::optional<core::error> failure;
    for (int i = 0; i < 200 && !failure; ++i)
        if (auto r = run_awaitable(s->async_append("big", {note(filler)})); !r) failure = r.error();
    REQUIRE(failure.has_value());
    CHECK_THAT(failure->message, Catch::Contains("journal.map_size") && !Catch::Contains("store.map_size"));
    auto fault = s->write_fault();
    REQUIRE(fault.has_value());
    CHECK(fault->code == "map_full");
    CHECK(s->map_usage().used_bytes > s->map_usage().map_size * 9 / 10);
    // The probe is as large as the append that failed: it finds no room either, and the fault stays.
    run_awaitable(s->async_probe_write());
    CHECK(s->write_fault().has_value());
    // A refusal says nothing about the journal's health: the fault stays.
    auto refused = run_awaitable(s->async_append("nobody", {note("not admitted")}));
    REQUIRE_FALSE(refused.has_value());
    CHECK(s->write_fault().has_value());
}

// A file size limit at the journal's present size, for as long as it lives (or until lift()): every
// write that grows the file fails, as on a full disk (EFBIG instead of ENOSPC; the SIGXFSZ it also
// raises is ignored meanwhile).
class file_size_limit {
public:
    explicit file_size_limit(std::filesystem::path const& file) : handler_(std::signal(SIGXFSZ, SIG_IGN)) {
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &was_) == 0);
        rlimit small = was_;
        small.rlim_cur = std::filesystem::file_size(file);
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    }
    ~file_size_limit() { lift(); }
    void lift() {
        if (lifted_) return;
        lifted_ = true;
        ::setrlimit(RLIMIT_FSIZE, &was_);
        std::signal(SIGXFSZ, handler_);
    }

private:
    rlimit was_{};
    void (*handler_)(int);
    bool lifted_ = false;
};

TEST_CASE("appends that fail because the journal's file cannot grow set the write fault; once it can, a probe clears it") {
    temp_dir dir;
    auto s = open_store(dir.path());
    REQUIRE(run_awaitable(s->async_append("grow", {admitted()})).has_value());
    file_size_limit limit(dir.path() / "data.mdb");
    std::string filler(200 * 1024, 'y');
    auto failed = run_awaitable(s->async_append("grow", {note(filler)}));
    REQUIRE_FALSE(failed.has_value());
    // EFBIG for a write that starts past the limit; LMDB reports one cut short at it as EIO.
    CHECK((failed.error().code == "disk_full" || failed.error().code == "io_error"));
    auto fault = s->write_fault();
    REQUIRE(fault.has_value());
    CHECK(fault->code == failed.error().code);
    run_awaitable(s->async_probe_write());
    CHECK(s->write_fault().has_value());  // still full: the probe could not be written either

    limit.lift();
    // Probes are at most one a second.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    run_awaitable(s->async_probe_write());
    CHECK_FALSE(s->write_fault().has_value());
    // The probe left nothing behind, and appends succeed again.
    auto recs = s->read("grow");
    REQUIRE(recs.has_value());
    CHECK(recs->size() == 1);
    CHECK(run_awaitable(s->async_append("grow", {note(filler)})).has_value());
}

TEST_CASE("a successful append clears the write fault an earlier one set") {
    temp_dir dir;
    auto s = open_store(dir.path());
    REQUIRE(run_awaitable(s->async_append("again", {admitted()})).has_value());
    file_size_limit limit(dir.path() / "data.mdb");
    auto failed = run_awaitable(s->async_append("again", {note(std::string(200 * 1024, 'z'))}));
    limit.lift();
    REQUIRE_FALSE(failed.has_value());
    REQUIRE(s->write_fault().has_value());
    REQUIRE(run_awaitable(s->async_append("again", {note("small")})).has_value());
    CHECK_FALSE(s->write_fault().has_value());
}
