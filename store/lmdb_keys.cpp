#include "store/lmdb_keys.hpp"

#include "core/sha256.hpp"

#include <cerrno>

namespace airlock::store::detail {

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

}  // namespace airlock::store::detail
