#include "service/cli/journal_command.hpp"

#include "core/canonical_json.hpp"
#include "core/journal.hpp"
#include "service/cli/journal_copy.hpp"
#include "service/cli/journal_upkeep.hpp"
#include "service/cli/support.hpp"
#include "service/ops/journal_prune.hpp"
#include "store/lmdb_store.hpp"

#include <fstream>
#include <iostream>

namespace airlock::service {

namespace {

constexpr char journal_usage[] =
    "usage: airlock journal <verify|show|export|import|prune|backup|compact|copy|migrate-schema> [--journal DIR | --config FILE] ...\n"
    "  verify (--all | RUN)   check hash chains; names the first bad seq of each broken run\n"
    "  show RUN               one line per record: seq, kind, hash prefix, body\n"
    "  export RUN             the run's records as JSON lines (canonical JSON), to stdout\n"
    "  export --all --to DIR  every run, one file each (DIR/RUN.jsonl)\n"
    "  import FILE            verify an exported run, then write it whole (refused whole if broken)\n"
    "  prune (--sealed-before DATE | --older-than AGE) [--export-to DIR] [--dry-run]\n"
    "                         remove sealed runs past retention (never running, awaiting approval or\n"
    "                         quarantined ones), exported first with --export-to; journaled as a run\n"
    "  backup DIR             a consistent, compacted copy, taken while airlock runs\n"
    "  compact                return pruned space to the filesystem (airlock stopped)\n"
    "  copy --from STORE --to STORE\n"
    "                         every run and pin, chains verified, between lmdb:DIR and postgres:URL\n"
    "  migrate-schema --postgres URL\n"
    "                         bring a PostgreSQL journal's schema to this airlock's version\n"
    "  --journal DIR          journal directory (default: var/journal)\n"
    "  --config FILE          take the journal from this configuration (journal.dir or journal.postgres)\n";

int verify_one(store::served_journal& s, std::string const& run) {
    auto v = cli::run_sync(s.async_verify(run));
    if (!v) {
        std::cout << run << ": error: " << v.error().message << "\n";
        return 1;
    }
    if (*v) {
        std::cout << run << ": BROKEN at seq " << (*v)->seq << ": " << (*v)->reason << "\n";
        return 1;
    }
    auto head = cli::run_sync(s.async_head(run));
    std::cout << run << ": ok (" << (head && *head ? (*head)->head_seq : 0) << " records)\n";
    return 0;
}

int verify_all(store::served_journal& s) {
    int rc = 0;
    std::size_t count = 0;
    core::run_filter page;  // every kind, in run id order
    page.limit = 1000;
    for (;;) {
        auto listed = cli::run_sync(s.async_runs(page));
        if (!listed) {
            std::cerr << "airlock journal verify: " << listed.error().message << "\n";
            return 1;
        }
        for (auto const& r : listed->runs) {
            rc |= verify_one(s, r.run_id);
            ++count;
        }
        if (!listed->next_cursor) break;
        page.cursor = listed->next_cursor;
    }
    std::cout << count << " runs verified" << (rc ? ", some broken" : "") << "\n";
    return rc;
}

std::string body_preview(boost::json::object const& body) {
    auto text = core::canonical(body);
    std::string s = text ? *text : "<unprintable>";
    if (s.size() > 160) s = s.substr(0, 157) + "...";
    return s;
}

int import_file(store::served_journal& s, std::string const& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::cerr << "airlock journal import: cannot read '" << path << "'\n";
        return 1;
    }
    std::vector<core::record> records;
    std::string line;
    std::size_t n = 0;
    while (std::getline(in, line)) {
        ++n;
        if (line.empty()) continue;
        auto r = core::parse_record(line);
        if (!r) {
            std::cerr << "airlock journal import: line " << n << ": " << r.error().message << "\n";
            return 1;
        }
        records.push_back(std::move(*r));
    }
    if (records.empty()) {
        std::cerr << "airlock journal import: '" << path << "' holds no records\n";
        return 1;
    }
    // Nothing is written unless the whole chain verifies.
    if (auto fault = core::verify_chain(records)) {
        std::cerr << "airlock journal import: refused: seq " << fault->seq << ": " << fault->reason << "\n";
        return 1;
    }
    auto const& run = records.front().run_id;
    if (auto head = cli::run_sync(s.async_head(run)); head && *head) {
        std::cerr << "airlock journal import: run " << run << " already exists in this journal\n";
        return 1;
    }
    std::vector<core::new_record> batch;
    for (auto const& r : records) batch.push_back({r.kind, r.body});
    auto written = cli::run_sync(s.async_append(run, std::move(batch)));
    if (!written) {
        std::cerr << "airlock journal import: refused: " << written.error().message << "\n";
        return 1;
    }
    // The store recomputes the chain; identical bodies must give identical hashes.
    if (written->back().hash != records.back().hash) {
        std::cerr << "airlock journal import: the written chain differs from the file's (internal error)\n";
        return 1;
    }
    std::cout << "imported run " << run << " (" << written->size() << " records)\n";
    return 0;
}

}  // namespace

int run_journal(std::vector<std::string> const& args) {
    if (cli::is_journal_upkeep(args)) return cli::run_journal_upkeep(args);
    if (cli::is_journal_copy(args)) return cli::run_journal_copy(args);
    std::optional<std::string> dir, config_file;
    std::vector<std::string> pos;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << journal_usage;
            return 0;
        }
        if (a == "--journal" || a == "--config") {
            auto v = cli::flag_value(args, i, "journal");
            if (!v) return 2;
            (a == "--journal" ? dir : config_file) = *v;
        } else if (a.starts_with("--") && a != "--all") {
            std::cerr << "airlock journal: unknown option '" << a << "'\n" << journal_usage;
            return 2;
        } else {
            pos.push_back(a);
        }
    }
    if (pos.empty()) {
        std::cerr << journal_usage;
        return 2;
    }
    auto const& verb = pos[0];
    bool known = verb == "verify" || verb == "show" || verb == "export" || verb == "import";
    if (!known) {
        std::cerr << "airlock journal: unknown action '" << verb << "'\n" << journal_usage;
        return 2;
    }
    if (pos.size() != 2) {
        auto operand = verb == "import" ? "FILE" : verb == "verify" ? "RUN or --all" : "RUN";
        std::cerr << "airlock journal " << verb << ": expected " << operand << ", " << (pos.size() - 1)
                  << " arguments given\n"
                  << journal_usage;
        return 2;
    }
    if (dir && config_file) {
        std::cerr << "airlock journal: give --journal or --config, not both\n";
        return 2;
    }
    // Read-only actions must not create a journal where none was.
    auto opened = cli::open_named_journal("journal", dir, config_file, verb != "import");
    if (!opened) return 1;
    auto& s = *opened;
    auto const& arg = pos[1];
    if (verb == "verify") return arg == "--all" ? verify_all(s) : verify_one(s, arg);
    if (verb == "import") return import_file(s, arg);

    auto recs = cli::run_sync(s.async_read(arg, 1));
    if (!recs) {
        std::cerr << "airlock journal " << verb << ": " << recs.error().message << "\n";
        return 1;
    }
    if (recs->empty()) {
        std::cerr << "airlock journal " << verb << ": no run " << arg << "\n";
        return 1;
    }
    if (verb == "export") {
        if (auto written = ops::write_records(std::cout, *recs); !written) {
            std::cerr << "airlock journal export: " << written.error().message << "\n";
            return 1;
        }
        return 0;
    }
    for (auto const& r : *recs)
        std::cout << r.seq << "  " << core::to_string(r.kind) << "  " << core::to_hex(r.hash).substr(0, 12) << "  "
                  << body_preview(r.body) << "\n";
    return 0;
}

}  // namespace airlock::service
