#include "store/pg_connection.hpp"

#include <libpq-fe.h>

#include <boost/endian/conversion.hpp>

#include <poll.h>

#include <cerrno>
#include <cstring>
#include <regex>

namespace airlock::store::pg {

param param::of(std::int64_t v) {
    auto be = boost::endian::native_to_big(v);
    std::string b(sizeof be, '\0');
    std::memcpy(b.data(), &be, sizeof be);
    return {type::int8, std::move(b)};
}

rows& rows::operator=(rows&& o) noexcept {
    if (this != &o) {
        if (r_) PQclear(r_);
        r_ = o.r_;
        o.r_ = nullptr;
    }
    return *this;
}

rows::~rows() {
    if (r_) PQclear(r_);
}

int rows::size() const noexcept { return r_ ? PQntuples(r_) : 0; }

bool rows::is_null(int row, int col) const noexcept { return PQgetisnull(r_, row, col) != 0; }

std::string_view rows::bytes(int row, int col) const noexcept {
    return {PQgetvalue(r_, row, col), static_cast<std::size_t>(PQgetlength(r_, row, col))};
}

std::int64_t rows::int8(int row, int col) const noexcept {
    std::int64_t be = 0;
    if (PQgetlength(r_, row, col) == sizeof be) std::memcpy(&be, PQgetvalue(r_, row, col), sizeof be);
    return boost::endian::big_to_native(be);
}

bool rows::boolean(int row, int col) const noexcept {
    return PQgetlength(r_, row, col) == 1 && *PQgetvalue(r_, row, col) != 0;
}

std::string redact_conninfo(std::string_view conninfo) {
    std::string s(conninfo);
    // URI form: scheme://user:password@host
    static std::regex const uri_password(R"(^(postgres(?:ql)?://[^:/@]*:)[^@]*@)");
    s = std::regex_replace(s, uri_password, "$1***@");
    // key=value form, and a password given as a URI query parameter
    static std::regex const kv_password(R"((password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*))");
    return std::regex_replace(s, kv_password, "$1***");
}

bool is_retryable(std::string_view sqlstate) noexcept {
    return sqlstate == "40001" || sqlstate == "40P01" || sqlstate == "23505";
}

namespace {

std::string trimmed(char const* message) {
    std::string m = message ? message : "";
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    return m;
}

core::error unreachable(std::string const& why) {
    return core::make_error("io_error", "the journal database is unreachable: " + why);
}

}  // namespace

core::result<std::unique_ptr<connection>> connection::open(connect_options const& options) {
    // Timeouts are set per session (not in the conninfo) so an operator's own "options" stay theirs.
    // keepalives notice a server that vanished without closing (a host gone, a partition) within
    // about 20 s instead of the kernel's two hours.
    auto timeout_s = std::to_string(std::max<long long>(1, options.connect_timeout.count() / 1000));
    char const* keys[] = {"dbname", "connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                          "keepalives_count", "application_name", nullptr};
    char const* values[] = {options.conninfo.c_str(), timeout_s.c_str(), "1", "10", "5", "2", "airlock", nullptr};
    // expand_dbname = 1: the first dbname is a whole conninfo, whose own settings win over these.
    PGconn* c = PQconnectdbParams(keys, values, 1);
    if (!c) return unreachable("out of memory");
    if (PQstatus(c) != CONNECTION_OK) {
        auto why = trimmed(PQerrorMessage(c));
        PQfinish(c);
        return unreachable(why);
    }
    // The server's notices (a WARNING as it shuts down) would go to stderr; the error that follows says it all.
    PQsetNoticeProcessor(c, [](void*, char const*) {}, nullptr);
    // Non-blocking: a large statement to a server that stopped reading must not block the writer
    // in send(); await_result flushes it with a deadline.
    PQsetnonblocking(c, 1);
    std::unique_ptr<connection> conn(new connection(c));
    conn->answer_timeout_ = options.statement_timeout + std::chrono::seconds(5);
    std::string setup = "SET statement_timeout = " + std::to_string(options.statement_timeout.count()) +
                        "; SET lock_timeout = " + std::to_string(options.statement_timeout.count()) +
                        "; SET synchronous_commit = " + (options.synchronous_commit ? "on" : "off") +
                        "; SET client_min_messages = warning";
    if (auto ok = conn->script(setup); !ok) return ok.error();
    return conn;
}

connection::~connection() {
    if (conn_) PQfinish(conn_);
}

bool connection::healthy() const noexcept { return conn_ && PQstatus(conn_) == CONNECTION_OK; }

bool connection::in_failed_transaction() const noexcept {
    return conn_ && PQtransactionStatus(conn_) == PQTRANS_INERROR;
}

core::result<rows> connection::exec(std::string_view sql, std::vector<param> const& params) {
    sqlstate_.clear();
    if (!healthy()) return unreachable("the connection was lost");
    std::vector<char const*> values;
    std::vector<int> lengths, formats;
    std::vector<Oid> types;
    for (auto const& p : params) {
        values.push_back(p.bytes.data());
        lengths.push_back(static_cast<int>(p.bytes.size()));
        formats.push_back(1);
        // bytea 17, int8 20, bool 16: the server converts nothing, so no encoding check touches the bytes.
        types.push_back(p.kind == param::type::int8 ? 20 : p.kind == param::type::boolean ? 16 : 17);
    }
    std::string text(sql);
    if (!PQsendQueryParams(conn_, text.c_str(), static_cast<int>(params.size()), types.data(), values.data(),
                           lengths.data(), formats.data(), 1))
        return unreachable(trimmed(PQerrorMessage(conn_)));
    return await_result();
}

core::result<void> connection::script(std::string_view sql) {
    sqlstate_.clear();
    if (!healthy()) return unreachable("the connection was lost");
    std::string text(sql);
    if (!PQsendQuery(conn_, text.c_str())) return unreachable(trimmed(PQerrorMessage(conn_)));
    auto done = await_result();
    if (!done) return done.error();
    return {};
}

// The server's statement_timeout ends a slow statement, but not a server that does not answer at
// all (stopped, or a network that drops packets without a reset): the socket is written and read
// here with a deadline of our own, and past it the connection is closed, so a hung database fails
// the operation instead of holding the writer, and every append queued behind it, for ever.
core::result<rows> connection::await_result() {
    auto deadline = std::chrono::steady_clock::now() + answer_timeout_;
    auto wait_for = [&](short events) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        pollfd pfd{PQsocket(conn_), events, 0};
        int rc = ::poll(&pfd, 1, static_cast<int>(left.count()));
        return rc > 0 || (rc < 0 && errno == EINTR);
    };
    auto give_up = [&]() -> core::result<rows> {
        PQfinish(conn_);
        conn_ = nullptr;
        timed_out_ = true;
        return core::make_error("io_error", "the journal database did not answer within " +
                                                std::to_string(answer_timeout_.count()) + " ms; its connection is closed");
    };
    for (int flushed; (flushed = PQflush(conn_)) != 0;) {
        if (flushed < 0) return unreachable(trimmed(PQerrorMessage(conn_)));
        if (!wait_for(POLLIN | POLLOUT)) return give_up();
        if (!PQconsumeInput(conn_)) return unreachable(trimmed(PQerrorMessage(conn_)));
    }
    // A script gives a result per statement: the first failure is the answer, else the last result.
    PGresult* answer = nullptr;
    auto failed = [](PGresult* r) {
        auto st = PQresultStatus(r);
        return st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK;
    };
    for (;;) {
        while (PQisBusy(conn_)) {
            if (!wait_for(POLLIN)) {
                if (answer) PQclear(answer);
                return give_up();
            }
            if (!PQconsumeInput(conn_)) break;  // the connection broke: PQgetResult says so
        }
        PGresult* r = PQgetResult(conn_);
        if (!r) break;
        if (answer && failed(answer)) {
            PQclear(r);
            continue;
        }
        if (answer) PQclear(answer);
        answer = r;
    }
    return finish(answer);
}

core::result<rows> connection::finish(pg_result* r) {
    rows out(r);
    auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return out;
    if (!healthy()) return unreachable(trimmed(conn_ ? PQerrorMessage(conn_) : "the connection was lost"));
    char const* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    sqlstate_ = state ? state : "";
    auto why = trimmed(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
    // 57014: statement_timeout; 55P03: lock_timeout. The database is there but not answering in time.
    if (sqlstate_ == "57014" || sqlstate_ == "55P03")
        return core::make_error("io_error", "the journal database did not answer in time: " + why);
    // The database's state, not the operation, refuses: its disk is full (53100), it is out of
    // memory or connections (53…), or it takes no writes (25006: a standby, or a primary turned
    // read-only after a failover). Such a failure is the journal's fault, as a full LMDB disk is.
    if (sqlstate_ == "53100") return core::make_error("disk_full", "the journal database's disk is full: " + why);
    if (sqlstate_.starts_with("53"))
        return core::make_error("io_error", "the journal database is out of resources: " + why);
    if (sqlstate_ == "25006")
        return core::make_error("io_error", "the journal database takes no writes (a standby, or read-only): " + why);
    return core::make_error("database_error", why);
}

}  // namespace airlock::store::pg
