#include "service/cli/journal_upkeep.hpp"

#include "core/rfc3339.hpp"
#include "service/cli/support.hpp"
#include "service/config/config.hpp"
#include "service/config/durations.hpp"
#include "service/ops/journal_prune.hpp"

#include <filesystem>
#include <iostream>
#include <optional>

namespace airlock::service::cli {

namespace {

constexpr char const* upkeep_usage =
    "usage: airlock journal <prune|backup|compact|export --all> [--journal DIR | --config FILE] ...\n"
    "  prune (--sealed-before DATE | --older-than AGE) [--export-to DIR] [--dry-run]\n"
    "                         remove sealed runs sealed before DATE (RFC 3339, or YYYY-MM-DD) or more\n"
    "                         than AGE ago (30d, 12h; with --config, journal.retention by default);\n"
    "                         running, awaiting-approval and quarantined runs stay. With --export-to,\n"
    "                         each run is first written to DIR/RUN.jsonl\n"
    "  backup DIR             a consistent, compacted copy of the journal, taken while airlock runs\n"
    "  compact                give the space of pruned runs back to the filesystem (airlock stopped)\n"
    "  export --all --to DIR  every run to DIR/RUN.jsonl (journal import takes each back)\n";

struct upkeep_args {
    std::optional<std::string> dir, config_file, sealed_before, older_than, export_to, to;
    bool dry_run = false, all = false;
    std::vector<std::string> positional;
};

std::optional<upkeep_args> parse(std::vector<std::string> const& args) {
    upkeep_args a;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& s = args[i];
        std::optional<std::string>* slot = s == "--journal"         ? &a.dir
                                           : s == "--config"        ? &a.config_file
                                           : s == "--sealed-before" ? &a.sealed_before
                                           : s == "--older-than"    ? &a.older_than
                                           : s == "--export-to"     ? &a.export_to
                                           : s == "--to"            ? &a.to
                                                                    : nullptr;
        if (slot) {
            auto v = flag_value(args, i, "journal");
            if (!v) return std::nullopt;
            *slot = *v;
        } else if (s == "--dry-run") {
            a.dry_run = true;
        } else if (s == "--all") {
            a.all = true;
        } else if (s.starts_with("--")) {
            std::cerr << "airlock journal: unknown option '" << s << "'\n" << upkeep_usage;
            return std::nullopt;
        } else {
            a.positional.push_back(s);
        }
    }
    if (a.dir && a.config_file) {
        std::cerr << "airlock journal: give --journal or --config, not both\n";
        return std::nullopt;
    }
    return a;
}

// journal.retention of the --config file, as an --older-than; nullopt when there is none.
std::optional<std::string> configured_retention(upkeep_args const& a) {
    if (!a.config_file) return std::nullopt;
    auto c = load_config(*a.config_file, process_environment());
    if (!c || !c->journal_retention) return std::nullopt;
    return format_duration(*c->journal_retention);
}

// --sealed-before DATE or --older-than AGE (by default journal.retention) as the instant before
// which runs go.
std::optional<std::chrono::sys_seconds> cutoff(upkeep_args a) {
    if (!a.sealed_before && !a.older_than) a.older_than = configured_retention(a);
    if (a.sealed_before.has_value() == a.older_than.has_value()) {
        std::cerr << "airlock journal prune: give --sealed-before DATE or --older-than AGE (one of them)"
                  << (a.config_file ? ", or set journal.retention in " + *a.config_file : std::string()) << "\n";
        return std::nullopt;
    }
    if (a.sealed_before) {
        auto text = *a.sealed_before;
        if (text.size() == 10) text += "T00:00:00Z";
        if (auto t = core::parse_rfc3339(text)) return *t;
        std::cerr << "airlock journal prune: --sealed-before '" << *a.sealed_before
                  << "' is not a date (2026-11-01 or 2026-11-01T00:00:00Z)\n";
        return std::nullopt;
    }
    auto age = parse_duration(*a.older_than);
    if (!age || age->count() <= 0) {
        std::cerr << "airlock journal prune: --older-than '" << *a.older_than << "' is not an age (30d, 12h, 90m)\n";
        return std::nullopt;
    }
    return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now() - *age);
}

std::string megabytes(std::uintmax_t bytes) {
    auto tenths = (bytes * 10 + 512 * 1024) / (1024 * 1024);
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " MiB";
}

std::uintmax_t data_file_bytes(std::filesystem::path const& dir) {
    std::error_code ec;
    auto n = std::filesystem::file_size(dir / "data.mdb", ec);
    return ec ? 0 : n;
}

int prune(store::lmdb_store& journal, upkeep_args const& a) {
    auto before = cutoff(a);
    if (!before) return 2;
    ops::prune_request req{*before, std::nullopt, a.dry_run};
    if (a.export_to) req.export_to = std::filesystem::path(*a.export_to);
    auto done = run_sync(ops::async_prune(journal, req));
    if (!done) {
        std::cerr << "airlock journal prune: " << done.error().message << "\n";
        return 1;
    }
    for (auto const& r : done->runs)
        std::cout << (a.dry_run ? "would prune " : "pruned ") << r.run_id << "  " << r.status << "  sealed " << r.sealed_at
                  << "  " << r.head_seq << " records  head " << r.head_hash.substr(0, 12) << "\n";
    if (a.dry_run) {
        std::cout << done->runs.size() << " runs sealed before " << core::rfc3339(*before) << " would be pruned\n";
    } else if (done->runs.empty()) {
        std::cout << "no sealed run was sealed before " << core::rfc3339(*before) << "; nothing pruned\n";
    } else {
        std::cout << "pruned " << done->runs.size() << " runs (" << done->records << " records); the prune is journaled as run "
                  << done->record_run << (a.export_to ? "; exported to " + *a.export_to : std::string()) << "\n"
                  << "the space is reused by new records; `airlock journal compact` (airlock stopped) returns it to the disk\n";
    }
    return 0;
}

int backup(store::lmdb_store const& journal, std::filesystem::path const& source, std::string const& target) {
    if (auto copied = journal.copy_compacted(target); !copied) {
        std::cerr << "airlock journal backup: " << copied.error().message << "\n";
        return 1;
    }
    std::cout << "backed up " << source.string() << " (" << megabytes(data_file_bytes(source)) << ") to " << target << " ("
              << megabytes(data_file_bytes(target)) << ")\n";
    return 0;
}

// Compaction copies the journal without its free pages beside it, then puts the copy in its place.
// The exclusive lock keeps a running airlock (or another CLI) out for the whole of it.
int compact(store::lmdb_options options) {
    auto const dir = options.directory;
    auto const staging = dir / ".compacting";
    auto const before = data_file_bytes(dir);
    std::error_code ec;
    std::filesystem::remove_all(staging, ec);
    {
        options.exclusive = true;
        auto journal = open_journal("journal compact", options, true);
        if (!journal) return 1;
        if (auto copied = journal->copy_compacted(staging); !copied) {
            std::cerr << "airlock journal compact: " << copied.error().message << "\n";
            std::filesystem::remove_all(staging, ec);
            return 1;
        }
        // Still holding the lock: nobody opens the journal between the copy and the swap.
        std::filesystem::rename(staging / "data.mdb", dir / "data.mdb", ec);
        if (ec) {
            std::cerr << "airlock journal compact: cannot put the compacted copy in place: " << ec.message()
                      << " (the journal is unchanged)\n";
            return 1;
        }
    }
    std::filesystem::remove_all(staging, ec);
    std::cout << "compacted " << dir.string() << ": " << megabytes(before) << " -> " << megabytes(data_file_bytes(dir)) << "\n";
    return 0;
}

// An error of one run, saying which.
core::error in_run(std::string const& run, core::error const& e) { return {e.code, "run " + run + ": " + e.message}; }

int export_all(store::lmdb_store const& journal, std::string const& to) {
    std::error_code ec;
    std::filesystem::create_directories(to, ec);
    if (ec) {
        std::cerr << "airlock journal export: cannot create '" << to << "': " << ec.message() << "\n";
        return 1;
    }
    std::size_t runs = 0;
    auto exported = journal.each_run([&](core::run_summary const& run) -> core::result<void> {
        auto records = journal.read(run.run_id);
        if (!records) return in_run(run.run_id, records.error());
        if (auto w = ops::write_run_file(*records, std::filesystem::path(to) / (run.run_id + ".jsonl")); !w)
            return in_run(run.run_id, w.error());
        ++runs;
        return {};
    });
    if (!exported) {
        std::cerr << "airlock journal export: " << exported.error().message << "\n";
        return 1;
    }
    std::cout << "exported " << runs << " runs to " << to << "\n";
    return 0;
}

}  // namespace

bool is_journal_upkeep(std::vector<std::string> const& args) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--journal" || args[i] == "--config") {
            ++i;
            continue;
        }
        if (args[i].starts_with("--")) continue;
        if (args[i] == "export") return std::find(args.begin(), args.end(), "--all") != args.end();
        return args[i] == "prune" || args[i] == "backup" || args[i] == "compact";
    }
    return false;
}

int run_journal_upkeep(std::vector<std::string> const& args) {
    auto a = parse(args);
    if (!a) return 2;
    auto const verb = a->positional.at(0);
    std::size_t const operands = verb == "backup" ? 1 : 0;
    if (a->positional.size() != operands + 1) {
        std::cerr << "airlock journal " << verb << ": expected " << (operands ? "DIR" : "no argument") << ", "
                  << (a->positional.size() - 1) << " given\n"
                  << upkeep_usage;
        return 2;
    }
    if (verb == "export" && !a->to) {
        std::cerr << "airlock journal export --all: --to DIR is needed (one file per run)\n";
        return 2;
    }
    auto opts = journal_options("journal", a->dir, a->config_file);
    if (!opts) return 1;
    if (verb == "compact") return compact(*opts);
    auto journal = open_journal("journal " + verb, *opts, true);
    if (!journal) return 1;
    if (verb == "prune") return prune(*journal, *a);
    if (verb == "backup") return backup(*journal, opts->directory, a->positional[1]);
    return export_all(*journal, *a->to);
}

}  // namespace airlock::service::cli
