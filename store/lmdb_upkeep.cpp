#include "store/lmdb_upkeep.hpp"

#include "store/lmdb_keys.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace airlock::store::detail {

using core::make_error;
using core::result;

namespace {

// A run's records are the keys that start with its id and a NUL (record_key).
bool belongs_to(MDB_val const& key, std::string_view prefix) { return as_view(key).starts_with(prefix); }

}  // namespace

result<std::size_t> remove_sealed_run(MDB_txn* txn, journal_tables const& t, core::run_summary const& run) {
    if (!run.sealed)
        return make_error("not_sealed", "run " + run.run_id + " is " + run.status + ", not sealed: only sealed runs are pruned");
    MDB_cursor* cur = nullptr;
    if (int rc = mdb_cursor_open(txn, t.records, &cur); rc != 0) return lmdb_error(rc, "open records cursor");
    auto const first = record_key(run.run_id, 1);
    auto const prefix = std::string_view(first).substr(0, run.run_id.size() + 1);
    MDB_val key = as_val(first), val;
    std::size_t removed = 0;
    int rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
    for (; rc == 0 && belongs_to(key, prefix); rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
        auto rec = core::parse_record(as_view(val));
        if (!rec) {
            mdb_cursor_close(cur);
            return make_error("corrupt", "run " + run.run_id + ": " + rec.error().message);
        }
        if (rec->kind == core::record_kind::effect_started) {
            if (auto const* k = rec->body.if_contains("effect_key"); k && k->is_string()) {
                auto ek = effect_db_key(run.run_id, k->get_string());
                MDB_val ekey = as_val(ek);
                if (int drc = mdb_del(txn, t.effects, &ekey, nullptr); drc != 0 && drc != MDB_NOTFOUND) {
                    mdb_cursor_close(cur);
                    return lmdb_error(drc, "remove effect entry");
                }
            }
        }
        if (int drc = mdb_cursor_del(cur, 0); drc != 0) {
            mdb_cursor_close(cur);
            return lmdb_error(drc, "remove record");
        }
        ++removed;
    }
    mdb_cursor_close(cur);
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error(rc, "read records");
    MDB_val rkey = as_val(run.run_id);
    if (int drc = mdb_del(txn, t.runs, &rkey, nullptr); drc != 0) return lmdb_error(drc, "remove run index entry");
    return removed;
}

result<std::size_t> remove_admissions_of(MDB_txn* txn, MDB_dbi admissions, std::set<std::string> const& runs) {
    if (runs.empty()) return std::size_t{0};
    MDB_cursor* cur = nullptr;
    if (int rc = mdb_cursor_open(txn, admissions, &cur); rc != 0) return lmdb_error(rc, "open admissions cursor");
    MDB_val key, val;
    std::size_t removed = 0;
    int rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST);
    for (; rc == 0; rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
        if (!runs.contains(std::string(as_view(val)))) continue;
        if (int drc = mdb_cursor_del(cur, 0); drc != 0) {
            mdb_cursor_close(cur);
            return lmdb_error(drc, "remove admission");
        }
        ++removed;
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND) return lmdb_error(rc, "read admissions");
    return removed;
}

result<void> copy_compacted(MDB_env* env, std::filesystem::path const& directory) {
    std::error_code ec;
    std::filesystem::create_directories(directory, ec);
    if (ec) return make_error("io_error", "cannot create " + directory.string() + ": " + ec.message());
    if (std::filesystem::exists(directory / "data.mdb", ec))
        return make_error("invalid_target", directory.string() + " already holds a journal; give an empty directory");
    if (int rc = mdb_env_copy2(env, directory.c_str(), MDB_CP_COMPACT); rc != 0)
        return lmdb_error(rc, "copy journal to " + directory.string());
    return {};
}

result<int> lock_journal(std::filesystem::path const& directory, bool exclusive) {
    auto path = directory / "airlock.lock";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) return make_error("io_error", "cannot open " + path.string() + ": " + std::strerror(errno));
    if (::flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
        int err = errno;
        ::close(fd);
        if (err == EWOULDBLOCK)
            return make_error("journal_busy", exclusive ? "the journal " + directory.string() +
                                                              " is open in another process (a running airlock?); stop it first"
                                                        : "the journal " + directory.string() + " is being compacted");
        return make_error("io_error", "cannot lock " + path.string() + ": " + std::strerror(err));
    }
    return fd;
}

void unlock_journal(int fd) noexcept {
    if (fd >= 0) ::close(fd);
}

}  // namespace airlock::store::detail
