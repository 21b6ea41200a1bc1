#include "service/cli/pins_command.hpp"

#include "service/cli/support.hpp"
#include "store/lmdb_store.hpp"

#include <iostream>

namespace airlock::service {

namespace {

constexpr char pins_usage[] =
    "usage: airlock pins list [--config FILE | --journal DIR]\n"
    "       airlock pins accept SERVER TOOL [--config FILE | --journal DIR]\n"
    "  list    every pinned upstream tool; 'CHANGED' marks one withheld until accepted\n"
    "  accept  make the changed definition of SERVER's TOOL (its upstream name) the pinned one\n"
    "  the journal is the configuration's journal.dir, or DIR (default: var/journal)\n";

}  // namespace

int run_pins(std::vector<std::string> const& args) {
    std::optional<std::string> config_file, journal_dir;
    std::vector<std::string> pos;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << pins_usage;
            return 0;
        }
        if ((a == "--config" || a == "--journal") && i + 1 < args.size()) {
            (a == "--config" ? config_file : journal_dir) = args[++i];
        } else if (a.rfind("--", 0) == 0) {
            std::cerr << "airlock pins: unknown or incomplete option '" << a << "'\n" << pins_usage;
            return 2;
        } else {
            pos.push_back(a);
        }
    }
    bool list = pos.size() == 1 && pos[0] == "list";
    bool accept = pos.size() == 3 && pos[0] == "accept";
    if (!list && !accept) {
        std::cerr << pins_usage;
        return 2;
    }
    auto opts = cli::journal_options("pins", journal_dir, config_file);
    if (!opts) return 1;
    auto opened = cli::open_journal("pins", *opts, true);
    if (!opened) return 1;
    auto& s = *opened;
    if (list) {
        auto pins = cli::run_sync(s.async_pins());
        if (!pins) {
            std::cerr << "airlock pins: " << pins.error().message << "\n";
            return 1;
        }
        for (auto const& p : *pins) {
            std::cout << p.key << "  " << p.pinned.substr(0, 16);
            if (p.pending) std::cout << "  CHANGED to " << p.pending->substr(0, 16) << " (withheld until accepted)";
            std::cout << "\n";
        }
        std::cerr << pins->size() << " pinned tools\n";
        return 0;
    }
    auto accepted = cli::run_sync(s.async_accept_pin(pos[1] + "/" + pos[2]));
    if (!accepted) {
        std::cerr << "airlock pins accept: " << accepted.error().message << "\n";
        return 1;
    }
    std::cout << "accepted " << accepted->key << " " << accepted->pinned.substr(0, 16)
              << " (a running airlock serves it after its next catalogue refresh, within 30 s)\n";
    return 0;
}

}  // namespace airlock::service
