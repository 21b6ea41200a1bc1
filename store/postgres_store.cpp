#include "store/postgres_store.hpp"

#include "core/journal_rules.hpp"
#include "core/secrets.hpp"
#include "store/pg_connection.hpp"
#include "store/pg_journal.hpp"
#include "store/pg_schema.hpp"
#include "store/queued_op.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unordered_map>

namespace airlock::store {

namespace asio = boost::asio;
using core::make_error;
using core::result;

namespace {

// What a write runs against: the writer's connection, inside the batch's transaction, and, in a
// batch's first pass, the writer's cache of run heads (pg::heads); none on a second pass.
struct write_context {
    pg::connection* conn = nullptr;
    pg::heads const* cache = nullptr;
};

using read_op = detail::basic_queued_op<pg::connection&>;
using write_op = detail::basic_queued_op<write_context&>;

// Threads, not libpq's non-blocking API on the io_context: every statement of an append depends on
// the one before (the run's head, then its effects, then the rows), so a connection does one thing
// at a time either way, and a blocking call on a thread of its own is the plainest code that never
// holds up an io thread. The pool is small and fixed (one writer, `readers` readers), so the
// database sees a bounded number of connections per replica.

// One connection that replaces itself when lost: reconnects are tried at most every `backoff`,
// which doubles while they fail; operations that come meanwhile fail at once, naming why.
class link {
public:
    link(pg::connect_options o, postgres_options const& p, std::atomic<std::uint64_t>& reconnects)
        : options_(std::move(o)), min_(p.reconnect_min), max_(p.reconnect_max), backoff_(p.reconnect_min),
          reconnects_(reconnects) {}

    result<void> connect_now() {
        auto c = pg::connection::open(options_);
        if (!c) return c.error();
        conn_ = std::move(*c);
        return {};
    }

    result<pg::connection*> get() {
        if (conn_ && conn_->healthy()) return conn_.get();
        auto now = std::chrono::steady_clock::now();
        if (now < retry_at_)
            return make_error("io_error", last_error_ + " (next reconnect in " +
                                              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                 retry_at_ - now).count()) + " ms)");
        conn_.reset();
        auto c = pg::connection::open(options_);
        if (!c) {
            last_error_ = c.error().message;
            retry_at_ = now + backoff_;
            backoff_ = std::min(backoff_ * 2, max_);
            return c.error();
        }
        conn_ = std::move(*c);
        backoff_ = min_;
        reconnects_.fetch_add(1, std::memory_order_relaxed);
        return conn_.get();
    }

    pg::connection* current() noexcept { return conn_.get(); }

private:
    pg::connect_options options_;
    std::chrono::milliseconds min_, max_, backoff_;
    std::chrono::steady_clock::time_point retry_at_{};
    std::string last_error_;
    std::unique_ptr<pg::connection> conn_;
    std::atomic<std::uint64_t>& reconnects_;
};

pg::connect_options connect_options_of(postgres_options const& o) {
    return {o.conninfo, o.statement_timeout, o.connect_timeout, o.mode == durability::durable};
}

// The serving lock (postgres_options::exclusive): a session advisory lock on a connection of its
// own, which PostgreSQL drops when that connection ends, however it ends. "journal_busy", naming
// the holder's address, when another airlock holds it.
result<std::unique_ptr<pg::connection>> take_serving_lock(postgres_options const& o) {
    auto c = pg::connection::open(connect_options_of(o));
    if (!c) return c.error();
    auto got = (*c)->exec("SELECT pg_try_advisory_lock(8785, 1)");
    if (!got) return got.error();
    if (got->boolean(0, 0)) return std::move(*c);
    auto who = (*c)->exec(
        "SELECT coalesce(host(a.client_addr), 'a local socket') || ' since ' || "
        "to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') "
        "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.classid = 8785 AND l.objid = 1 AND l.granted");
    std::string holder = who && who->size() ? " (connected from " + std::string(who->bytes(0, 0)) + ")" : "";
    return make_error("journal_busy", "another airlock serves this PostgreSQL journal" + holder +
                                          "; replicas that share one journal need run leases, which this airlock "
                                          "does not have yet (docs/scale-out.md)");
}

}  // namespace

struct postgres_store::impl {
    postgres_options options;
    std::atomic<std::uint64_t> batches{0}, operations{0}, reconnects{0};
    link writer_link;
    std::vector<std::unique_ptr<link>> reader_links;

    std::mutex mutex;
    std::condition_variable write_wake, read_wake;
    std::deque<std::unique_ptr<write_op>> writes;  // guarded by mutex
    std::deque<std::unique_ptr<read_op>> reads;    // guarded by mutex
    std::size_t urgent = 0;                  // writes queued that are not deferred
    bool stopping = false;
    std::thread writer;
    std::vector<std::thread> readers;

    mutable std::mutex fault_mutex;
    std::optional<core::error> fault;
    std::unique_ptr<pg::connection> serving_lock;  // options.exclusive: holds the advisory lock
    // The writer's own: when it last found the lock held, and why it does not hold it now.
    std::chrono::steady_clock::time_point lock_checked{};
    std::optional<core::error> lock_lost;

    // A database restart ends the lock's connection, and the lock with it, and a second airlock may
    // then take it: the writer makes sure it still holds the lock (at most once a second, a round
    // trip on the idle connection), takes it again when it is free, and writes nothing while
    // another airlock holds it.
    result<void> hold_serving_lock() {
        if (!options.exclusive) return {};
        auto now = std::chrono::steady_clock::now();
        if (now - lock_checked < std::chrono::seconds(1)) {
            if (lock_lost) return *lock_lost;
            return {};
        }
        lock_checked = now;
        if (serving_lock && serving_lock->exec("SELECT 1")) {
            lock_lost.reset();
            return {};
        }
        serving_lock.reset();
        auto taken = take_serving_lock(options);
        if (!taken) {
            lock_lost = taken.error();
            return taken.error();
        }
        serving_lock = std::move(*taken);
        lock_lost.reset();
        return {};
    }

    // The writer thread's own: the head of every unsealed run it committed an append to, so an
    // append costs one statement instead of a locked read first; and the heads this batch's appends
    // made, kept apart until the batch commits.
    static constexpr std::size_t max_cached_heads = 100'000;
    std::unordered_map<std::string, core::run_summary> committed_heads, batch_heads;
    pg::connection* batch_conn = nullptr;
    pg::heads cached_heads{
        [this](std::string const& run_id) -> result<std::optional<core::run_summary>> {
            if (auto it = batch_heads.find(run_id); it != batch_heads.end()) return std::optional(it->second);
            if (auto it = committed_heads.find(run_id); it != committed_heads.end()) return std::optional(it->second);
            return pg::head(*batch_conn, run_id, true);
        },
        [this](core::run_summary const& s) { batch_heads.insert_or_assign(s.run_id, s); },
        true};

    void keep_batch_heads() {
        if (committed_heads.size() + batch_heads.size() > max_cached_heads) committed_heads.clear();
        for (auto& [id, head] : batch_heads) {
            if (head.sealed) committed_heads.erase(id);  // a sealed run takes no more appends
            else committed_heads.insert_or_assign(id, std::move(head));
        }
        batch_heads.clear();
    }

    explicit impl(postgres_options o)
        : options(std::move(o)), writer_link(connect_options_of(options), options, reconnects) {
        options.readers = std::max<std::size_t>(options.readers, 1);
        options.max_batch = std::max<std::size_t>(options.max_batch, 1);
        for (std::size_t i = 0; i < options.readers; ++i)
            reader_links.push_back(std::make_unique<link>(connect_options_of(options), options, reconnects));
    }

    void start() {
        writer = std::thread([this] { write_loop(); });
        for (std::size_t i = 0; i < reader_links.size(); ++i) readers.emplace_back([this, i] { read_loop(i); });
    }

    void stop() {
        {
            std::lock_guard lock(mutex);
            if (stopping) return;
            stopping = true;
        }
        write_wake.notify_all();
        read_wake.notify_all();
        if (writer.joinable()) writer.join();
        for (auto& t : readers)
            if (t.joinable()) t.join();
        serving_lock.reset();  // another airlock may serve the journal from now on
    }

    void note_fault(std::optional<core::error> e) {
        std::lock_guard lock(fault_mutex);
        fault = std::move(e);
    }

    template <class Op>
    void enqueue(std::unique_ptr<Op> o) {
        {
            std::unique_lock lock(mutex);
            if (!stopping) {
                if constexpr (std::is_same_v<Op, read_op>) {
                    reads.push_back(std::move(o));
                    lock.unlock();
                    read_wake.notify_one();
                } else {
                    if (!o->deferred) ++urgent;
                    writes.push_back(std::move(o));
                    lock.unlock();
                    write_wake.notify_one();
                }
                return;
            }
        }
        o->fail(make_error(core::errc::closed, "the journal is closed"));
        o->complete();
    }

    // The writer waits for an op that must be durable now, or for the first deferred one's deadline,
    // then takes everything queued (up to max_batch), in order, into one transaction.
    bool take_batch(std::vector<std::unique_ptr<write_op>>& batch) {
        std::unique_lock lock(mutex);
        for (;;) {
            if (writes.empty()) {
                if (stopping) return false;
                write_wake.wait(lock);
                continue;
            }
            if (urgent > 0 || stopping) break;
            auto due = writes.front()->due;
            if (std::chrono::steady_clock::now() >= due) break;
            write_wake.wait_until(lock, due);
        }
        while (!writes.empty() && batch.size() < options.max_batch) {
            if (!writes.front()->deferred) --urgent;
            batch.push_back(std::move(writes.front()));
            writes.pop_front();
        }
        return true;
    }

    void write_loop() {
        for (;;) {
            std::vector<std::unique_ptr<write_op>> batch;
            if (!take_batch(batch)) return;
            auto started = std::chrono::steady_clock::now();
            commit(batch);
            if (options.on_commit) {
                try {
                    options.on_commit(batch.size(), std::chrono::steady_clock::now() - started);
                } catch (...) {
                    // Metrics only: a failing observer must not leave the ops waiting.
                }
            }
            for (auto& o : batch) o->complete();
        }
    }

    void fail_all(std::vector<std::unique_ptr<write_op>>& batch, core::error const& e) {
        for (auto& o : batch) o->fail(e);
    }

    // BEGIN, on a connection that answers: an idle connection whose server restarted meanwhile
    // looks healthy until its first statement fails at once, and nothing has been sent for the
    // batch then, so it is replaced once and BEGIN sent again.
    result<pg::connection*> begin() {
        for (int attempt = 0;; ++attempt) {
            auto conn = writer_link.get();
            if (!conn) return conn.error();
            auto begun = (*conn)->script("BEGIN");
            if (begun) return conn;
            // Not after a server that answered nothing: a reconnect would wait as long again.
            if (attempt > 0 || (*conn)->healthy() || (*conn)->timed_out()) return begun.error();
        }
    }

    void commit(std::vector<std::unique_ptr<write_op>>& batch) {
        if (auto held = hold_serving_lock(); !held) {
            note_fault(held.error());
            return fail_all(batch, held.error());
        }
        auto reconnected_before = reconnects.load(std::memory_order_relaxed);
        auto conn = begin();
        if (!conn) {
            note_fault(conn.error());
            return fail_all(batch, conn.error());
        }
        // A new writer connection means the old one ended, most likely with the database, and the
        // lock's connection with it: the lock is checked now, not within the second.
        if (options.exclusive && reconnects.load(std::memory_order_relaxed) != reconnected_before) {
            lock_checked = {};
            if (auto held = hold_serving_lock(); !held) {
                (void)(*conn)->script("ROLLBACK");
                note_fault(held.error());
                return fail_all(batch, held.error());
            }
        }
        batches.fetch_add(1, std::memory_order_relaxed);
        operations.fetch_add(batch.size(), std::memory_order_relaxed);
        auto committed = commit_flat(**conn, batch);
        if (!committed) {
            // The second pass reads every head from the database; what the cache held of these
            // runs may be what another replica has moved on from, so it is all forgotten.
            committed_heads.clear();
            if (auto begun = (*conn)->script("BEGIN"); !begun) {
                fail_all(batch, begun.error());
                committed = false;
            } else {
                committed = commit_nested(**conn, batch);
            }
        }
        // A lost connection sets the fault, and so does an op the database's state refused (its
        // disk full, read-only); a commit of anything else clears it (an op's own refusal, a
        // duplicate effect, is no fault of the journal's); a failed COMMIT has set it in finish().
        if (!(*conn)->healthy()) return note_fault(make_error("io_error", "the journal database is unreachable: the connection was lost"));
        for (auto const& o : batch)
            if (auto why = o->failure(); why && (why->code == "io_error" || why->code == "disk_full"))
                return note_fault(*why);
        if (*committed) note_fault(std::nullopt);
    }

    // In a transaction begun by the caller: every op straight in it, with the cache of heads.
    // nullopt (everything undone) when an op's statement failed and aborted the transaction: the
    // batch is then run again an op per savepoint, without the cache. Otherwise whether it committed.
    std::optional<bool> commit_flat(pg::connection& c, std::vector<std::unique_ptr<write_op>>& batch) {
        batch_conn = &c;
        batch_heads.clear();
        write_context ctx{&c, &cached_heads};
        for (auto& o : batch) {
            if (o->run(ctx) || !c.in_failed_transaction()) continue;
            (void)c.script("ROLLBACK");
            batch_heads.clear();
            return std::nullopt;
        }
        bool done = finish(c, batch);
        if (done) keep_batch_heads();
        else committed_heads.clear(), batch_heads.clear();
        return done;
    }

    bool commit_nested(pg::connection& c, std::vector<std::unique_ptr<write_op>>& batch) {
        write_context ctx{&c, nullptr};
        for (auto& o : batch) {
            if (auto sp = c.script("SAVEPOINT op"); !sp) {
                o->fail(sp.error());
                continue;
            }
            // One more try after a conflict with another writer (a run admitted, a pin first seen,
            // by another replica at the same moment): the second reads what the first wrote.
            for (int attempt = 0; attempt < 2; ++attempt) {
                if (o->run(ctx) || !c.in_failed_transaction()) break;
                bool retry = pg::is_retryable(c.sqlstate());
                (void)c.script("ROLLBACK TO SAVEPOINT op");
                if (!retry) break;
            }
            (void)c.script("RELEASE SAVEPOINT op");
        }
        return finish(c, batch);
    }

    bool finish(pg::connection& c, std::vector<std::unique_ptr<write_op>>& batch) {
        if (auto done = c.script("COMMIT"); !done) {
            // A connection lost during COMMIT leaves the outcome unknown: the caller is told it
            // failed; the records may stand, and the next append chains from whatever the database holds.
            auto e = done.error();
            if (!c.healthy()) e.message += " (while committing: whether the batch was written is unknown)";
            fail_all(batch, e);
            note_fault(e);
            return false;
        }
        return true;
    }

    void read_loop(std::size_t i) {
        for (;;) {
            std::unique_ptr<read_op> job;
            {
                std::unique_lock lock(mutex);
                read_wake.wait(lock, [&] { return stopping || !reads.empty(); });
                if (reads.empty()) return;
                job = std::move(reads.front());
                reads.pop_front();
            }
            // A read is run again on a new connection when the one it had turned out to be dead
            // (an idle connection to a server that restarted): reads change nothing.
            for (int attempt = 0; attempt < 2; ++attempt) {
                auto conn = reader_links[i]->get();
                if (!conn) {
                    job->fail(conn.error());
                    break;
                }
                if (job->run(**conn) || (*conn)->healthy()) break;
            }
            job->complete();
        }
    }

    // Queues fn for the writer (Context write_context&) or a reader (pg::connection&).
    template <class T, class Context>
    asio::awaitable<result<T>> submit(std::function<result<T>(Context)> fn, bool deferred = false) {
        auto initiation = [this, deferred](auto handler, std::function<result<T>(Context)> f) {
            using handler_type = std::decay_t<decltype(handler)>;
            auto o = std::make_unique<detail::basic_posted_op<T, handler_type, Context>>(std::move(f), std::move(handler));
            o->deferred = deferred;
            if (deferred) o->due = std::chrono::steady_clock::now() + options.defer_limit;
            enqueue(std::unique_ptr<detail::basic_queued_op<Context>>(std::move(o)));
        };
        co_return co_await asio::async_initiate<decltype(asio::use_awaitable), void(result<T>)>(
            initiation, asio::use_awaitable, std::move(fn));
    }
};

result<std::unique_ptr<postgres_store>> postgres_store::open(postgres_options options) {
    if (options.conninfo.empty()) return make_error(core::errc::invalid_field, "journal.postgres.url: a connection URL is needed");
    auto p = std::make_unique<impl>(std::move(options));
    if (auto ok = p->writer_link.connect_now(); !ok) return ok.error();
    if (auto ok = pg::check_schema(*p->writer_link.current(), p->options.create_if_empty); !ok) return ok.error();
    for (auto& r : p->reader_links)
        if (auto ok = r->connect_now(); !ok) return ok.error();
    if (p->options.exclusive) {
        auto lock = take_serving_lock(p->options);
        if (!lock) return lock.error();
        p->serving_lock = std::move(*lock);
        p->lock_checked = std::chrono::steady_clock::now();
    }
    p->start();
    return std::unique_ptr<postgres_store>(new postgres_store(std::move(p)));
}

postgres_store::postgres_store(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

postgres_store::~postgres_store() { close(); }

void postgres_store::close() { impl_->stop(); }

bool postgres_store::is_open() const noexcept {
    std::lock_guard lock(impl_->mutex);
    return !impl_->stopping;
}

std::optional<core::error> postgres_store::write_fault() const {
    std::lock_guard lock(impl_->fault_mutex);
    return impl_->fault;
}

postgres_store::stats postgres_store::writer_stats() const {
    return {impl_->batches.load(), impl_->operations.load(), impl_->reconnects.load()};
}

asio::awaitable<void> postgres_store::async_probe_write() {
    // A real write, not an empty transaction: a session still read-only (a standby, a reload not yet
    // applied) commits an empty one, and the fault would clear before writes are taken again.
    std::function<result<bool>(write_context&)> fn = [](write_context& w) -> result<bool> {
        auto wrote = w.conn->exec("UPDATE airlock.schema_version SET version = version");
        if (!wrote) return wrote.error();
        return true;
    };
    (void)co_await impl_->submit<bool, write_context&>(std::move(fn));
}

namespace {

// Secrets are hidden on the caller's thread, before a byte is hashed, as in every store.
void redact_secrets(std::vector<core::new_record>& records) {
    for (auto& r : records) core::secrets::redact(r.body);
}

// An append, committed now or (deferred) with the next one that must be, within defer_limit.
asio::awaitable<result<std::vector<core::record>>> submit_append(postgres_store::impl& p, std::string run_id,
                                                                 std::vector<core::new_record> records, bool deferred) {
    if (auto ok = core::check_run_id(run_id); !ok) co_return ok.error();
    redact_secrets(records);
    std::function<result<std::vector<core::record>>(write_context&)> fn =
        [run_id = std::move(run_id), records = std::move(records)](write_context& w) {
            return pg::append(*w.conn, run_id, records, w.cache);
        };
    co_return co_await p.submit<std::vector<core::record>, write_context&>(std::move(fn), deferred);
}

result<void> check_pin_key(std::string const& key) {
    if (key.empty() || key.size() > 400) return make_error("invalid_key", "pin key must be 1 to 400 bytes");
    return {};
}

}  // namespace

asio::awaitable<result<std::vector<core::record>>> postgres_store::async_append(std::string run_id,
                                                                                std::vector<core::new_record> records) {
    co_return co_await submit_append(*impl_, std::move(run_id), std::move(records), false);
}

asio::awaitable<result<std::vector<core::record>>> postgres_store::async_append_deferred(
    std::string run_id, std::vector<core::new_record> records) {
    co_return co_await submit_append(*impl_, std::move(run_id), std::move(records), true);
}

asio::awaitable<result<core::record>> postgres_store::async_seal(std::string run_id, std::string status,
                                                                 std::string reason) {
    if (auto ok = core::check_run_id(run_id); !ok) co_return ok.error();
    core::secrets::redact(reason);
    std::function<result<core::record>(write_context&)> fn =
        [run_id = std::move(run_id), status = std::move(status), reason = std::move(reason)](write_context& w) {
            return pg::seal(*w.conn, run_id, status, reason, w.cache);
        };
    co_return co_await impl_->submit<core::record, write_context&>(std::move(fn));
}

asio::awaitable<result<core::admission>> postgres_store::async_claim_admission(std::string idempotency_key,
                                                                               std::string proposed_run_id) {
    if (idempotency_key.empty()) co_return make_error("invalid_key", "idempotency key is empty");
    std::function<result<core::admission>(write_context&)> fn =
        [key = std::move(idempotency_key), proposed = std::move(proposed_run_id)](write_context& w) {
            return pg::claim_admission(*w.conn, key, proposed);
        };
    co_return co_await impl_->submit<core::admission, write_context&>(std::move(fn));
}

asio::awaitable<result<std::vector<core::record>>> postgres_store::async_read(std::string run_id, std::uint64_t from_seq) {
    if (auto ok = core::check_run_id(run_id); !ok) co_return ok.error();
    std::function<result<std::vector<core::record>>(pg::connection&)> fn =
        [run_id = std::move(run_id), from_seq](pg::connection& c) { return pg::read(c, run_id, from_seq); };
    co_return co_await impl_->submit<std::vector<core::record>, pg::connection&>(std::move(fn));
}

asio::awaitable<result<std::optional<core::run_summary>>> postgres_store::async_head(std::string run_id) {
    if (auto ok = core::check_run_id(run_id); !ok) co_return ok.error();
    std::function<result<std::optional<core::run_summary>>(pg::connection&)> fn =
        [run_id = std::move(run_id)](pg::connection& c) { return pg::head(c, run_id); };
    co_return co_await impl_->submit<std::optional<core::run_summary>, pg::connection&>(std::move(fn));
}

asio::awaitable<result<core::run_page>> postgres_store::async_runs(core::run_filter filter) {
    std::function<result<core::run_page>(pg::connection&)> fn = [filter = std::move(filter)](pg::connection& c) {
        return pg::runs(c, filter);
    };
    co_return co_await impl_->submit<core::run_page, pg::connection&>(std::move(fn));
}

asio::awaitable<result<std::optional<core::chain_fault>>> postgres_store::async_verify(std::string run_id) {
    std::function<result<std::optional<core::chain_fault>>(pg::connection&)> fn =
        [run_id = std::move(run_id)](pg::connection& c) -> result<std::optional<core::chain_fault>> {
        auto h = pg::head(c, run_id);
        if (!h) return h.error();
        if (!*h) return make_error(core::errc::unknown_run, "run '" + run_id + "' is not in the journal");
        auto records = pg::read(c, run_id, 1);
        if (!records) return records.error();
        return core::verify_chain(*records);
    };
    co_return co_await impl_->submit<std::optional<core::chain_fault>, pg::connection&>(std::move(fn));
}

asio::awaitable<result<core::pin_verdict>> postgres_store::async_check_pin(std::string key, std::string digest,
                                                                         std::string definition) {
    if (auto ok = check_pin_key(key); !ok) co_return ok.error();
    // A definition is upstream text: it may echo a configured secret, which is written nowhere.
    core::secrets::redact(definition);
    std::function<result<core::pin_verdict>(write_context&)> fn =
        [key = std::move(key), digest = std::move(digest), definition = std::move(definition)](write_context& w) {
            return pg::check_pin(*w.conn, key, digest, definition);
        };
    co_return co_await impl_->submit<core::pin_verdict, write_context&>(std::move(fn));
}

asio::awaitable<result<core::pin>> postgres_store::async_accept_pin(std::string key, std::optional<std::string> expected) {
    if (auto ok = check_pin_key(key); !ok) co_return ok.error();
    std::function<result<core::pin>(write_context&)> fn = [key = std::move(key),
                                                             expected = std::move(expected)](write_context& w) {
        return pg::accept_pin(*w.conn, key, expected);
    };
    co_return co_await impl_->submit<core::pin, write_context&>(std::move(fn));
}

asio::awaitable<result<std::vector<core::pin>>> postgres_store::async_pins() {
    std::function<result<std::vector<core::pin>>(pg::connection&)> fn = [](pg::connection& c) { return pg::pins(c); };
    co_return co_await impl_->submit<std::vector<core::pin>, pg::connection&>(std::move(fn));
}

std::string redact_postgres_url(std::string_view url) { return pg::redact_conninfo(url); }

result<int> migrate_postgres_schema(std::string const& conninfo) {
    postgres_options o;
    o.conninfo = conninfo;
    auto conn = pg::connection::open(connect_options_of(o));
    if (!conn) return conn.error();
    return pg::migrate_schema(**conn);
}

}  // namespace airlock::store
