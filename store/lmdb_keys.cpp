#include "store/lmdb_keys.hpp"

#include "core/sha256.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cerrno>

namespace airlock::store::detail {

using core::make_error;
using core::result;

core::error lmdb_error(int rc, std::string_view during) {
    std::string what = std::string(during) + ": " + mdb_strerror(rc);
    switch (rc) {
        case MDB_MAP_FULL:
            return core::make_error("map_full", what + " (the journal reached its configured map size; raise journal.map_size)");
        case MDB_CORRUPTED:
        case MDB_PAGE_NOTFOUND:
        case MDB_INVALID:
        case MDB_VERSION_MISMATCH:
            return core::make_error("corrupt", what);
        case ENOSPC:
        case EDQUOT: return core::make_error("disk_full", what + " (the journal's disk is full)");
        case EFBIG: return core::make_error("disk_full", what + " (the journal's file may not grow: a file size limit)");
        default: return core::make_error("io_error", what);
    }
}

std::string record_key(std::string_view run_id, std::uint64_t seq) {
    std::string k(run_id);
    k.push_back('\0');
    for (int i = 7; i >= 0; --i) k.push_back(static_cast<char>((seq >> (8 * i)) & 0xff));
    return k;
}

std::string effect_db_key(std::string_view run_id, std::string_view effect_key) {
    core::sha256_hasher h;
    h.update(run_id).update(std::string_view("\0", 1)).update(effect_key);
    auto d = h.finish();
    return std::string(reinterpret_cast<char const*>(d.data()), d.size());
}

std::string admission_db_key(std::string_view key) {
    auto d = core::sha256(key);
    return std::string(reinterpret_cast<char const*>(d.data()), d.size());
}

result<std::optional<core::pin>> read_pin(MDB_txn* txn, MDB_dbi dbi, std::string const& key) {
    MDB_val k = as_val(key), v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND) return std::optional<core::pin>{};
    if (rc != 0) return lmdb_error(rc, "read pin");
    boost::system::error_code ec;
    auto j = boost::json::parse(as_view(v), ec);
    auto const* o = j.if_object();
    auto const* pinned = o ? o->if_contains("pinned") : nullptr;
    if (ec || !pinned || !pinned->is_string()) return make_error("corrupt", "pin of " + key + " is unreadable");
    core::pin p{key, std::string(pinned->get_string()), std::nullopt, {}, {}};
    auto text = [&](char const* name) {
        auto const* v = o->if_contains(name);
        return v && v->is_string() ? std::optional<std::string>(v->get_string()) : std::nullopt;
    };
    p.pending = text("pending");
    p.pinned_definition = text("pinned_definition").value_or("");
    p.pending_definition = text("pending_definition").value_or("");
    return std::optional<core::pin>(std::move(p));
}

result<void> write_pin(MDB_txn* txn, MDB_dbi dbi, core::pin const& p) {
    boost::json::object o{{"pinned", p.pinned}};
    if (p.pending) o["pending"] = *p.pending;
    if (!p.pinned_definition.empty()) o["pinned_definition"] = p.pinned_definition;
    if (!p.pending_definition.empty()) o["pending_definition"] = p.pending_definition;
    auto text = boost::json::serialize(o);
    MDB_val k = as_val(p.key), v = as_val(text);
    if (int rc = mdb_put(txn, dbi, &k, &v, 0); rc != 0) return lmdb_error(rc, "write pin");
    return {};
}

result<void> check_pin_key(std::string const& key) {
    if (key.empty() || key.size() > 400) return make_error("invalid_key", "pin key must be 1 to 400 bytes");
    return {};
}


}  // namespace airlock::store::detail
