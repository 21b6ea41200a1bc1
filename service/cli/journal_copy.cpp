#include "service/cli/journal_copy.hpp"

#include "core/journal.hpp"
#include "core/pins.hpp"
#include "service/cli/support.hpp"
#include "store/lmdb_store.hpp"
#include "store/postgres_store.hpp"

#include <iostream>
#include <memory>
#include <optional>

namespace airlock::service::cli {

namespace {

namespace asio = boost::asio;

constexpr char copy_usage[] =
    "usage: airlock journal copy --from STORE --to STORE\n"
    "       airlock journal migrate-schema --postgres URL\n"
    "  STORE is lmdb:DIR (a journal directory) or postgres:URL (postgresql://user@host:port/db).\n"
    "  copy writes every run of the source, with its records and their hashes unchanged, and every\n"
    "  tool pin, into the target; each run's chain is verified before it is written and compared\n"
    "  after. A run the target already holds with the same head is skipped, so a copy that stopped\n"
    "  can be run again. Give the password in PGPASSWORD or ~/.pgpass, not in the URL.\n"
    "  migrate-schema brings a PostgreSQL journal's schema to this airlock's version.\n";

// An open store of either kind, through the two interfaces a copy needs.
struct opened_store {
    std::unique_ptr<core::journal_store> journal;
    core::pin_store* pins = nullptr;
    std::string name;  // as given, the URL's password hidden
};

std::optional<opened_store> open_store(std::string const& spec, bool is_source) {
    opened_store out;
    out.name = spec.starts_with("postgres:") ? "postgres:" + store::redact_postgres_url(spec.substr(9)) : spec;
    if (spec.starts_with("lmdb:") && spec.size() > 5) {
        auto options = journal_options("journal copy", spec.substr(5), std::nullopt);
        if (!options) return std::nullopt;
        auto s = open_journal("journal copy", *options, is_source);
        if (!s) return std::nullopt;
        out.pins = s.get();
        out.journal = std::move(s);
        return out;
    }
    if (spec.starts_with("postgres:") && spec.size() > 9) {
        store::postgres_options o;
        o.conninfo = spec.substr(9);
        // A source must already be a journal; a target gets the schema when it has none.
        o.create_if_empty = !is_source;
        auto s = store::postgres_store::open(std::move(o));
        if (!s) {
            std::cerr << "airlock journal copy: " << out.name << ": " << s.error().message << "\n";
            return std::nullopt;
        }
        out.pins = s->get();
        out.journal = std::move(*s);
        return out;
    }
    std::cerr << "airlock journal copy: '" << out.name << "' is not lmdb:DIR or postgres:URL\n" << copy_usage;
    return std::nullopt;
}

struct copy_tally {
    std::size_t runs = 0, records = 0, skipped = 0, pins = 0, refused = 0;
};

// One run: verified, written whole in one append, and compared: the target chains the same
// bodies, so the same head hash proves it holds the same records.
asio::awaitable<void> copy_run(opened_store& from, opened_store& to, std::string const& run, copy_tally& t) {
    auto records = co_await from.journal->async_read(run, 1);
    if (!records) {
        std::cerr << "run " << run << ": cannot be read: " << records.error().message << "\n";
        ++t.refused;
        co_return;
    }
    if (auto fault = core::verify_chain(*records)) {
        std::cerr << "run " << run << ": BROKEN at seq " << fault->seq << " (" << fault->reason << "), not copied\n";
        ++t.refused;
        co_return;
    }
    if (records->empty()) co_return;
    auto there = co_await to.journal->async_head(run);
    if (there && *there) {
        bool same = (*there)->head_seq == records->back().seq && (*there)->head_hash == records->back().hash;
        if (same) ++t.skipped;
        else {
            std::cerr << "run " << run << ": the target holds another run of this id, not copied\n";
            ++t.refused;
        }
        co_return;
    }
    std::vector<core::new_record> batch;
    batch.reserve(records->size());
    for (auto& r : *records) batch.push_back({r.kind, std::move(r.body)});
    auto written = co_await to.journal->async_append(run, std::move(batch));
    if (!written) {
        std::cerr << "run " << run << ": refused by the target: " << written.error().message << "\n";
        ++t.refused;
        co_return;
    }
    if (written->back().hash != records->back().hash) {
        // Only a record hashed by an airlock older than the canonical form of large integers does
        // this: its body chains to another hash today. Such a run stays where it is.
        std::cerr << "run " << run << ": its records hash differently when written again, not copied whole\n";
        ++t.refused;
        co_return;
    }
    ++t.runs;
    t.records += written->size();
}

// A pin is copied as the target would have learnt it: its pinned definition first seen, then the
// pending one seen.
asio::awaitable<void> copy_pins(opened_store& from, opened_store& to, copy_tally& t) {
    auto pins = co_await from.pins->async_pins();
    if (!pins) {
        std::cerr << "pins: cannot be read: " << pins.error().message << "\n";
        ++t.refused;
        co_return;
    }
    for (auto const& p : *pins) {
        auto first = co_await to.pins->async_check_pin(p.key, p.pinned, p.pinned_definition);
        bool ok = first && *first != core::pin_verdict::changed;
        if (ok && p.pending) {
            auto pending = co_await to.pins->async_check_pin(p.key, *p.pending, p.pending_definition);
            ok = pending.has_value();
        }
        if (!ok) {
            std::cerr << "pin " << p.key << ": the target pins another definition, not copied\n";
            ++t.refused;
        } else {
            ++t.pins;
        }
    }
}

asio::awaitable<copy_tally> copy_all(opened_store& from, opened_store& to) {
    copy_tally t;
    core::run_filter page;  // every kind, in run id order
    page.limit = 500;
    for (;;) {
        auto listed = co_await from.journal->async_runs(page);
        if (!listed) {
            std::cerr << "runs: cannot be listed: " << listed.error().message << "\n";
            ++t.refused;
            break;
        }
        for (auto const& run : listed->runs) co_await copy_run(from, to, run.run_id, t);
        if (!listed->next_cursor) break;
        page.cursor = listed->next_cursor;
    }
    co_await copy_pins(from, to, t);
    co_return t;
}

int migrate(std::string const& url) {
    auto before = store::migrate_postgres_schema(url);
    if (!before) {
        std::cerr << "airlock journal migrate-schema: " << store::redact_postgres_url(url) << ": "
                  << before.error().message << "\n";
        return 1;
    }
    if (*before == store::postgres_schema_version)
        std::cout << "schema version " << *before << ": already this airlock's\n";
    else
        std::cout << "schema version " << *before << " -> " << store::postgres_schema_version << "\n";
    return 0;
}

}  // namespace

bool is_journal_copy(std::vector<std::string> const& args) {
    return !args.empty() && (args[0] == "copy" || args[0] == "migrate-schema");
}

int run_journal_copy(std::vector<std::string> const& args) {
    std::optional<std::string> from, to, postgres;
    for (std::size_t i = 1; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << copy_usage;
            return 0;
        }
        if (a == "--from" || a == "--to" || a == "--postgres") {
            auto v = flag_value(args, i, "journal " + args[0]);
            if (!v) return 2;
            (a == "--from" ? from : a == "--to" ? to : postgres) = *v;
            continue;
        }
        std::cerr << "airlock journal " << args[0] << ": unknown argument '" << a << "'\n" << copy_usage;
        return 2;
    }
    if (args[0] == "migrate-schema") {
        if (!postgres || from || to) {
            std::cerr << "airlock journal migrate-schema: needs --postgres URL\n" << copy_usage;
            return 2;
        }
        return migrate(*postgres);
    }
    if (!from || !to || postgres) {
        std::cerr << "airlock journal copy: needs --from STORE and --to STORE\n" << copy_usage;
        return 2;
    }
    if (*from == *to) {
        std::cerr << "airlock journal copy: --from and --to name the same store\n";
        return 2;
    }
    auto source = open_store(*from, true);
    if (!source) return 1;
    auto target = open_store(*to, false);
    if (!target) return 1;
    auto t = run_sync(copy_all(*source, *target));
    std::cout << "copied " << t.runs << " runs (" << t.records << " records) and " << t.pins << " pins from "
              << source->name << " to " << target->name << "; " << t.skipped << " runs were there already";
    if (t.refused) std::cout << "; " << t.refused << " not copied (see above)";
    std::cout << "\n";
    return t.refused ? 1 : 0;
}

}  // namespace airlock::service::cli
