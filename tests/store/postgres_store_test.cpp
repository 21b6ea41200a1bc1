// What only the PostgreSQL journal has: bytes kept as hashed, a versioned schema, a database shared
// by replicas, group commit, and a server that goes away and comes back. Every name here says
// "PostgreSQL", so ctest runs these in the one entry that starts the server (tests/CMakeLists.txt).

#include "tests/store/store_fixtures.hpp"

#include "core/journal.hpp"
#include "store/pg_connection.hpp"
#include "store/pg_schema.hpp"
#include "store/postgres_store.hpp"

#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include <atomic>
#include <thread>

using namespace airlock;
using namespace airlock::testing;

namespace {

core::new_record admitted() {
    boost::json::object body;
    body["agent"] = boost::json::object{{"name", "triage"}, {"version", "1.0.0"}, {"digest", "sha256:00"}};
    body["input"] = "summarise the ticket";
    body["mode"] = "agent";
    body["admitted_at"] = "2026-12-04T08:00:00Z";
    return {core::record_kind::run_admitted, std::move(body)};
}

core::new_record started(std::string const& key) {
    return {core::record_kind::effect_started,
            boost::json::object{{"effect_key", key}, {"target", "tool"}, {"tool", "tool://ledger/post"},
                                {"arguments", boost::json::object{}}, {"mutates", true}, {"attempt", 1}}};
}

core::new_record note(std::string text) { return {core::record_kind::note, boost::json::object{{"text", std::move(text)}}}; }

std::unique_ptr<store::postgres_store> open_store(std::string url, store::postgres_options o = {}) {
    o.conninfo = std::move(url);
    auto opened = store::postgres_store::open(std::move(o));
    if (!opened) FAIL(opened.error().code << ": " << opened.error().message);
    return std::move(*opened);
}

std::unique_ptr<store::pg::connection> connect(std::string const& url) {
    auto c = store::pg::connection::open({url});
    if (!c) FAIL(c.error().message);
    return std::move(*c);
}

}  // namespace

TEST_CASE("the PostgreSQL journal keeps each record's bytes exactly as they were hashed", "[postgres]") {
    auto url = postgres_server::shared().create_database();
    auto s = open_store(url);
    // Numbers whose text a database would rewrite (jsonb writes 1E300 as 1000…0, and -0.0 as -0).
    auto body = boost::json::parse(R"({"text":"n","n":[1E300,-0.0,0.1,9007199254740993,1.5E-7,100.0],"é":"\u0000"})");
    auto written = run_awaitable(s->async_append("run-bytes", {admitted(), {core::record_kind::note, body.as_object()}}));
    if (!written) FAIL(written.error());
    auto c = connect(url);
    auto stored = c->exec("SELECT seq, bytes FROM airlock.records WHERE run_id = $1 ORDER BY seq",
                          {store::pg::param::of(std::string_view("run-bytes"))});
    REQUIRE(stored.has_value());
    REQUIRE(stored->size() == 2);
    for (int i = 0; i < 2; ++i) {
        auto const& rec = (*written)[static_cast<std::size_t>(i)];
        CHECK(stored->int8(i, 0) == static_cast<std::int64_t>(rec.seq));
        CHECK(stored->bytes(i, 1) == core::serialize_record(rec));
        auto back = core::parse_record(stored->bytes(i, 1));
        REQUIRE(back.has_value());
        CHECK(core::record_hash(back->prev_hash, back->run_id, back->seq, back->kind, back->body).value() == rec.hash);
    }
    auto verified = run_awaitable(s->async_verify("run-bytes"));
    REQUIRE(verified.has_value());
    CHECK_FALSE(verified->has_value());
}

TEST_CASE("a PostgreSQL journal with a schema newer than this airlock, or none, is refused with what to do", "[postgres]") {
    auto url = postgres_server::shared().create_database();
    store::postgres_options no_create;
    no_create.create_if_empty = false;
    no_create.conninfo = url;
    auto missing = store::postgres_store::open(no_create);
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().code == "schema_missing");
    CHECK_THAT(missing.error().message, Catch::Contains("airlock journal migrate-schema"));

    auto migrated = store::migrate_postgres_schema(url);
    REQUIRE(migrated.has_value());
    CHECK(*migrated == 0);
    CHECK(store::migrate_postgres_schema(url).value() == store::pg::schema_version);
    CHECK(store::postgres_store::open(no_create).has_value());

    postgres_server::shared().execute(url.substr(url.rfind('/') + 1), "UPDATE airlock.schema_version SET version = 99");
    auto newer = store::postgres_store::open(no_create);
    REQUIRE_FALSE(newer.has_value());
    CHECK(newer.error().code == "schema_too_new");
    CHECK_THAT(newer.error().message, Catch::Contains("99") && Catch::Contains("upgrade airlock"));
    auto refused = store::migrate_postgres_schema(url);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == "schema_too_new");
}

TEST_CASE("two PostgreSQL stores on one database, as two replicas, keep one chain per run and start an effect once",
          "[postgres]") {
    auto url = postgres_server::shared().create_database();
    auto a = open_store(url);
    auto b = open_store(url);
    REQUIRE(run_awaitable(a->async_append("shared-run", {admitted()})).has_value());
    // Both replicas append to the run at once, and both try to start the same effects.
    std::atomic<int> appended{0}, refused_twice{0}, started_ok{0}, other_errors{0};
    auto writer = [&](core::journal_store& s, int who) -> boost::asio::awaitable<void> {
        for (int i = 0; i < 40; ++i) {
            // Named, not braced in the co_await (GCC 12).
            auto text = core::one_record(note("replica " + std::to_string(who) + " #" + std::to_string(i)));
            auto r = co_await s.async_append("shared-run", std::move(text));
            if (r) ++appended;
            else ++other_errors;
            auto start = core::one_record(started("effect-" + std::to_string(i)));
            auto e = co_await s.async_append("shared-run", std::move(start));
            if (e) ++started_ok;
            else if (e.error().code == "duplicate_effect") ++refused_twice;
            else ++other_errors;
        }
    };
    std::vector<boost::asio::awaitable<void>> ops;
    for (int w = 0; w < 4; ++w) ops.push_back(writer(w % 2 ? *a : *b, w));
    run_concurrently(std::move(ops), 4);
    CHECK(other_errors == 0);
    CHECK(appended == 160);
    CHECK(started_ok == 40);
    CHECK(refused_twice == 120);
    auto from_a = run_awaitable(a->async_read("shared-run", 1)).value();
    auto from_b = run_awaitable(b->async_read("shared-run", 1)).value();
    CHECK(from_a.size() == 1 + 160 + 40);
    REQUIRE(from_a.size() == from_b.size());
    CHECK(from_a.back().hash == from_b.back().hash);
    CHECK_FALSE(core::verify_chain(from_b).has_value());
    CHECK(run_awaitable(b->async_head("shared-run")).value()->head_seq == from_a.size());
}

TEST_CASE("concurrent appends to many runs share the PostgreSQL journal's transactions (group commit)", "[postgres]") {
    auto s = open_store(postgres_server::shared().create_database());
    std::atomic<int> errors{0};
    auto one_run = [&](int i) -> boost::asio::awaitable<void> {
        auto id = "run-" + std::to_string(i);
        auto admission = core::one_record(admitted());
        if (!co_await s->async_append(id, std::move(admission))) ++errors;
        for (int k = 0; k < 5; ++k) {
            auto step = core::one_record(note("step " + std::to_string(k)));
            if (!co_await s->async_append(id, std::move(step))) ++errors;
        }
    };
    std::vector<boost::asio::awaitable<void>> ops;
    for (int i = 0; i < 200; ++i) ops.push_back(one_run(i));
    run_concurrently(std::move(ops), 2);
    CHECK(errors == 0);
    auto stats = s->writer_stats();
    CHECK(stats.operations == 1200);
    // 1200 appends arrive while earlier ones commit: they ride in far fewer transactions.
    CHECK(stats.batches < stats.operations / 4);
    auto listed = run_awaitable(s->async_runs({.limit = 1000})).value();
    CHECK(listed.runs.size() == 200);
}

TEST_CASE("a PostgreSQL restart fails appends cleanly meanwhile, and the journal reconnects by itself", "[postgres]") {
    postgres_server server;
    auto url = server.create_database();
    store::postgres_options o;
    o.reconnect_min = std::chrono::milliseconds(20);
    o.reconnect_max = std::chrono::milliseconds(200);
    auto s = open_store(url, o);
    REQUIRE(run_awaitable(s->async_append("run-r", {admitted(), note("before")})).has_value());

    server.stop(true);  // as a crash: no checkpoint, connections cut
    auto during = run_awaitable(s->async_append("run-r", {note("during")}));
    REQUIRE_FALSE(during.has_value());
    CHECK(during.error().code == "io_error");
    CHECK_THAT(during.error().message, Catch::Contains("unreachable"));
    CHECK(s->write_fault().has_value());
    auto read_during = run_awaitable(s->async_read("run-r", 1));
    REQUIRE_FALSE(read_during.has_value());
    CHECK(read_during.error().code == "io_error");

    server.start();
    core::result<std::vector<core::record>> after = core::make_error("io_error", "not tried");
    for (int attempt = 0; attempt < 100 && !after; ++attempt) {
        after = run_awaitable(s->async_append("run-r", {note("after")}));
        if (!after) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(after.has_value());
    CHECK_FALSE(s->write_fault().has_value());
    CHECK(s->writer_stats().reconnects >= 1);
    auto records = run_awaitable(s->async_read("run-r", 1)).value();
    REQUIRE(records.size() == 3);  // what was acknowledged before the crash is there; "during" never was
    CHECK(records[1].body.at("text") == "before");
    CHECK(records[2].body.at("text") == "after");
    CHECK_FALSE(core::verify_chain(records).has_value());
}

TEST_CASE("a PostgreSQL server that stops answering fails appends with a clear error, and serves again once it answers",
          "[postgres]") {
    postgres_server server;
    store::postgres_options o;
    o.conninfo = server.create_database();
    o.statement_timeout = std::chrono::milliseconds(300);  // and 5 s more for a server that answers nothing
    o.reconnect_min = std::chrono::milliseconds(20);
    o.reconnect_max = std::chrono::milliseconds(200);
    auto s = open_store(o.conninfo, o);
    REQUIRE(run_awaitable(s->async_append("run-h", {admitted(), note("before")})).has_value());

    server.pause();
    auto during = run_awaitable(s->async_append("run-h", {note("during")}));
    server.resume();
    REQUIRE_FALSE(during.has_value());
    CHECK(during.error().code == "io_error");
    CHECK_THAT(during.error().message, Catch::Contains("did not answer within 5300 ms"));

    core::result<std::vector<core::record>> after = core::make_error("io_error", "not tried");
    for (int attempt = 0; attempt < 100 && !after; ++attempt) {
        after = run_awaitable(s->async_append("run-h", {note("after")}));
        if (!after) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(after.has_value());
    auto records = run_awaitable(s->async_read("run-h", 1)).value();
    REQUIRE(records.size() == 3);  // the append that got no answer was never committed
    CHECK(records[2].body.at("text") == "after");
    CHECK_FALSE(core::verify_chain(records).has_value());
}

TEST_CASE("a PostgreSQL database that turns read-only (a failover to a standby) sets the write fault until it takes writes",
          "[postgres]") {
    postgres_server server;
    auto s = open_store(server.create_database());
    REQUIRE(run_awaitable(s->async_append("run-ro", {admitted()})).has_value());

    server.execute("postgres", "ALTER SYSTEM SET default_transaction_read_only = on");
    server.execute("postgres", "SELECT pg_reload_conf()");
    core::result<std::vector<core::record>> refused = std::vector<core::record>{};
    std::uint64_t taken_before = 0;  // appends made before the reload reached the writer's session
    for (int attempt = 0; attempt < 100 && refused; ++attempt) {
        refused = run_awaitable(s->async_append("run-ro", {note("refused")}));
        if (refused) {
            ++taken_before;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == "io_error");
    CHECK_THAT(refused.error().message, Catch::Contains("takes no writes"));
    REQUIRE(s->write_fault().has_value());
    CHECK(s->write_fault()->code == "io_error");

    server.execute("postgres", "ALTER SYSTEM RESET default_transaction_read_only");
    server.execute("postgres", "SELECT pg_reload_conf()");
    for (int attempt = 0; attempt < 100 && s->write_fault(); ++attempt) {
        run_awaitable(s->async_probe_write());
        if (s->write_fault()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK_FALSE(s->write_fault().has_value());
    auto back = run_awaitable(s->async_append("run-ro", {note("after")}));
    REQUIRE(back.has_value());
    CHECK(back->front().seq == 2 + taken_before);  // the refused appends left nothing behind
}

TEST_CASE("a PostgreSQL journal is served by one exclusive store at a time, across a restart of the database too",
          "[postgres]") {
    postgres_server server;
    store::postgres_options o;
    o.conninfo = server.create_database();
    o.exclusive = true;
    o.reconnect_min = std::chrono::milliseconds(20);
    auto first = open_store(o.conninfo, o);
    REQUIRE(run_awaitable(first->async_append("run-x", {admitted()})).has_value());
    auto refused = store::postgres_store::open(o);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == "journal_busy");
    CHECK_THAT(refused.error().message, Catch::Contains("another airlock serves this PostgreSQL journal (connected from 127.0.0.1 since"));

    // The restart ends the first store's lock; a second takes it before the first writes again, and
    // the first, reconnecting, finds it taken at once.
    server.stop(true);
    server.start();
    auto second = open_store(o.conninfo, o);
    auto shut_out = run_awaitable(first->async_append("run-x", {note("from the first")}));
    REQUIRE_FALSE(shut_out.has_value());
    CHECK(shut_out.error().code == "journal_busy");
    CHECK(first->write_fault().has_value());
    REQUIRE(run_awaitable(second->async_append("run-x", {note("from the second")})).has_value());

    // Once the second is gone, the first takes the lock again and writes.
    second->close();
    core::result<std::vector<core::record>> again = core::make_error("journal_busy", "not tried");
    for (int attempt = 0; attempt < 60 && !again; ++attempt) {
        again = run_awaitable(first->async_append("run-x", {note("the first again")}));
        if (!again) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    REQUIRE(again.has_value());
    auto records = run_awaitable(first->async_read("run-x", 1)).value();
    REQUIRE(records.size() == 3);
    CHECK(records[1].body.at("text") == "from the second");
    CHECK_FALSE(core::verify_chain(records).has_value());
}

TEST_CASE("a PostgreSQL URL's password appears in no error", "[postgres]") {
    CHECK(store::pg::redact_conninfo("postgresql://alice:s3cret@db:5432/airlock") == "postgresql://alice:***@db:5432/airlock");
    CHECK(store::pg::redact_conninfo("host=db password=s3cret dbname=x") == "host=db password=*** dbname=x");
    CHECK(store::pg::redact_conninfo("host=db password='s 3cret' dbname=x") == "host=db password=*** dbname=x");
    store::postgres_options o;
    o.conninfo = "postgresql://alice:s3cret@127.0.0.1:1/airlock";
    o.connect_timeout = std::chrono::milliseconds(1000);
    auto refused = store::postgres_store::open(o);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == "io_error");
    CHECK_THAT(refused.error().message, !Catch::Contains("s3cret"));
}

TEST_CASE("a PostgreSQL append of thousands of records at once is written whole, past one statement's parameters",
          "[postgres]") {
    auto s = open_store(postgres_server::shared().create_database());
    std::vector<core::new_record> batch{admitted()};
    for (int i = 0; i < 25'000; ++i) batch.push_back(note("n" + std::to_string(i)));
    auto written = run_awaitable(s->async_append("run-big", std::move(batch)));
    if (!written) FAIL(written.error());
    CHECK(written->size() == 25'001);
    auto back = run_awaitable(s->async_read("run-big", 24'990)).value();
    REQUIRE(back.size() == 12);
    CHECK(back.back().body.at("text") == "n24999");
    CHECK(back.back().hash == written->back().hash);
}
