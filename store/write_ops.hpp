#pragma once
// The LMDB journal's write queue: what a queued write is, and how its outcome reaches the coroutine
// that waits for it. Internal to store/ (lmdb_store.cpp is its one user).

#include "store/queued_op.hpp"

#include <lmdb.h>

namespace airlock::store::detail {

struct read_txn {
    MDB_txn* txn = nullptr;
    ~read_txn() {
        if (txn) mdb_txn_abort(txn);
    }
};

using write_op = basic_queued_op<MDB_txn*>;
template <class T>
using result_op = basic_result_op<T, MDB_txn*>;
template <class T, class Handler>
using typed_op = basic_posted_op<T, Handler, MDB_txn*>;

// An op committed by the coroutine that submitted it (see lmdb_store::impl::try_commit_inline):
// its outcome is read after the commit, with nothing to post.
template <class T>
struct inline_op final : result_op<T> {
    using basic_result_op<T, MDB_txn*>::basic_result_op;
    void complete() override {}
};

}  // namespace airlock::store::detail
