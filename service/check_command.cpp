#include "service/check_command.hpp"

#include "core/manifest.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

namespace airlock::service {

int run_check(std::vector<std::string> const& args) {
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
        std::cout << "usage: airlock check MANIFEST.yaml\n"
                     "  prints 'ok <name> <version> <digest>', or each error with its field path (exit 1)\n";
        return 0;
    }
    if (args.size() != 1) {
        std::cerr << "usage: airlock check MANIFEST.yaml\n";
        return 2;
    }
    std::ifstream in(args[0], std::ios::binary);
    if (!in) {
        std::cerr << "airlock check: cannot read '" << args[0] << "'\n";
        return 1;
    }
    std::ostringstream text;
    text << in.rdbuf();
    auto m = core::parse_manifest(text.str());
    if (!m) {
        // Every problem at once: fixing a manifest one error per run is tedious.
        for (auto const& e : core::manifest_problems(text.str())) std::cout << args[0] << ": error: " << e.message << "\n";
        return 1;
    }
    std::cout << "ok " << m->name << " " << m->version << " " << m->digest << "\n";
    return 0;
}

}  // namespace airlock::service
