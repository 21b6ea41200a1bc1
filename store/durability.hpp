#pragma once
// How soon an append is durable, for every journal store that has a disk under it.

namespace airlock::store {

enum class durability {
    // LMDB: every append is fsynced (data, then meta page) before it completes. PostgreSQL:
    // synchronous_commit on, an append completes once its transaction's WAL is flushed.
    durable,
    // LMDB: MDB_NOSYNC, appends complete once in the OS page cache, synced every sync_interval; a
    // process crash loses nothing, a kernel crash or power loss loses at most the last interval.
    // PostgreSQL: synchronous_commit off, the server flushes WAL within three wal_writer_delay; a
    // server crash loses at most those commits and never leaves a chain half written.
    fast,
};

}  // namespace airlock::store
