#include "store/lmdb_store.hpp"

#include "core/journal_rules.hpp"
#include "core/rfc3339.hpp"
#include "core/secrets.hpp"
#include "store/lmdb_index_upgrade.hpp"
#include "store/lmdb_keys.hpp"
#include "store/lmdb_upkeep.hpp"
#include "store/write_ops.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <lmdb.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace airlock::store {

namespace asio = boost::asio;
using core::error;
using core::make_error;
using core::result;

using detail::admission_db_key;
using detail::as_val;
using detail::as_view;
using detail::check_pin_key;
using detail::effect_db_key;
using detail::inline_op;
using detail::lmdb_error;
using detail::read_pin;
using detail::read_txn;
using detail::record_key;
using detail::typed_op;
using detail::write_op;
using detail::write_pin;

// When an append may be committed inline (see try_commit_inline): the last batch held at most
// this many ops (at one call at a time: a gateway call's start record and the previous call's
// deferred outcome), and the last commit ended at least this long ago. A burst of appends comes
// closer together than that, even from coroutines on one thread, and goes to the writer.
constexpr std::size_t inline_batch_limit = 2;
constexpr std::chrono::microseconds inline_quiet{250};
// How long after the last commit the writer keeps looking at the queue every defer_limit unasked
// (see writer_loop); later, a deferred append wakes it.
constexpr std::chrono::seconds deferred_watch{1};

struct lmdb_store::impl {
    lmdb_options options;
    MDB_env* env = nullptr;
    MDB_dbi records = 0, runs = 0, effects = 0, admissions = 0, pins = 0, meta = 0;
    int lock_fd = -1;  // DIR/airlock.lock, shared or exclusive (lmdb_options::exclusive)

    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::unique_ptr<write_op>> queue;
    std::size_t urgent = 0;  // queued ops that are not deferred: the writer commits as soon as there is one
    bool stopping = false;
    // A batch is being committed, by the writer thread or by a submitting coroutine (fast mode):
    // one at a time, so that batches commit in the order their ops were queued.
    bool writing = false;
    // Fast mode: committed since the last sync, and when last.
    bool dirty = false;
    std::chrono::steady_clock::time_point last_commit;
    std::size_t last_batch = 0;  // ops in the last batch committed
    // When the writer, asleep, will look at the queue again of its own accord (min(): it is awake
    // and will look before it sleeps). A deferred op due after that needs no wake-up.
    std::chrono::steady_clock::time_point writer_alarm = std::chrono::steady_clock::time_point::min();
    std::atomic<bool> closed{false};
    std::thread writer;
    std::thread::id writer_id;  // set once, before any append: `writer` itself is reset by join()
    std::atomic<std::uint64_t> batches{0}, operations{0};
    MDB_dbi health = 0;  // holds nothing but the write probe, for the moment it lasts

    // Why appends fail now (lmdb_store::write_fault). Set by a batch in which an op failed for a
    // reason of the journal itself (its map or disk is full, its file cannot be written), cleared
    // by a batch that made a write durable and had no such failure; a batch of refusals only
    // (a sealed run, a duplicate effect) says nothing either way.
    mutable std::mutex fault_mutex;
    std::optional<error> fault;
    std::chrono::steady_clock::time_point last_probe{};

    static bool is_journal_fault(error const& e) {
        return e.code == "map_full" || e.code == "disk_full" || e.code == "io_error";
    }

    void note_write_health(std::vector<std::unique_ptr<write_op>> const& batch) {
        std::optional<error> failed;
        bool wrote = false;
        for (auto const& op : batch) {
            auto e = op->failure();
            if (!e) wrote = true;
            else if (is_journal_fault(*e)) failed = std::move(e);
        }
        if (!failed && !wrote) return;
        std::lock_guard lock(fault_mutex);
        fault = std::move(failed);
    }

    // Drains what is queued, stops the writer and syncs; later appends fail "closed". The
    // environment stays open for readers until destruction.
    void close() {
        {
            std::lock_guard lock(mutex);
            stopping = true;
        }
        closed.store(true, std::memory_order_release);
        wake.notify_all();
        if (writer.joinable() && writer_id != std::this_thread::get_id()) writer.join();
        if (env) mdb_env_sync(env, 1);
    }

    ~impl() {
        close();
        if (env) mdb_env_close(env);
        detail::unlock_journal(lock_fd);
    }

    void enqueue(std::unique_ptr<write_op> op) {
        bool notify = false;
        {
            std::lock_guard lock(mutex);
            if (!stopping) {
                // An urgent op always wakes the writer; a deferred one only when the writer would
                // otherwise sleep past the op's due time.
                notify = !op->deferred || writer_alarm > op->due;
                if (!op->deferred) ++urgent;
                queue.push_back(std::move(op));
                op = nullptr;
            }
        }
        if (op) {
            op->fail(make_error(core::errc::closed, "the journal is closing"));
            op->complete();
            return;
        }
        if (notify) wake.notify_one();
    }

    void writer_loop() {
        using steady = std::chrono::steady_clock;
        for (;;) {
            std::vector<std::unique_ptr<write_op>> batch;
            bool sync_now = false;
            {
                std::unique_lock lock(mutex);
                for (;;) {
                    // A batch committed by a submitting coroutine is let finish first; its end
                    // wakes the writer when something is queued.
                    if (writing) {
                        sleep_until(lock, steady::now() + options.sync_interval);
                        continue;
                    }
                    if (stopping || urgent > 0) break;
                    // Fast mode syncs once the queue has been quiet for sync_interval after a commit.
                    auto const sync_at = options.mode == durability::fast && dirty ? last_commit + options.sync_interval
                                                                                   : steady::time_point::max();
                    // Only deferred ops are queued (if any), oldest first: the front one is due first.
                    auto const now = steady::now();
                    if (!queue.empty() && queue.front()->due <= now) break;
                    if (now >= sync_at) {
                        sync_now = queue.empty();  // otherwise commit what is deferred; the sync follows later
                        break;
                    }
                    auto wake_at = queue.empty() ? sync_at : std::min(sync_at, queue.front()->due);
                    // While appends keep coming, the writer looks at the queue every defer_limit
                    // of its own accord, so the deferred outcome of every call need not wake it
                    // (one futex wake and two thread switches a call); once the journal has been
                    // quiet for a while it sleeps until woken.
                    if (queue.empty() && now - last_commit < deferred_watch)
                        wake_at = std::min(wake_at, now + options.defer_limit);
                    sleep_until(lock, wake_at);
                }
                if (queue.empty() && stopping) return;
                if (sync_now) dirty = false;
                else take_queued(batch, options.max_batch);
                writing = true;
            }
            if (sync_now) {
                // No commit runs during the sync: an op submitted meanwhile is queued for the writer.
                mdb_env_sync(env, 1);
                std::lock_guard lock(mutex);
                writing = false;
                continue;
            }
            commit_and_complete(batch);
        }
    }

    // Waits on `wake` (mutex held) until woken or `until`, saying meanwhile when it will look again.
    void sleep_until(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point until) {
        writer_alarm = until;
        if (until == std::chrono::steady_clock::time_point::max())
            wake.wait(lock);
        else
            wake.wait_until(lock, until);
        writer_alarm = std::chrono::steady_clock::time_point::min();
    }

    // Moves up to `limit` queued ops, oldest first, into `batch`. Called with the mutex held; room
    // is made first, so nothing is taken when memory runs out.
    void take_queued(std::vector<std::unique_ptr<write_op>>& batch, std::size_t limit) {
        batch.reserve(batch.size() + std::min(queue.size(), limit));
        while (!queue.empty() && batch.size() < limit) {
            if (!queue.front()->deferred) --urgent;
            batch.push_back(std::move(queue.front()));
            queue.pop_front();
        }
    }

    // Commits a batch taken with `writing` set, clears it, and hands each op its result.
    void commit_and_complete(std::vector<std::unique_ptr<write_op>>& batch) {
        auto started = std::chrono::steady_clock::now();
        commit_batch(batch);
        note_write_health(batch);
        auto finished = std::chrono::steady_clock::now();
        if (options.on_commit) {
            try {
                options.on_commit(batch.size(), finished - started);
            } catch (...) {
                // Metrics only: a failing observer must not leave `writing` set and the ops waiting.
            }
        }
        bool wake_writer = false;
        {
            std::lock_guard lock(mutex);
            writing = false;
            last_batch = batch.size();
            // The writer is woken only when it has something to do: ops queued meanwhile, a first
            // commit to sync after (fast mode), or a close waiting for this batch.
            wake_writer = urgent > 0 || stopping || !queue.empty() || (options.mode == durability::fast && !dirty);
            dirty = true;
            last_commit = finished;
        }
        if (wake_writer && std::this_thread::get_id() != writer_id) wake.notify_all();
        for (auto& op : batch) op->complete();
    }

    // Fast mode, an append that comes when the journal is quiet: the submitting coroutine commits
    // what is queued and its own op itself, on its own thread, instead of handing them to the
    // writer thread and waiting to be woken. Without an fsync the commit is a few writes to the page
    // cache, shorter than those two thread switches. Ops queued earlier go first, so the order of
    // records stays the order of submission. Under load (a large last batch, or commits close
    // together) every op goes to the writer, whose group commits cost less per op. Durable mode
    // always uses the writer: an fsync must never hold up an io thread. nullopt (and `fn`
    // untouched) when the op is to be queued.
    template <class T>
    std::optional<result<T>> try_commit_inline(std::function<result<T>(MDB_txn*)>& fn) {
        if (options.mode != durability::fast) return std::nullopt;
        std::unique_ptr<inline_op<T>> own;
        std::vector<std::unique_ptr<write_op>> batch;
        {
            std::lock_guard lock(mutex);
            if (writing || stopping || last_batch > inline_batch_limit ||
                std::chrono::steady_clock::now() - last_commit < inline_quiet)
                return std::nullopt;
            // Everything that may throw is done before `writing` is set (and `fn` is taken only
            // once its op exists).
            batch.reserve(std::min(queue.size(), options.max_batch) + 1);
            own = std::make_unique<inline_op<T>>(std::move(fn));
            writing = true;
            take_queued(batch, options.max_batch > 1 ? options.max_batch - 1 : 1);
        }
        auto* mine = own.get();
        batch.push_back(std::move(own));
        commit_and_complete(batch);
        return std::move(mine->outcome);
    }

    // One parent commit (one fsync pair) makes the whole batch durable, and one refused append
    // never undoes its neighbours. The batch is first run flat, every op straight in the one
    // transaction: LMDB gives each child transaction a 2 MiB dirty list and a 1 MiB page list of
    // its own, two large allocations per append (and page faults once the allocator has returned
    // the pages). Only when an op refuses is the batch redone with an op per child transaction.
    void commit_batch(std::vector<std::unique_ptr<write_op>>& batch) {
        batches.fetch_add(1, std::memory_order_relaxed);
        operations.fetch_add(batch.size(), std::memory_order_relaxed);
        if (!commit_flat(batch)) commit_nested(batch);
    }

    // False, with nothing written, when an op refused; every op is run again by commit_nested.
    bool commit_flat(std::vector<std::unique_ptr<write_op>>& batch) {
        MDB_txn* txn = nullptr;
        if (int rc = mdb_txn_begin(env, nullptr, 0, &txn); rc != 0) {
            for (auto& op : batch) op->fail(lmdb_error(rc, "begin write transaction"));
            return true;
        }
        for (auto& op : batch) {
            if (!op->run(txn)) {
                mdb_txn_abort(txn);
                return false;
            }
        }
        if (int rc = mdb_txn_commit(txn); rc != 0) {
            auto e = lmdb_error(rc, "commit batch");
            for (auto& op : batch) op->fail(e);
        }
        return true;
    }

    void commit_nested(std::vector<std::unique_ptr<write_op>>& batch) {
        MDB_txn* parent = nullptr;
        if (int rc = mdb_txn_begin(env, nullptr, 0, &parent); rc != 0) {
            for (auto& op : batch) op->fail(lmdb_error(rc, "begin write transaction"));
            return;
        }
        for (auto& op : batch) {
            MDB_txn* child = nullptr;
            if (int rc = mdb_txn_begin(env, parent, 0, &child); rc != 0) {
                op->fail(lmdb_error(rc, "begin nested transaction"));
                continue;
            }
            if (op->run(child)) {
                if (int rc = mdb_txn_commit(child); rc != 0) op->fail(lmdb_error(rc, "commit append"));
            } else {
                mdb_txn_abort(child);
            }
        }
        if (int rc = mdb_txn_commit(parent); rc != 0) {
            auto e = lmdb_error(rc, "commit batch");
            for (auto& op : batch) op->fail(e);
        }
    }

    template <class T>
    asio::awaitable<result<T>> submit(std::function<result<T>(MDB_txn*)> fn, bool deferred = false) {
        if (!deferred)
            if (auto done = try_commit_inline<T>(fn)) co_return std::move(*done);
        auto initiation = [this, deferred](auto handler, std::function<result<T>(MDB_txn*)> f) {
            using handler_type = std::decay_t<decltype(handler)>;
            auto op = std::make_unique<typed_op<T, handler_type>>(std::move(f), std::move(handler));
            op->deferred = deferred;
            if (deferred) op->due = std::chrono::steady_clock::now() + options.defer_limit;
            enqueue(std::move(op));
        };
        co_return co_await asio::async_initiate<decltype(asio::use_awaitable), void(result<T>)>(initiation, asio::use_awaitable,
                                                                                          std::move(fn));
    }

    // --- reads and writes against one transaction -------------------------------------------

    result<std::optional<core::run_summary>> get_summary(MDB_txn* txn, std::string_view run_id) const {
        MDB_val key = as_val(run_id), val;
        int rc = mdb_get(txn, runs, &key, &val);
        if (rc == MDB_NOTFOUND) return std::optional<core::run_summary>{};
        if (rc != 0) return lmdb_error(rc, "read run index");
        boost::system::error_code ec;
        auto v = boost::json::parse(as_view(val), ec);
        if (ec) return make_error("corrupt", "run index entry of " + std::string(run_id) + " is not JSON");
        auto s = core::run_summary_from_json(v);
        if (!s) return make_error("corrupt", "run " + std::string(run_id) + ": " + s.error().message);
        return std::optional<core::run_summary>(std::move(*s));
    }

    result<std::vector<core::record>> apply_append(MDB_txn* txn, std::string const& run_id,
                                                   std::vector<core::new_record> const& batch) const {
        auto current = get_summary(txn, run_id);
        if (!current) return current.error();
        int lookup_rc = 0;
        auto seen = [&](std::string_view effect_key) {
            auto k = effect_db_key(run_id, effect_key);
            MDB_val key = as_val(k), val;
            int rc = mdb_get(txn, effects, &key, &val);
            if (rc != 0 && rc != MDB_NOTFOUND) lookup_rc = rc;
            return rc == 0;
        };
        auto plan = core::plan_append(run_id, *current, batch, seen);
        if (lookup_rc != 0) return lmdb_error(lookup_rc, "read effect index");
        if (!plan) return plan.error();
        for (auto const& rec : plan->records) {
            auto k = record_key(run_id, rec.seq);
            auto v = core::serialize_record(rec);
            MDB_val key = as_val(k), val = as_val(v);
            if (int rc = mdb_put(txn, records, &key, &val, MDB_NOOVERWRITE); rc != 0)
                return rc == MDB_KEYEXIST ? make_error("corrupt", "record " + std::to_string(rec.seq) + " of run " +
                                                                      run_id + " exists beyond the indexed head")
                                          : lmdb_error(rc, "write record");
        }
        for (auto const& effect : plan->new_effects) {
            auto k = effect_db_key(run_id, effect);
            MDB_val key = as_val(k), val = as_val("");
            if (int rc = mdb_put(txn, effects, &key, &val, 0); rc != 0) return lmdb_error(rc, "write effect index");
        }
        auto s = boost::json::serialize(core::to_json(plan->summary));
        MDB_val key = as_val(run_id), val = as_val(s);
        if (int rc = mdb_put(txn, runs, &key, &val, 0); rc != 0) return lmdb_error(rc, "write run index");
        return std::move(plan->records);
    }

    template <class F>
    auto with_read(F&& f) const -> decltype(f(static_cast<MDB_txn*>(nullptr))) {
        read_txn r;
        if (int rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &r.txn); rc != 0) {
            r.txn = nullptr;
            return lmdb_error(rc, "begin read transaction");
        }
        return f(r.txn);
    }

    result<std::vector<core::record>> read(std::string const& run_id, std::uint64_t from_seq) const {
        if (auto ok = core::check_run_id(run_id); !ok) return ok.error();
        return with_read([&](MDB_txn* txn) -> result<std::vector<core::record>> {
            std::vector<core::record> out;
            MDB_cursor* cur = nullptr;
            if (int rc = mdb_cursor_open(txn, records, &cur); rc != 0) return lmdb_error(rc, "open cursor");
            std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> guard(cur, mdb_cursor_close);
            auto start = record_key(run_id, std::max<std::uint64_t>(from_seq, 1));
            auto prefix = run_id + std::string(1, '\0');
            MDB_val key = as_val(start), val;
            int rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
            while (rc == 0) {
                auto k = as_view(key);
                if (k.size() != prefix.size() + 8 || !k.starts_with(prefix)) break;
                std::uint64_t seq = 0;
                for (std::size_t i = prefix.size(); i < k.size(); ++i) seq = (seq << 8) | static_cast<unsigned char>(k[i]);
                auto r = core::parse_record(as_view(val));
                if (!r)
                    return make_error("corrupt", "record " + std::to_string(seq) + " of run " + run_id +
                                                     " is unreadable: " + r.error().message);
                out.push_back(std::move(*r));
                rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT);
            }
            if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error(rc, "read records");
            return out;
        });
    }

    result<std::optional<core::chain_fault>> verify(std::string const& run_id) const {
        auto head = with_read([&](MDB_txn* txn) { return get_summary(txn, run_id); });
        if (!head) return head.error();
        if (!*head) return make_error(core::errc::unknown_run, "no run " + run_id);
        auto recs = read(run_id, 1);
        if (!recs) {
            // An unreadable record is itself a chain fault: say which one.
            auto const& msg = recs.error().message;
            if (recs.error().code == "corrupt" && msg.rfind("record ", 0) == 0)
                return std::optional<core::chain_fault>(core::chain_fault{std::stoull(msg.substr(7)), msg});
            return recs.error();
        }
        if (auto fault = core::verify_chain(*recs)) return fault;
        auto const& s = **head;
        std::uint64_t last = recs->empty() ? 0 : recs->back().seq;
        if (last != s.head_seq)
            return std::optional<core::chain_fault>(core::chain_fault{
                std::min(last, s.head_seq) + 1, "the run index says the chain ends at seq " +
                                                    std::to_string(s.head_seq) + " but the records end at " +
                                                    std::to_string(last)});
        if (!recs->empty() && recs->back().hash != s.head_hash)
            return std::optional<core::chain_fault>(core::chain_fault{last, "the run index head hash differs from the last record"});
        return std::optional<core::chain_fault>{};
    }

    result<core::run_page> runs_page(core::run_filter const& f) const {
        return with_read([&](MDB_txn* txn) -> result<core::run_page> {
            core::run_page page;
            MDB_cursor* cur = nullptr;
            if (int rc = mdb_cursor_open(txn, runs, &cur); rc != 0) return lmdb_error(rc, "open cursor");
            std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> guard(cur, mdb_cursor_close);
            MDB_val key, val;
            int rc;
            if (f.cursor) {
                key = as_val(*f.cursor);
                rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
                if (rc == 0 && as_view(key) == *f.cursor) rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT);
            } else {
                rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST);
            }
            std::size_t limit = f.limit == 0 ? 1 : f.limit;
            for (; rc == 0; rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
                boost::system::error_code ec;
                auto v = boost::json::parse(as_view(val), ec);
                if (ec) return make_error("corrupt", "run index entry of " + std::string(as_view(key)) + " is not JSON");
                auto s = core::run_summary_from_json(v);
                if (!s) return s.error();
                if (!core::matches(f, *s)) continue;
                if (page.runs.size() == limit) {
                    page.next_cursor = page.runs.back().run_id;
                    break;
                }
                page.runs.push_back(std::move(*s));
            }
            if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error(rc, "read run index");
            return page;
        });
    }
};

lmdb_store::lmdb_store(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
lmdb_store::~lmdb_store() = default;

result<std::unique_ptr<lmdb_store>> lmdb_store::open(lmdb_options options) {
    std::error_code fec;
    std::filesystem::create_directories(options.directory, fec);
    if (fec) return make_error("io_error", "cannot create journal directory " + options.directory.string() + ": " + fec.message());
    auto p = std::make_unique<impl>();
    p->options = options;
    auto locked = detail::lock_journal(options.directory, options.exclusive);
    if (!locked) return locked.error();
    p->lock_fd = *locked;
    auto where = " (" + options.directory.string() + ")";
    if (int rc = mdb_env_create(&p->env); rc != 0) return lmdb_error(rc, "create environment" + where);
    mdb_env_set_maxdbs(p->env, 8);
    if (int rc = mdb_env_set_mapsize(p->env, options.map_size); rc != 0) return lmdb_error(rc, "set map size" + where);
    // MDB_NOTLS: read transactions are not tied to threads, so coroutines may hop between them.
    unsigned flags = MDB_NOTLS;
    if (options.mode == durability::fast) flags |= MDB_NOSYNC;
    if (int rc = mdb_env_open(p->env, options.directory.c_str(), flags, 0640); rc != 0) {
        auto e = lmdb_error(rc, "open journal" + where);
        mdb_env_close(p->env);
        p->env = nullptr;
        return e;
    }
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(p->env, nullptr, 0, &txn); rc != 0) return lmdb_error(rc, "open databases" + where);
    for (auto [name, dbi] : {std::pair{"records", &p->records}, {"runs", &p->runs}, {"effects", &p->effects},
                             {"admissions", &p->admissions}, {"pins", &p->pins}, {"health", &p->health},
                             {"meta", &p->meta}}) {
        if (int rc = mdb_dbi_open(txn, name, MDB_CREATE, dbi); rc != 0) {
            mdb_txn_abort(txn);
            return lmdb_error(rc, std::string("open database ") + name + where);
        }
    }
    if (auto upgraded = detail::upgrade_run_index(txn, p->runs, p->records, p->meta); !upgraded) {
        mdb_txn_abort(txn);
        return core::make_error(upgraded.error().code, upgraded.error().message + where);
    }
    if (int rc = mdb_txn_commit(txn); rc != 0) return lmdb_error(rc, "create databases" + where);
    auto* raw = p.get();
    p->writer = std::thread([raw] { raw->writer_loop(); });
    p->writer_id = p->writer.get_id();
    return std::unique_ptr<lmdb_store>(new lmdb_store(std::move(p)));
}

std::optional<error> lmdb_store::write_fault() const {
    std::lock_guard lock(impl_->fault_mutex);
    return impl_->fault;
}

namespace {
// A write as large as a sizeable append (a tool call's arguments or result of tens of KiB): a probe
// much smaller than what fails would find room in the map's freed pages and call the journal ready
// while appends still fail.
constexpr std::size_t probe_bytes = 64 * 1024;
constexpr std::string_view probe_key = "write-probe";
// While appends fail, readiness probes come every few seconds; each probe costs two commits.
constexpr std::chrono::seconds probe_interval{1};
}  // namespace

asio::awaitable<void> lmdb_store::async_probe_write() {
    auto* p = impl_.get();
    {
        std::lock_guard lock(p->fault_mutex);
        auto const now = std::chrono::steady_clock::now();
        if (!p->fault || now - p->last_probe < probe_interval) co_return;
        p->last_probe = now;
    }
    // Committed like an append, so its outcome sets or clears the fault as an append's would;
    // then removed, so the journal holds nothing of it.
    std::function<result<bool>(MDB_txn*)> put = [p](MDB_txn* txn) -> result<bool> {
        std::string value(probe_bytes, '\0');
        MDB_val key = as_val(probe_key), val = as_val(value);
        if (int rc = mdb_put(txn, p->health, &key, &val, 0); rc != 0) return lmdb_error(rc, "write probe");
        return true;
    };
    if (!co_await p->submit<bool>(std::move(put))) co_return;
    std::function<result<bool>(MDB_txn*)> remove = [p](MDB_txn* txn) -> result<bool> {
        MDB_val key = as_val(probe_key);
        if (int rc = mdb_del(txn, p->health, &key, nullptr); rc != 0 && rc != MDB_NOTFOUND)
            return lmdb_error(rc, "remove probe");
        return true;
    };
    co_await p->submit<bool>(std::move(remove));
}

std::optional<journal_usage> lmdb_store::usage() const {
    auto u = map_usage();
    return journal_usage{u.used_bytes, u.map_size, u.file_bytes};
}

lmdb_store::map_use lmdb_store::map_usage() const {
    MDB_envinfo info{};
    MDB_stat st{};
    if (mdb_env_info(impl_->env, &info) != 0 || mdb_env_stat(impl_->env, &st) != 0) return {};
    // The file grows as pages past the high-water mark are first written (the map is not written
    // through, so the file is not the map's size), and never shrinks: pages freed by a deletion
    // are reused inside it. Only a compacting copy gives space back.
    std::error_code ec;
    auto file = std::filesystem::file_size(impl_->options.directory / "data.mdb", ec);
    return {(static_cast<std::size_t>(info.me_last_pgno) + 1) * st.ms_psize, info.me_mapsize, ec ? 0 : file};
}

namespace {

// Secrets are hidden here, on the caller's thread, before the writer hashes and writes a byte: a
// record holds what its hash covers, and the writer thread does no work a caller can do.
void redact_secrets(std::vector<core::new_record>& records) {
    for (auto& r : records) core::secrets::redact(r.body);
}

}  // namespace

asio::awaitable<result<std::vector<core::record>>> lmdb_store::async_append(std::string run_id,
                                                                            std::vector<core::new_record> records) {
    if (auto ok = core::check_run_id(run_id); !ok) co_return ok.error();
    redact_secrets(records);
    auto* p = impl_.get();
    std::function<result<std::vector<core::record>>(MDB_txn*)> fn =
        [p, run_id = std::move(run_id), records = std::move(records)](MDB_txn* txn) {
            return p->apply_append(txn, run_id, records);
        };
    co_return co_await p->submit<std::vector<core::record>>(std::move(fn));
}

asio::awaitable<result<std::vector<core::record>>> lmdb_store::async_append_deferred(
    std::string run_id, std::vector<core::new_record> records) {
    if (auto ok = core::check_run_id(run_id); !ok) co_return ok.error();
    redact_secrets(records);
    auto* p = impl_.get();
    std::function<result<std::vector<core::record>>(MDB_txn*)> fn =
        [p, run_id = std::move(run_id), records = std::move(records)](MDB_txn* txn) {
            return p->apply_append(txn, run_id, records);
        };
    co_return co_await p->submit<std::vector<core::record>>(std::move(fn), true);
}

asio::awaitable<result<core::record>> lmdb_store::async_seal(std::string run_id, std::string status, std::string reason) {
    if (auto ok = core::check_run_id(run_id); !ok) co_return ok.error();
    core::secrets::redact(reason);
    auto* p = impl_.get();
    std::function<result<core::record>(MDB_txn*)> fn = [p, run_id = std::move(run_id), status = std::move(status),
                                                        reason = std::move(reason)](MDB_txn* txn) -> result<core::record> {
        auto current = p->get_summary(txn, run_id);
        if (!current) return current.error();
        if (!*current) return make_error(core::errc::unknown_run, "no run " + run_id);
        auto seal = core::make_seal(**current, status, reason, core::rfc3339(std::chrono::system_clock::now()));
        if (!seal) return seal.error();
        auto written = p->apply_append(txn, run_id, {*seal});
        if (!written) return written.error();
        return written->front();
    };
    co_return co_await p->submit<core::record>(std::move(fn));
}

asio::awaitable<result<core::admission>> lmdb_store::async_claim_admission(std::string idempotency_key,
                                                                           std::string proposed_run_id) {
    if (idempotency_key.empty()) co_return make_error("invalid_key", "idempotency key is empty");
    auto* p = impl_.get();
    std::function<result<core::admission>(MDB_txn*)> fn =
        [p, key = admission_db_key(idempotency_key), proposed = std::move(proposed_run_id)](MDB_txn* txn) -> result<core::admission> {
        MDB_val k = as_val(key), v;
        int rc = mdb_get(txn, p->admissions, &k, &v);
        if (rc == 0) return core::admission{std::string(as_view(v)), false};
        if (rc != MDB_NOTFOUND) return lmdb_error(rc, "read admissions");
        MDB_val nv = as_val(proposed);
        if (rc = mdb_put(txn, p->admissions, &k, &nv, 0); rc != 0) return lmdb_error(rc, "write admission");
        return core::admission{proposed, true};
    };
    co_return co_await p->submit<core::admission>(std::move(fn));
}

asio::awaitable<result<std::vector<core::record>>> lmdb_store::async_read(std::string run_id, std::uint64_t from_seq) {
    co_return read(run_id, from_seq);
}

asio::awaitable<result<std::optional<core::run_summary>>> lmdb_store::async_head(std::string run_id) {
    co_return head(run_id);
}

asio::awaitable<result<core::run_page>> lmdb_store::async_runs(core::run_filter filter) { co_return runs(filter); }

asio::awaitable<result<std::optional<core::chain_fault>>> lmdb_store::async_verify(std::string run_id) {
    co_return verify(run_id);
}

result<std::vector<core::record>> lmdb_store::read(std::string const& run_id, std::uint64_t from_seq) const {
    return impl_->read(run_id, from_seq);
}

result<std::optional<core::run_summary>> lmdb_store::head(std::string const& run_id) const {
    if (auto ok = core::check_run_id(run_id); !ok) return ok.error();
    return impl_->with_read([&](MDB_txn* txn) { return impl_->get_summary(txn, run_id); });
}

result<core::run_page> lmdb_store::runs(core::run_filter const& filter) const { return impl_->runs_page(filter); }

result<void> lmdb_store::each_run(std::function<result<void>(core::run_summary const&)> const& each) const {
    core::run_filter filter;
    filter.limit = 1000;
    for (;;) {
        auto page = runs(filter);
        if (!page) return page.error();
        for (auto const& run : page->runs)
            if (auto done = each(run); !done) return done.error();
        if (!page->next_cursor) return {};
        filter.cursor = page->next_cursor;
    }
}

result<std::optional<core::chain_fault>> lmdb_store::verify(std::string const& run_id) const {
    return impl_->verify(run_id);
}


asio::awaitable<result<core::pin_verdict>> lmdb_store::async_check_pin(std::string key, std::string digest,
                                                                     std::string definition) {
    if (auto ok = check_pin_key(key); !ok) co_return ok.error();
    // A definition is upstream text: it may echo a configured secret, which is written nowhere.
    core::secrets::redact(definition);
    auto* p = impl_.get();
    std::function<result<core::pin_verdict>(MDB_txn*)> fn =
        [p, key = std::move(key), digest = std::move(digest),
         definition = std::move(definition)](MDB_txn* txn) -> result<core::pin_verdict> {
        auto current = read_pin(txn, p->pins, key);
        if (!current) return current.error();
        auto [next, verdict] = core::apply_pin_check(std::move(*current), key, digest, definition);
        if (auto w = write_pin(txn, p->pins, next); !w) return w.error();
        return verdict;
    };
    co_return co_await p->submit<core::pin_verdict>(std::move(fn));
}

asio::awaitable<result<core::pin>> lmdb_store::async_accept_pin(std::string key, std::optional<std::string> expected) {
    if (auto ok = check_pin_key(key); !ok) co_return ok.error();
    auto* p = impl_.get();
    std::function<result<core::pin>(MDB_txn*)> fn = [p, key = std::move(key),
                                                      expected = std::move(expected)](MDB_txn* txn) -> result<core::pin> {
        auto current = read_pin(txn, p->pins, key);
        if (!current) return current.error();
        auto next = core::apply_pin_accept(std::move(*current), key, expected);
        if (!next) return next.error();
        if (auto w = write_pin(txn, p->pins, *next); !w) return w.error();
        return next;
    };
    co_return co_await p->submit<core::pin>(std::move(fn));
}

asio::awaitable<result<std::vector<core::pin>>> lmdb_store::async_pins() {
    co_return impl_->with_read([&](MDB_txn* txn) -> result<std::vector<core::pin>> {
        std::vector<core::pin> out;
        MDB_cursor* cur = nullptr;
        if (int rc = mdb_cursor_open(txn, impl_->pins, &cur); rc != 0) return lmdb_error(rc, "open cursor");
        std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> guard(cur, mdb_cursor_close);
        MDB_val k, v;
        for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            auto p = read_pin(txn, impl_->pins, std::string(as_view(k)));
            if (!p) return p.error();
            if (*p) out.push_back(**p);
        }
        return out;
    });
}

asio::awaitable<result<std::size_t>> lmdb_store::async_remove_sealed(std::vector<std::string> run_ids) {
    auto* p = impl_.get();
    std::function<result<std::size_t>(MDB_txn*)> fn = [p, ids = std::move(run_ids)](MDB_txn* txn) -> result<std::size_t> {
        detail::journal_tables const tables{p->records, p->runs, p->effects, p->admissions};
        std::set<std::string> gone;
        std::size_t records = 0;
        for (auto const& id : ids) {
            auto summary = p->get_summary(txn, id);
            if (!summary) return summary.error();
            if (!*summary) return make_error(core::errc::unknown_run, "no run " + id);
            auto removed = detail::remove_sealed_run(txn, tables, **summary);
            if (!removed) return removed.error();
            records += *removed;
            gone.insert(id);
        }
        if (auto a = detail::remove_admissions_of(txn, p->admissions, gone); !a) return a.error();
        return records;
    };
    co_return co_await p->submit<std::size_t>(std::move(fn));
}

result<void> lmdb_store::copy_compacted(std::filesystem::path const& directory) const {
    return detail::copy_compacted(impl_->env, directory);
}

void lmdb_store::close() { impl_->close(); }

bool lmdb_store::is_open() const noexcept { return !impl_->closed.load(std::memory_order_acquire); }

lmdb_store::stats lmdb_store::writer_stats() const { return {impl_->batches.load(), impl_->operations.load()}; }

}  // namespace airlock::store
