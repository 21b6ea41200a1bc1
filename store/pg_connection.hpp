#pragma once
// One libpq connection, used by one thread at a time: parameters and results travel in binary, so
// the bytes a store hands over are the bytes it reads back, with no text escaping on the way.
// Internal to store/ (the PostgreSQL journal is its user).

#include "core/error.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct pg_conn;
struct pg_result;

namespace airlock::store::pg {

// A statement parameter: raw bytes (bytea, or text already in the database's encoding) or a
// 64-bit integer; both are sent in binary.
struct param {
    enum class type { bytes, int8, boolean } kind = type::bytes;
    std::string bytes;
    static param of(std::string_view b) { return {type::bytes, std::string(b)}; }
    static param of(std::int64_t v);
    static param of(bool v) { return {type::boolean, std::string(1, v ? '\1' : '\0')}; }
};

// The rows a statement returned, every column in binary.
class rows {
public:
    explicit rows(pg_result* r) noexcept : r_(r) {}
    rows(rows&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
    rows& operator=(rows&& o) noexcept;
    ~rows();

    int size() const noexcept;
    bool is_null(int row, int col) const noexcept;
    std::string_view bytes(int row, int col) const noexcept;  // bytea and text columns
    std::int64_t int8(int row, int col) const noexcept;       // bigint columns
    bool boolean(int row, int col) const noexcept;

private:
    pg_result* r_ = nullptr;
};

struct connect_options {
    std::string conninfo;                                   // a libpq URI or key=value string
    // Each statement, on the server; a server that does not answer at all is given 5 s more, and
    // then its connection is closed.
    std::chrono::milliseconds statement_timeout{10'000};
    std::chrono::milliseconds connect_timeout{5'000};
    bool synchronous_commit = true;                         // durability::durable
};

class connection {
public:
    // Connects and sets the session's timeouts and synchronous_commit. "io_error" naming the
    // server's words when it cannot; the password of a URI never appears in a message.
    static core::result<std::unique_ptr<connection>> open(connect_options const& options);
    ~connection();
    connection(connection const&) = delete;
    connection& operator=(connection const&) = delete;

    // False once the server has gone away: the connection is to be replaced.
    bool healthy() const noexcept;
    // True inside a transaction that a failed statement aborted: only a rollback is taken now.
    bool in_failed_transaction() const noexcept;
    // Runs one statement. An error's code is "io_error" when the connection broke or a statement
    // timed out, else "database_error"; sqlstate() says which, for retry decisions.
    core::result<rows> exec(std::string_view sql, std::vector<param> const& params = {});
    // Runs statements separated by ';' with no parameters (schema changes, session settings).
    core::result<void> script(std::string_view sql);
    // True once a statement got no answer in time and the connection was closed for it.
    bool timed_out() const noexcept { return timed_out_; }
    // The SQLSTATE of the last failed statement ("" after a success, or a broken connection).
    std::string const& sqlstate() const noexcept { return sqlstate_; }

private:
    explicit connection(pg_conn* c) noexcept : conn_(c) {}
    core::result<rows> finish(pg_result* r);  // r's status as a result; takes r
    core::result<rows> await_result();        // what was sent, flushed and answered, by answer_timeout_
    pg_conn* conn_ = nullptr;
    std::chrono::milliseconds answer_timeout_{15'000};
    bool timed_out_ = false;  // statement_timeout and 5 s for the network
    std::string sqlstate_;
};

// SQLSTATEs after which the same transaction, run again, may well succeed: serialization
// failure, deadlock, and a unique key another writer took first.
bool is_retryable(std::string_view sqlstate) noexcept;

// conninfo with any password removed (postgres://u:secret@h → postgres://u:***@h; password=… → ***),
// for messages and logs.
std::string redact_conninfo(std::string_view conninfo);

}  // namespace airlock::store::pg
