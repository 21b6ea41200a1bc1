#include "store/lmdb_index_upgrade.hpp"

#include "core/journal_rules.hpp"
#include "store/lmdb_keys.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace airlock::store::detail {

namespace {

// The version of the run index's entries. 2: every entry has its kind.
constexpr std::string_view index_key = "run_index";
constexpr std::string_view index_version = "2";

core::result<bool> index_is_current(MDB_txn* txn, MDB_dbi meta) {
    MDB_val k = as_val(index_key), v;
    int rc = mdb_get(txn, meta, &k, &v);
    if (rc == MDB_NOTFOUND) return false;
    if (rc != 0) return lmdb_error(rc, "read the journal's meta table");
    return as_view(v) == index_version;
}

// The entry `entry` of `run` as it is today: its kind and owner read from the run's admission.
core::result<core::run_summary> upgraded(MDB_txn* txn, MDB_dbi records, std::string const& run, core::run_summary entry) {
    auto first_key = record_key(run, 1);
    MDB_val k = as_val(first_key), v;
    int rc = mdb_get(txn, records, &k, &v);
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb_error(rc, "read the first record of run " + run);
    // A run whose admission is gone or unreadable stays listed; `journal verify` names what is wrong.
    entry.kind = "session";
    if (rc == 0) {
        if (auto first = core::parse_record(as_view(v)); first && first->kind == core::record_kind::run_admitted) {
            entry.kind = core::run_kind_of(first->body);
            entry.principal = core::run_owner_of(first->body);
        }
    }
    return entry;
}

}  // namespace

core::result<std::size_t> upgrade_run_index(MDB_txn* txn, MDB_dbi runs, MDB_dbi records, MDB_dbi meta) {
    auto current = index_is_current(txn, meta);
    if (!current) return current.error();
    if (*current) return std::size_t{0};
    // Gathered first: an entry is not rewritten under the cursor that reads it.
    std::vector<core::run_summary> stale;
    {
        MDB_cursor* cur = nullptr;
        if (int rc = mdb_cursor_open(txn, runs, &cur); rc != 0) return lmdb_error(rc, "open cursor");
        std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> guard(cur, mdb_cursor_close);
        MDB_val key, val;
        int rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST);
        for (; rc == 0; rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
            boost::system::error_code ec;
            auto j = boost::json::parse(as_view(val), ec);
            if (ec) return core::make_error("corrupt", "run index entry of " + std::string(as_view(key)) + " is not JSON");
            auto s = core::run_summary_from_json(j);
            if (!s) return s.error();
            if (s->kind.empty()) stale.push_back(std::move(*s));
        }
        if (rc != MDB_NOTFOUND) return lmdb_error(rc, "read run index");
    }
    for (auto& entry : stale) {
        auto run = entry.run_id;
        auto now = upgraded(txn, records, run, std::move(entry));
        if (!now) return now.error();
        auto text = boost::json::serialize(core::to_json(*now));
        MDB_val k = as_val(run), v = as_val(text);
        if (int rc = mdb_put(txn, runs, &k, &v, 0); rc != 0) return lmdb_error(rc, "write run index");
    }
    MDB_val k = as_val(index_key), v = as_val(index_version);
    if (int rc = mdb_put(txn, meta, &k, &v, 0); rc != 0) return lmdb_error(rc, "write the journal's meta table");
    return stale.size();
}

}  // namespace airlock::store::detail
