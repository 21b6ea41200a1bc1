#include "service/cli/support.hpp"

#include "service/config/config.hpp"

#include <filesystem>
#include <iostream>

namespace airlock::service::cli {

std::string const* flag_value(std::vector<std::string> const& args, std::size_t& i, std::string_view command) {
    if (i + 1 >= args.size()) {
        std::cerr << "airlock " << command << ": " << args[i] << " needs a value\n";
        return nullptr;
    }
    return &args[++i];
}

namespace {

std::optional<config> config_of(std::string_view command, std::string const& config_file) {
    auto c = load_config(config_file, process_environment());
    if (!c) {
        std::cerr << "airlock " << command << ": " << config_file << ": " << c.error().message << "\n";
        return std::nullopt;
    }
    return std::move(*c);
}

}  // namespace

std::unique_ptr<store::served_journal> open_named_journal(std::string_view command, std::optional<std::string> const& dir,
                                                          std::optional<std::string> const& config_file, bool must_exist) {
    std::optional<config> c;
    if (config_file && !(c = config_of(command, *config_file))) return nullptr;
    if (c && c->journal_postgres) {
        auto o = *c->journal_postgres;
        // Beside a serving airlock (which holds the serving lock): reads, and a pin accepted.
        o.exclusive = false;
        o.create_if_empty = !must_exist;
        o.readers = 1;
        auto opened = store::postgres_store::open(std::move(o));
        if (!opened) {
            std::cerr << "airlock " << command << ": journal.postgres: " << opened.error().message << "\n";
            return nullptr;
        }
        return std::move(*opened);
    }
    store::lmdb_options opts;
    opts.directory = dir.value_or("var/journal");
    if (c) opts = c->journal;
    return open_journal(command, opts, must_exist);
}

std::optional<store::lmdb_options> journal_options(std::string_view command, std::optional<std::string> const& dir,
                                                   std::optional<std::string> const& config_file) {
    store::lmdb_options opts;
    opts.directory = dir.value_or("var/journal");
    if (!config_file) return opts;
    auto c = load_config(*config_file, process_environment());
    if (!c) {
        std::cerr << "airlock " << command << ": " << *config_file << ": " << c.error().message << "\n";
        return std::nullopt;
    }
    // Reading the LMDB directory the configuration does not use would show another journal, or
    // none, as if it were this one's.
    if (c->journal_postgres) {
        std::cerr << "airlock " << command << ": " << *config_file
                  << " keeps its journal in PostgreSQL (journal.postgres), and this command reads LMDB journals only "
                     "so far; copy it first: airlock journal copy --from postgres:URL --to lmdb:DIR\n";
        return std::nullopt;
    }
    return c->journal;
}

std::unique_ptr<store::lmdb_store> open_journal(std::string_view command, store::lmdb_options const& options,
                                                bool must_exist) {
    if (must_exist && !std::filesystem::exists(options.directory / "data.mdb")) {
        std::cerr << "airlock " << command << ": no journal at '" << options.directory.string() << "'\n";
        return nullptr;
    }
    auto opened = store::lmdb_store::open(options);
    if (!opened) {
        std::cerr << "airlock " << command << ": " << opened.error().message << "\n";
        return nullptr;
    }
    return std::move(*opened);
}

}  // namespace airlock::service::cli
