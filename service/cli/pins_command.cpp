#include "service/cli/pins_command.hpp"

#include "core/pin_review.hpp"
#include "service/cli/support.hpp"
#include "store/lmdb_store.hpp"

#include <iostream>

namespace airlock::service {

namespace {

constexpr char pins_usage[] =
    "usage: airlock pins list [--config FILE | --journal DIR]\n"
    "       airlock pins show SERVER TOOL [--config FILE | --journal DIR]\n"
    "       airlock pins accept SERVER TOOL [--digest SHA256] [--config FILE | --journal DIR]\n"
    "  list    every pinned upstream tool; 'CHANGED' marks one withheld until accepted\n"
    "  show    SERVER's TOOL: its pinned and its new definition, and what changed between them\n"
    "  accept  make the changed definition of SERVER's TOOL (its upstream name) the pinned one;\n"
    "          with --digest, only if it is still the one `show` printed as the new definition\n"
    "  the journal is the configuration's journal.dir, or DIR (default: var/journal)\n";

int list_pins(std::vector<core::pin> const& pins) {
    for (auto const& p : pins) {
        std::cout << p.key << "  " << p.pinned.substr(0, 16);
        if (p.pending) std::cout << "  CHANGED to " << p.pending->substr(0, 16) << " (withheld until accepted)";
        std::cout << "\n";
    }
    std::cerr << pins.size() << " pinned tools\n";
    return 0;
}

// The pin SERVER TOOL names; null after printing what is unknown and what exists.
std::optional<core::pin> named_pin(std::string_view verb, std::vector<core::pin> const& pins, std::string const& server,
                                   std::string const& tool) {
    auto found = core::find_pin(pins, server, tool);
    if (!found) {
        std::cerr << "airlock pins " << verb << ": " << found.error().message << "\n";
        return std::nullopt;
    }
    return *found;
}

int accept_pin(core::pin_store& s, std::vector<core::pin> const& pins, std::string const& server,
               std::string const& tool, std::optional<std::string> digest) {
    auto p = named_pin("accept", pins, server, tool);
    if (!p) return 1;
    auto accepted = cli::run_sync(s.async_accept_pin(p->key, std::move(digest)));
    if (!accepted) {
        std::cerr << "airlock pins accept: " << accepted.error().message << "\n";
        return 1;
    }
    // A running airlock watches the pins of its journal (service/app/pin_watch): it serves the
    // accepted definition within a second and tells the clients whose tool list changed.
    std::cout << "accepted " << accepted->key << " " << accepted->pinned.substr(0, 16)
              << " (an airlock serve on this journal offers it within a second)\n";
    return 0;
}

}  // namespace

int run_pins(std::vector<std::string> const& args) {
    std::optional<std::string> config_file, journal_dir, digest;
    std::vector<std::string> pos;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << pins_usage;
            return 0;
        }
        if ((a == "--config" || a == "--journal" || a == "--digest") && i + 1 < args.size()) {
            (a == "--config" ? config_file : a == "--journal" ? journal_dir : digest) = args[++i];
        } else if (a.rfind("--", 0) == 0) {
            std::cerr << "airlock pins: unknown or incomplete option '" << a << "'\n" << pins_usage;
            return 2;
        } else {
            pos.push_back(a);
        }
    }
    bool const list = pos.size() == 1 && pos[0] == "list";
    bool const named = pos.size() == 3 && (pos[0] == "show" || pos[0] == "accept");
    if ((!list && !named) || (digest && pos[0] != "accept")) {
        std::cerr << pins_usage;
        return 2;
    }
    auto opened = cli::open_named_journal("pins", journal_dir, config_file, true);
    if (!opened) return 1;
    auto& s = *opened;
    auto pins = cli::run_sync(s.async_pins());
    if (!pins) {
        std::cerr << "airlock pins: " << pins.error().message << "\n";
        return 1;
    }
    if (list) return list_pins(*pins);
    if (pos[0] == "accept") return accept_pin(s, *pins, pos[1], pos[2], std::move(digest));
    auto p = named_pin("show", *pins, pos[1], pos[2]);
    if (!p) return 1;
    std::cout << core::render_pin_review(*p);
    return 0;
}

}  // namespace airlock::service
