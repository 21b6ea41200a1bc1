#include "service/cli/check_command.hpp"

#include "core/manifest.hpp"
#include "service/config/config.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <iostream>
#include <sstream>

namespace airlock::service {

namespace {

// A document with `kind: Agent` is a manifest; anything else is a configuration file.
bool looks_like_manifest(std::string const& text) {
    try {
        auto doc = YAML::Load(text);
        return doc.IsMap() && doc["kind"] && doc["kind"].IsScalar() && doc["kind"].Scalar() == "Agent";
    } catch (YAML::Exception const&) {
        return false;  // the config loader reports the syntax error with its position
    }
}

int check_manifest(std::string const& path, std::string const& text) {
    auto m = core::parse_manifest(text);
    if (!m) {
        // Every problem at once: fixing a manifest one error per run is tedious.
        for (auto const& e : core::manifest_problems(text)) std::cout << path << ": error: " << e.message << "\n";
        return 1;
    }
    std::cout << "ok " << m->name << " " << m->version << " " << m->digest << "\n";
    return 0;
}

int check_config(std::string const& path) {
    auto problems = config_problems(path, process_environment());
    if (!problems.empty()) {
        for (auto const& e : problems) std::cout << path << ": error: " << e.message << "\n";
        return 1;
    }
    auto c = load_config(path, process_environment());
    if (!c) {
        std::cout << path << ": error: " << c.error().message << "\n";
        return 1;
    }
    std::cout << "ok config " << path << "\n" << summary(*c);
    return 0;
}

}  // namespace

int run_check(std::vector<std::string> const& args) {
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
        std::cout << "usage: airlock check FILE.yaml\n"
                     "  an agent manifest (kind: Agent): prints 'ok <name> <version> <digest>'\n"
                     "  a configuration file: prints 'ok config FILE' and a summary\n"
                     "  otherwise each error with its field path, and exit code 1\n";
        return 0;
    }
    if (args.size() != 1) {
        std::cerr << "usage: airlock check FILE.yaml\n";
        return 2;
    }
    std::ifstream in(args[0], std::ios::binary);
    if (!in) {
        std::cerr << "airlock check: cannot read '" << args[0] << "'\n";
        return 1;
    }
    std::ostringstream text;
    text << in.rdbuf();
    return looks_like_manifest(text.str()) ? check_manifest(args[0], text.str()) : check_config(args[0]);
}

}  // namespace airlock::service
