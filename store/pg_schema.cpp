#include "store/pg_schema.hpp"

#include <array>
#include <string_view>

namespace airlock::store::pg {

namespace {

// Every key column is bytea, not text: run ids, effect keys and idempotency keys are caller-chosen
// bytes (any but NUL), and a text column would refuse what is not valid UTF-8 and order by a
// collation; bytea compares byte by byte, the order every other store lists runs in.
// records.bytes holds a record exactly as it was hashed and as the LMDB journal keeps it
// (core::serialize_record), so verify and export read the same bytes on either store.
constexpr std::string_view migration_1 = R"sql(
CREATE SCHEMA IF NOT EXISTS airlock;
CREATE TABLE airlock.schema_version (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version integer NOT NULL
);
CREATE TABLE airlock.runs (
    run_id bytea PRIMARY KEY,
    status bytea NOT NULL,
    agent bytea NOT NULL,
    kind bytea NOT NULL,
    principal bytea NOT NULL,
    admitted_at bytea NOT NULL,
    sealed boolean NOT NULL,
    summary bytea NOT NULL
);
CREATE INDEX runs_by_status ON airlock.runs (status, run_id);
CREATE TABLE airlock.records (
    run_id bytea NOT NULL,
    seq bigint NOT NULL CHECK (seq > 0),
    kind text NOT NULL,
    bytes bytea NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE airlock.effects (
    run_id bytea NOT NULL,
    effect_key bytea NOT NULL,
    PRIMARY KEY (run_id, effect_key)
);
CREATE TABLE airlock.admissions (
    idempotency_key bytea PRIMARY KEY,
    run_id bytea NOT NULL
);
CREATE TABLE airlock.pins (
    key bytea PRIMARY KEY,
    pinned bytea NOT NULL,
    pending bytea,
    pinned_definition bytea NOT NULL,
    pending_definition bytea NOT NULL
);
)sql";

constexpr std::array<std::string_view, schema_version> migrations = {migration_1};

}  // namespace

core::result<int> stored_schema_version(connection& conn) {
    auto present = conn.exec("SELECT to_regclass('airlock.schema_version') IS NOT NULL");
    if (!present) return present.error();
    if (!present->boolean(0, 0)) return 0;
    auto v = conn.exec("SELECT version::bigint FROM airlock.schema_version");
    if (!v) return v.error();
    if (v->size() != 1) return core::make_error("corrupt", "airlock.schema_version holds no version");
    return static_cast<int>(v->int8(0, 0));
}

core::result<int> migrate_schema(connection& conn) {
    if (auto begun = conn.script("BEGIN; SELECT pg_advisory_xact_lock(8785)"); !begun) return begun.error();
    auto rollback = [&](core::error e) -> core::result<int> {
        (void)conn.script("ROLLBACK");
        return e;
    };
    auto before = stored_schema_version(conn);
    if (!before) return rollback(before.error());
    if (*before > schema_version)
        return rollback(core::make_error("schema_too_new", "the journal database has schema version " +
                                                               std::to_string(*before) + ", newer than this airlock's " +
                                                               std::to_string(schema_version) + ": upgrade airlock"));
    for (int v = *before; v < schema_version; ++v) {
        if (auto done = conn.script(migrations[static_cast<std::size_t>(v)]); !done) return rollback(done.error());
    }
    if (*before < schema_version) {
        auto set = conn.exec(
            "INSERT INTO airlock.schema_version (version) VALUES ($1::bigint::integer) "
            "ON CONFLICT (only_row) DO UPDATE SET version = EXCLUDED.version",
            {param::of(std::int64_t{schema_version})});
        if (!set) return rollback(set.error());
    }
    if (auto committed = conn.script("COMMIT"); !committed) return committed.error();
    return *before;
}

core::result<void> check_schema(connection& conn, bool create_if_empty) {
    auto version = stored_schema_version(conn);
    if (!version) return version.error();
    if (*version == schema_version) return {};
    if (*version == 0 && create_if_empty) {
        auto migrated = migrate_schema(conn);
        if (!migrated) return migrated.error();
        return {};
    }
    if (*version > schema_version)
        return core::make_error("schema_too_new", "the journal database has schema version " + std::to_string(*version) +
                                                      ", newer than this airlock's " + std::to_string(schema_version) +
                                                      ": upgrade airlock");
    if (*version == 0)
        return core::make_error("schema_missing",
                                "the journal database has no airlock schema: run `airlock journal migrate-schema`");
    return core::make_error("schema_too_old", "the journal database has schema version " + std::to_string(*version) +
                                                  ", older than this airlock's " + std::to_string(schema_version) +
                                                  ": run `airlock journal migrate-schema`");
}

}  // namespace airlock::store::pg
