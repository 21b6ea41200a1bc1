#include "store/pg_journal.hpp"

#include "core/journal_rules.hpp"
#include "core/rfc3339.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <chrono>

namespace airlock::store::pg {

using core::make_error;
using core::result;

namespace {

result<core::run_summary> summary_from(std::string_view bytes, std::string const& run_id) {
    boost::system::error_code ec;
    auto v = boost::json::parse(bytes, ec);
    if (ec) return make_error("corrupt", "run index entry of " + run_id + " is not JSON");
    auto s = core::run_summary_from_json(v);
    if (!s) return make_error("corrupt", "run " + run_id + ": " + s.error().message);
    return s;
}

// One INSERT for the records of an append, or one per thousand records: a round trip per
// statement is what an append costs, and a statement takes at most 65,535 parameters (a copied run
// may hold tens of thousands of records).
constexpr std::size_t rows_per_insert = 1000;

result<void> insert_records(connection& conn, std::string const& run_id, std::vector<core::record> const& records) {
    for (std::size_t from = 0; from < records.size(); from += rows_per_insert) {
        std::string sql = "INSERT INTO airlock.records (run_id, seq, kind, bytes) VALUES ";
        std::vector<param> params{param::of(run_id)};
        for (std::size_t i = from; i < std::min(records.size(), from + rows_per_insert); ++i) {
            auto n = std::to_string(params.size() + 1);
            auto k = std::to_string(params.size() + 2);
            auto b = std::to_string(params.size() + 3);
            sql += (i > from ? ", ($1, $" : "($1, $") + n + ", convert_from($" + k + ", 'UTF8'), $" + b + ")";
            params.push_back(param::of(static_cast<std::int64_t>(records[i].seq)));
            params.push_back(param::of(core::to_string(records[i].kind)));
            params.push_back(param::of(core::serialize_record(records[i])));
        }
        if (auto done = conn.exec(sql, params); !done) return done.error();
    }
    return {};
}

result<void> insert_effects(connection& conn, std::string const& run_id, std::vector<std::string> const& keys) {
    for (std::size_t from = 0; from < keys.size(); from += rows_per_insert) {
        std::string sql = "INSERT INTO airlock.effects (run_id, effect_key) VALUES ";
        std::vector<param> params{param::of(run_id)};
        for (std::size_t i = from; i < std::min(keys.size(), from + rows_per_insert); ++i) {
            sql += (i > from ? ", ($1, $" : "($1, $") + std::to_string(params.size() + 1) + ")";
            params.push_back(param::of(keys[i]));
        }
        if (auto done = conn.exec(sql, params); !done) return done.error();
    }
    return {};
}

// The run's row, upserted: $1 to $8 are summary_params.
constexpr std::string_view upsert_run =
    "INSERT INTO airlock.runs (run_id, status, agent, kind, principal, admitted_at, sealed, summary) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run_id) DO UPDATE SET status = EXCLUDED.status, "
    "sealed = EXCLUDED.sealed, summary = EXCLUDED.summary";

std::vector<param> summary_params(core::run_summary const& s) {
    return {param::of(s.run_id),    param::of(s.status),      param::of(s.agent),  param::of(s.kind),
            param::of(s.principal), param::of(s.admitted_at), param::of(s.sealed),
            param::of(boost::json::serialize(core::to_json(s)))};
}

result<void> put_summary(connection& conn, core::run_summary const& s) {
    auto done = conn.exec(upsert_run, summary_params(s));
    if (!done) return done.error();
    return {};
}

result<std::optional<core::pin>> get_pin(connection& conn, std::string const& key) {
    auto got = conn.exec(
        "SELECT pinned, pending, pinned_definition, pending_definition FROM airlock.pins WHERE key = $1 FOR UPDATE",
        {param::of(key)});
    if (!got) return got.error();
    if (got->size() == 0) return std::optional<core::pin>();
    core::pin p{key, std::string(got->bytes(0, 0)), std::nullopt, std::string(got->bytes(0, 2)),
                std::string(got->bytes(0, 3))};
    if (!got->is_null(0, 1)) p.pending = std::string(got->bytes(0, 1));
    return std::optional<core::pin>(std::move(p));
}

result<void> put_pin(connection& conn, core::pin const& p) {
    // A NULL pending is written by leaving it out of the VALUES: binary parameters have no NULL here.
    std::string sql = p.pending ? "INSERT INTO airlock.pins (key, pinned, pinned_definition, pending_definition, pending) "
                                  "VALUES ($1, $2, $3, $4, $5)"
                                : "INSERT INTO airlock.pins (key, pinned, pinned_definition, pending_definition) "
                                  "VALUES ($1, $2, $3, $4)";
    sql += " ON CONFLICT (key) DO UPDATE SET pinned = EXCLUDED.pinned, pending = EXCLUDED.pending, "
           "pinned_definition = EXCLUDED.pinned_definition, pending_definition = EXCLUDED.pending_definition";
    std::vector<param> params{param::of(p.key), param::of(p.pinned), param::of(p.pinned_definition),
                              param::of(p.pending_definition)};
    if (p.pending) params.push_back(param::of(*p.pending));
    auto done = conn.exec(sql, params);
    if (!done) return done.error();
    return {};
}

}  // namespace

result<std::optional<core::run_summary>> head(connection& conn, std::string const& run_id, bool for_update) {
    auto got = conn.exec(for_update ? "SELECT summary FROM airlock.runs WHERE run_id = $1 FOR UPDATE"
                                    : "SELECT summary FROM airlock.runs WHERE run_id = $1",
                         {param::of(run_id)});
    if (!got) return got.error();
    if (got->size() == 0) return std::optional<core::run_summary>();
    auto s = summary_from(got->bytes(0, 0), run_id);
    if (!s) return s.error();
    return std::optional<core::run_summary>(std::move(*s));
}

namespace {

// The rows of an append in one statement, one round trip: its records and effects inserted by
// data-modifying CTEs, its run's row upserted by the statement itself. An append too large for
// one statement's parameters is written a thousand rows at a time instead.
result<void> write_plan(connection& conn, core::append_plan const& plan) {
    auto const& run_id = plan.summary.run_id;
    if (plan.records.size() + plan.new_effects.size() > rows_per_insert) {
        if (auto w = insert_records(conn, run_id, plan.records); !w) return w.error();
        if (auto w = insert_effects(conn, run_id, plan.new_effects); !w) return w.error();
        return put_summary(conn, plan.summary);
    }
    auto params = summary_params(plan.summary);
    auto next = [&](param p) {
        params.push_back(std::move(p));
        return "$" + std::to_string(params.size());
    };
    std::string sql = "WITH rec AS (INSERT INTO airlock.records (run_id, seq, kind, bytes) VALUES ";
    for (std::size_t i = 0; i < plan.records.size(); ++i) {
        auto const& r = plan.records[i];
        sql += i ? ", ($1, " : "($1, ";
        sql += next(param::of(static_cast<std::int64_t>(r.seq))) + ", convert_from(" + next(param::of(core::to_string(r.kind))) +
               ", 'UTF8'), " + next(param::of(core::serialize_record(r))) + ")";
    }
    sql += ")";
    if (!plan.new_effects.empty()) {
        sql += ", eff AS (INSERT INTO airlock.effects (run_id, effect_key) VALUES ";
        for (std::size_t i = 0; i < plan.new_effects.size(); ++i) sql += (i ? ", ($1, " : "($1, ") + next(param::of(plan.new_effects[i])) + ")";
        sql += ")";
    }
    sql += " ";
    sql += upsert_run;
    auto done = conn.exec(sql, params);
    if (!done) return done.error();
    return {};
}

}  // namespace

result<std::vector<core::record>> append(connection& conn, std::string const& run_id,
                                         std::vector<core::new_record> const& batch, heads const* cache) {
    // Without a cache the run's row is locked for the rest of the transaction, so two replicas
    // appending to one run take turns. With one, a head another replica moved on meanwhile is
    // caught by the records' primary key (its next seq is taken), and the writer runs the op again
    // without the cache. A run admitted by two at once meets the runs' primary key, the same way.
    auto current = cache ? cache->current(run_id) : head(conn, run_id, true);
    if (!current) return current.error();
    std::optional<core::error> lookup_failed;
    auto seen = [&](std::string_view effect_key) {
        if (!*current || lookup_failed || (cache && cache->optimistic)) return false;
        auto got = conn.exec("SELECT 1 FROM airlock.effects WHERE run_id = $1 AND effect_key = $2",
                             {param::of(run_id), param::of(effect_key)});
        if (!got) {
            lookup_failed = got.error();
            return false;
        }
        return got->size() > 0;
    };
    auto plan = core::plan_append(run_id, *current, batch, seen);
    if (lookup_failed) return *lookup_failed;
    if (!plan) return plan.error();
    if (auto w = write_plan(conn, *plan); !w) return w.error();
    if (cache) cache->wrote(plan->summary);
    return std::move(plan->records);
}

result<core::record> seal(connection& conn, std::string const& run_id, std::string const& status,
                          std::string const& reason, heads const* cache) {
    auto current = cache ? cache->current(run_id) : head(conn, run_id, true);
    if (!current) return current.error();
    if (!*current) return make_error(core::errc::unknown_run, "run '" + run_id + "' is not in the journal");
    auto sealing = core::make_seal(**current, status, reason, core::rfc3339(std::chrono::system_clock::now()));
    if (!sealing) return sealing.error();
    auto written = append(conn, run_id, core::one_record(std::move(*sealing)), cache);
    if (!written) return written.error();
    return std::move(written->front());
}

result<core::admission> claim_admission(connection& conn, std::string const& key, std::string const& proposed) {
    auto claimed = conn.exec(
        "INSERT INTO airlock.admissions (idempotency_key, run_id) VALUES ($1, $2) "
        "ON CONFLICT (idempotency_key) DO NOTHING RETURNING run_id",
        {param::of(key), param::of(proposed)});
    if (!claimed) return claimed.error();
    if (claimed->size() == 1) return core::admission{proposed, true};
    auto held = conn.exec("SELECT run_id FROM airlock.admissions WHERE idempotency_key = $1", {param::of(key)});
    if (!held) return held.error();
    if (held->size() != 1) return make_error("database_error", "an idempotency key's claim vanished while it was read");
    return core::admission{std::string(held->bytes(0, 0)), false};
}

result<core::pin_verdict> check_pin(connection& conn, std::string const& key, std::string const& digest,
                                    std::string const& definition) {
    auto current = get_pin(conn, key);
    if (!current) return current.error();
    auto [next, verdict] = core::apply_pin_check(std::move(*current), key, digest, definition);
    if (auto w = put_pin(conn, next); !w) return w.error();
    return verdict;
}

result<core::pin> accept_pin(connection& conn, std::string const& key, std::optional<std::string> const& expected) {
    auto current = get_pin(conn, key);
    if (!current) return current.error();
    auto next = core::apply_pin_accept(std::move(*current), key, expected);
    if (!next) return next.error();
    if (auto w = put_pin(conn, *next); !w) return w.error();
    return next;
}

result<std::vector<core::record>> read(connection& conn, std::string const& run_id, std::uint64_t from_seq) {
    auto got = conn.exec("SELECT bytes FROM airlock.records WHERE run_id = $1 AND seq >= $2 ORDER BY seq",
                         {param::of(run_id), param::of(static_cast<std::int64_t>(std::max<std::uint64_t>(from_seq, 1)))});
    if (!got) return got.error();
    std::vector<core::record> out;
    out.reserve(static_cast<std::size_t>(got->size()));
    for (int i = 0; i < got->size(); ++i) {
        auto r = core::parse_record(got->bytes(i, 0));
        if (!r) return make_error("corrupt", "a record of run " + run_id + " cannot be read: " + r.error().message);
        out.push_back(std::move(*r));
    }
    return out;
}

result<core::run_page> runs(connection& conn, core::run_filter const& filter) {
    core::run_page page;
    if (filter.principal && filter.principal->empty()) return page;  // "" owns nothing (core::matches)
    // A limit of 0 reads as 1, as in every store: a caller paging on it would never finish.
    std::size_t const limit = filter.limit == 0 ? 1 : filter.limit;
    std::string sql = "SELECT summary FROM airlock.runs WHERE true";
    std::vector<param> params;
    auto where = [&](char const* condition, std::string const& value) {
        params.push_back(param::of(value));
        sql += std::string(" AND ") + condition + " $" + std::to_string(params.size());
    };
    if (filter.cursor) where("run_id >", *filter.cursor);
    if (filter.status) where("status =", *filter.status);
    if (filter.agent) where("agent =", *filter.agent);
    if (filter.since) where("admitted_at >=", *filter.since);
    if (filter.principal) where("principal =", *filter.principal);
    if (filter.kind) where("kind =", *filter.kind);
    params.push_back(param::of(static_cast<std::int64_t>(std::min<std::size_t>(limit, 100'000) + 1)));
    sql += " ORDER BY run_id LIMIT $" + std::to_string(params.size());
    auto got = conn.exec(sql, params);
    if (!got) return got.error();
    for (int i = 0; i < got->size(); ++i) {
        if (page.runs.size() == limit) {
            // One more match exists past the page: only then is there a next page to point at.
            page.next_cursor = page.runs.back().run_id;
            break;
        }
        auto s = summary_from(got->bytes(i, 0), "listed");
        if (!s) return s.error();
        page.runs.push_back(std::move(*s));
    }
    return page;
}

result<std::vector<core::pin>> pins(connection& conn) {
    auto got = conn.exec("SELECT key, pinned, pending, pinned_definition, pending_definition FROM airlock.pins ORDER BY key");
    if (!got) return got.error();
    std::vector<core::pin> out;
    for (int i = 0; i < got->size(); ++i) {
        core::pin p{std::string(got->bytes(i, 0)), std::string(got->bytes(i, 1)), std::nullopt,
                    std::string(got->bytes(i, 3)), std::string(got->bytes(i, 4))};
        if (!got->is_null(i, 2)) p.pending = std::string(got->bytes(i, 2));
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace airlock::store::pg
