#include "service/cli/check_command.hpp"

#include "core/manifest.hpp"
#include "mcp/client/spawn_logged.hpp"
#include "service/app/oauth.hpp"
#include "service/config/config.hpp"

#include <boost/asio/io_context.hpp>

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

// --online: what only the network can tell. Each auth.oauth issuer: its metadata discovered and
// its keys fetched, as `airlock serve` would at start (egress and TLS settings included).
int check_online(std::string const& path, config const& c) {
    boost::asio::io_context ioc;
    auto oauth = make_oauth(c, ioc.get_executor(), nullptr);
    if (!oauth) {
        std::cout << "online: nothing to contact (no auth.oauth)\n";
        return 0;
    }
    auto keys = oauth->keys;
    auto once = [](std::shared_ptr<oauth_keys> k) -> boost::asio::awaitable<void> {
        co_await k->async_start();
        k->stop();
    };
    mcp::spawn_logged(ioc.get_executor(), once(keys), "oauth key check");
    ioc.run();
    int rc = 0;
    for (auto const& s : keys->states()) {
        if (s.ready) {
            std::cout << "ok oauth issuer " << s.issuer << ": " << s.keys << " signing key(s) from " << s.jwks_uri << "\n";
        } else {
            std::cout << path << ": error: auth.oauth issuer " << s.issuer << ": " << s.problem << "\n";
            rc = 1;
        }
    }
    return rc;
}

int check_config(std::string const& path, bool online) {
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
    return online ? check_online(path, *c) : 0;
}

}  // namespace

int run_check(std::vector<std::string> const& args) {
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
        std::cout << "usage: airlock check [--online] FILE.yaml\n"
                     "  an agent manifest (kind: Agent): prints 'ok <name> <version> <digest>'\n"
                     "  a configuration file: prints 'ok config FILE' and a summary\n"
                     "  otherwise each error with its field path, and exit code 1\n"
                     "  --online: also contact what the configuration names (auth.oauth issuers: metadata and keys)\n";
        return 0;
    }
    bool online = false;
    std::vector<std::string> files;
    for (auto const& a : args) {
        if (a == "--online") online = true;
        else files.push_back(a);
    }
    if (files.size() != 1 || files[0].starts_with("--")) {
        std::cerr << "usage: airlock check [--online] FILE.yaml\n";
        return 2;
    }
    auto const& file = files[0];
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::cerr << "airlock check: cannot read '" << file << "'\n";
        return 1;
    }
    std::ostringstream text;
    text << in.rdbuf();
    return looks_like_manifest(text.str()) ? check_manifest(file, text.str()) : check_config(file, online);
}

}  // namespace airlock::service
