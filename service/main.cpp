// The airlock command line: one binary, one subcommand per use.

#include "service/cli/run_command.hpp"
#include "service/cli/runs_command.hpp"
#include "service/cli/ask_command.hpp"
#include "service/cli/check_command.hpp"
#include "service/config/config.hpp"
#include "service/ops/log.hpp"
#include "service/cli/journal_command.hpp"
#include "service/cli/keygen_command.hpp"
#include "service/cli/pins_command.hpp"
#include "service/cli/verify_provenance_command.hpp"
#include "service/app/replay_command.hpp"
#include "service/app/serve_command.hpp"
#include "service/app/stdio_command.hpp"
#include "service/cli/upstream_command.hpp"


#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct subcommand {
    char const* name;
    char const* summary;
    bool available;
};

// Listed in --help even before they exist, so users see the whole shape of the tool.
constexpr subcommand subcommands[] = {
    {"serve", "run the HTTP service: MCP gateway at /mcp, REST API, health and metrics", true},
    {"stdio", "serve one MCP client on stdin/stdout (for hosts that spawn their servers)", true},
    {"check", "validate an agent manifest or a configuration file", true},
    {"run", "run one agent from a manifest to its end and print its status, output and run id", true},
    {"runs", "list journaled runs: agent runs and gateway sessions, filtered and paged", true},
    {"replay", "re-run a journaled run from the journal alone (no model or tool calls)", true},
    {"journal", "verify, show, export and import journaled runs", true},
    {"pins", "list pinned upstream tool definitions, accept a changed one", true},
    {"tools", "list the tools of one upstream MCP server (stdio:CMD or an http(s) URL)", true},
    {"grants", "print a manifest granting the tools of one upstream MCP server (--read-only: its read-only ones)", true},
    {"call", "call one tool of an upstream MCP server and print the result", true},
    {"ask", "send one message to a configured model provider and print its completion", true},
    {"verify-provenance", "verify a signed provenance block against a public key", true},
    {"keygen", "create an Ed25519 signing key (PKCS#8 PEM) for provenance", true},
    {"version", "print the version", true},
    {"help", "print this help", true},
};

void usage(std::ostream& out) {
    out << "airlock " << AIRLOCK_VERSION << " - a governed gateway between AI agents and their tools\n\n"
        << "usage: airlock <command> [options]\n\ncommands:\n";
    for (auto const& c : subcommands) {
        std::string name = c.name;
        name.resize(20, ' ');
        out << "  " << name << c.summary << (c.available ? "" : " (not yet available)") << "\n";
    }
    out << "\nRun 'airlock <command> --help' for a command's options.\n";
}

}  // namespace

int main(int argc, char** argv) {
    // Logs go to stderr: stdout belongs to command output (and to the MCP stream in stdio mode).
    // Text for the one-shot commands a person runs; serve and stdio install the configured format.
    airlock::service::log::install(airlock::service::log_format::text, airlock::service::log_level::info);
    // A file size limit (ulimit -f, a unit's LimitFSIZE=) that the journal reaches fails the append
    // with EFBIG, reported like a full disk (and by /readyz), instead of killing the process mid-commit.
    std::signal(SIGXFSZ, SIG_IGN);

    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        usage(std::cerr);
        return 2;
    }
    std::string cmd = args.front();
    std::vector<std::string> rest(args.begin() + 1, args.end());

    if (cmd == "--version" || cmd == "version") {
        std::cout << "airlock " << AIRLOCK_VERSION << "\n";
        return 0;
    }
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
        usage(std::cout);
        return 0;
    }
    if (cmd == "serve") return airlock::service::run_serve(rest);
    if (cmd == "stdio") return airlock::service::run_stdio(rest);
    if (cmd == "run") return airlock::service::run_run(rest);
    if (cmd == "runs") return airlock::service::run_runs(rest);
    if (cmd == "replay") return airlock::service::run_replay(rest);
    if (cmd == "check") return airlock::service::run_check(rest);
    if (cmd == "journal") return airlock::service::run_journal(rest);
    if (cmd == "tools") return airlock::service::run_tools(rest);
    if (cmd == "ask") return airlock::service::run_ask(rest);
    if (cmd == "pins") return airlock::service::run_pins(rest);
    if (cmd == "keygen") return airlock::service::run_keygen(rest);
    if (cmd == "verify-provenance") return airlock::service::run_verify_provenance(rest);
    if (cmd == "call") return airlock::service::run_call(rest);
    if (cmd == "grants") return airlock::service::run_grants(rest);
    for (auto const& c : subcommands) {
        if (cmd == c.name) {
            std::cerr << "airlock: '" << cmd << "' is not available in this build yet\n";
            return 2;
        }
    }
    std::cerr << "airlock: unknown command '" << cmd << "'\n\n";
    usage(std::cerr);
    return 2;
}
