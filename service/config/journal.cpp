#include "service/config/sections.hpp"

#include "service/config/reader.hpp"

namespace airlock::service::config_detail {

namespace {

void read_session_runs(reader& r, YAML::Node const& n, session_run_limits& limits) {
    std::string const p = "journal.session_runs";
    if (!r.mapping(n, p, {"max_age", "max_calls"})) return;
    if (auto const v = n["max_age"]) {
        if (auto d = r.duration(v, p + ".max_age", std::chrono::seconds(1))) limits.max_age = *d;
    }
    if (auto const v = n["max_calls"]) {
        if (auto m = r.count(v, p + ".max_calls", 1, 10'000'000)) limits.max_calls = *m;
    }
}

// journal.postgres: {url, readers, statement_timeout}. The URL may carry a password, so it is read
// as a secret ({env: NAME}, {file: PATH} or written out) and never shown.
void read_postgres(reader& r, YAML::Node const& n, config& c) {
    std::string const p = "journal.postgres";
    if (!r.mapping(n, p, {"url", "readers", "statement_timeout"})) return;
    store::postgres_options o;
    if (auto const v = n["url"]) {
        if (auto url = read_secret_value(r, v, p + ".url")) o.conninfo = *url;
    } else {
        r.fail("missing_field", p + ".url: the database's URL is needed (postgresql://USER@HOST:PORT/DATABASE)");
    }
    if (auto const v = n["readers"]) {
        if (auto k = r.count(v, p + ".readers", 1, 64)) o.readers = *k;
    }
    if (auto const v = n["statement_timeout"]) {
        if (auto d = r.duration(v, p + ".statement_timeout", std::chrono::milliseconds(100))) o.statement_timeout = *d;
    }
    c.journal_postgres = std::move(o);
}

}  // namespace

void read_journal(reader& r, YAML::Node const& n, config& c) {
    std::string const p = "journal";
    auto& j = c.journal;
    if (!r.mapping(n, p, {"dir", "map_size", "durability", "sync_interval", "max_batch", "retention", "session_runs",
                          "postgres"}))
        return;
    if (auto const v = n["postgres"]) {
        read_postgres(r, v, c);
        // What only an LMDB journal has is refused beside it, by name, rather than ignored.
        for (char const* lmdb_only : {"dir", "map_size", "sync_interval"})
            if (n[lmdb_only])
                r.fail("conflicting_fields", std::string("journal.") + lmdb_only +
                                                 " is an LMDB setting; journal.postgres keeps the journal in PostgreSQL");
        if (n["retention"])
            r.fail("conflicting_fields", "journal.retention is not supported with journal.postgres yet; a journal "
                                         "that must be pruned by age stays in LMDB for now");
    }
    if (auto const v = n["retention"]) {
        if (auto d = r.duration(v, p + ".retention", std::chrono::seconds(1))) c.journal_retention = *d;
    }
    if (auto const v = n["session_runs"]) read_session_runs(r, v, c.session_runs);
    if (auto const v = n["dir"]) {
        if (auto d = r.path(v, p + ".dir")) {
            std::error_code ec;
            if (fs::exists(*d, ec) && !fs::is_directory(*d, ec))
                r.fail("invalid_value", p + ".dir: " + show_path(*d) + " exists and is not a directory");
            else
                j.directory = *d;
        }
    }
    if (auto const v = n["map_size"]) {
        if (auto s = r.size(v, p + ".map_size", std::size_t{1} << 20)) j.map_size = *s;
    }
    if (auto const v = n["durability"]) {
        if (auto d = r.choice(v, p + ".durability", {"durable", "fast"}))
            j.mode = *d == "durable" ? store::durability::durable : store::durability::fast;
    }
    if (auto const v = n["sync_interval"]) {
        if (auto d = r.duration(v, p + ".sync_interval", milliseconds(1))) j.sync_interval = *d;
        if (j.mode == store::durability::durable)
            r.warn("journal.sync_interval has no effect with durability: durable (every append is synced)");
    }
    if (auto const v = n["max_batch"]) {
        if (auto b = r.count(v, p + ".max_batch", 1, 1'000'000)) j.max_batch = *b;
    }
    if (c.journal_postgres) {
        c.journal_postgres->mode = j.mode;
        c.journal_postgres->max_batch = j.max_batch;
    }
}

}  // namespace airlock::service::config_detail
