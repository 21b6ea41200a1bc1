#pragma once
// The PostgreSQL journal's tables, in the schema "airlock", and their versions. Each migration is
// applied once, in its own transaction, under an advisory lock so two replicas starting together
// do not both apply it. Internal to store/ (postgres_store and `airlock journal migrate-schema`).

#include "core/error.hpp"
#include "store/pg_connection.hpp"
#include "store/postgres_store.hpp"

namespace airlock::store::pg {

// The schema this binary reads and writes.
inline constexpr int schema_version = postgres_schema_version;

// The version the database holds: 0 when it has no airlock schema yet.
core::result<int> stored_schema_version(connection& conn);

// Applies every migration past the stored version, up to schema_version, and returns the version
// before. Refuses ("schema_too_new") a database whose schema is newer than this binary's.
core::result<int> migrate_schema(connection& conn);

// What a store checks at open: the schema is this binary's, or the database is empty and
// `create_if_empty` (then it is created). An older schema is refused with the command that
// upgrades it; a newer one with the advice to upgrade airlock.
core::result<void> check_schema(connection& conn, bool create_if_empty);

}  // namespace airlock::store::pg
