// Grants that say what is wrong, against real upstreams (server-filesystem and server-everything):
// `airlock tools` shows the ref: line of each tool, `airlock grants` writes a manifest that airlock
// accepts, and a grant of a tool an upstream does not offer is named with the closest names it does
// offer, by `airlock check --online` and in the log of `airlock serve`, at start and after a reload.
#include "core/manifest.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

std::string filesystem_stdio(std::filesystem::path const& root) {
    return "stdio:" + peers::node() + " " + peers::filesystem() + " " + root.string();
}
std::string everything_stdio() { return "stdio:" + peers::node() + " " + peers::everything() + " stdio"; }

std::string slurp(std::filesystem::path const& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// alice's grants: tool names as people mistype them. read_txt_file (a letter left out),
// list_directroy (two letters swapped), Read_File (the case), format_disk (nothing like it), and on
// everything get_sum (the '-' of get-sum written '_') and ecoh; read_text_file and echo are right.
constexpr char const* typo_grants = R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: alice-desk, version: "1" }
spec:
  tools:
    - ref: tool://fs/read_text_file
      mutates: false
    - ref: tool://fs/read_txt_file
      mutates: false
    - ref: tool://fs/list_directroy
      mutates: false
    - ref: tool://fs/Read_File
      mutates: false
    - ref: tool://fs/format_disk
      mutates: false
    - ref: tool://everything/echo
      mutates: false
    - ref: tool://everything/get_sum
      mutates: false
    - ref: tool://everything/ecoh
      mutates: false
  budgets: {}
)";

// Two stdio upstreams, egress allowing exactly node, one principal with `grants` as its manifest.
struct typo_deployment {
    temp_dir dir{"airlock-grants-e2e"};
    std::filesystem::path config = dir.path() / "airlock.yaml";

    explicit typo_deployment(std::string const& grants = typo_grants) {
        std::filesystem::create_directory(dir.path() / "files");
        std::ofstream(dir.path() / "alice.token") << "alice-0123456789abcdef\n";
        ::chmod((dir.path() / "alice.token").c_str(), 0600);
        std::ofstream(dir.path() / "alice.yaml") << grants;
        std::ofstream(config) << "journal: { dir: journal }\n"
                              << "upstreams:\n"
                              << "  - name: fs\n    stdio: { argv: [\"" << peers::node() << "\", \"" << peers::filesystem()
                              << "\", \"" << (dir.path() / "files").string() << "\"] }\n"
                              << "  - name: everything\n    stdio: { argv: [\"" << peers::node() << "\", \""
                              << peers::everything() << "\", stdio] }\n"
                              << "egress:\n  - process: \"" << peers::node() << "\"\n"
                              << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n";
    }
};

// The warning each mistyped grant of typo_grants gets, in the order granted.
std::vector<std::string> const typo_warnings = {
    "tool://fs/read_txt_file is granted but fs offers no such tool; did you mean tool://fs/read_text_file or "
    "tool://fs/read_file?",
    "tool://fs/list_directroy is granted but fs offers no such tool; did you mean tool://fs/list_directory?",
    "tool://fs/Read_File is granted but fs offers no such tool; did you mean tool://fs/read_file",
    "tool://fs/format_disk is granted but fs offers no such tool\n",
    "tool://everything/get_sum is granted but everything offers no such tool; did you mean tool://everything/get.sum?",
    "tool://everything/ecoh is granted but everything offers no such tool; did you mean tool://everything/echo?",
};

}  // namespace

TEST_CASE("airlock tools prints beside each tool the ref: line that grants it", "[peers]") {
    temp_dir root{"airlock-grants-root"};
    auto fs = run_command({AIRLOCK_BINARY, "tools", "--server", filesystem_stdio(root.path()), "--name", "fs"});
    INFO(fs.err);
    REQUIRE(fs.exit_code == 0);
    CHECK_THAT(fs.out, Contains("read_text_file\tfs__read_text_file\tread-only\tref: tool://fs/read_text_file\t"));
    CHECK_THAT(fs.out, Contains("write_file\tfs__write_file\tmutates\tref: tool://fs/write_file\t"));
    // A '-' in the upstream's name is a '.' in the ref: the line is the one to paste, not the wire name.
    auto ev = run_command({AIRLOCK_BINARY, "tools", "--server", everything_stdio(), "--name", "everything"});
    INFO(ev.err);
    REQUIRE(ev.exit_code == 0);
    CHECK_THAT(ev.out, Contains("get-sum\teverything__get-sum\tread-only\tref: tool://everything/get.sum\t"));
}

TEST_CASE("airlock grants prints a manifest airlock accepts, granting the upstream's tools", "[peers]") {
    temp_dir root{"airlock-grants-root"};
    auto r = run_command({AIRLOCK_BINARY, "grants", "--server", filesystem_stdio(root.path()), "--name", "fs"});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    auto m = airlock::core::parse_manifest(r.out);
    REQUIRE(m.has_value());
    CHECK(m->tools.size() == 14);  // every tool server-filesystem 2026.8.31 offers
    auto const* reads = m->grant_for(*airlock::core::tool_id::parse("tool://fs/read_text_file"));
    auto const* writes = m->grant_for(*airlock::core::tool_id::parse("tool://fs/write_file"));
    REQUIRE(reads);
    REQUIRE(writes);
    CHECK_FALSE(reads->mutates);
    CHECK(writes->mutates);
    // airlock check says the same of the file as the parser.
    std::ofstream(root.path() / "fs.yaml") << r.out;
    auto checked = run_command({AIRLOCK_BINARY, "check", (root.path() / "fs.yaml").string()});
    INFO(checked.out);
    CHECK(checked.exit_code == 0);
    CHECK_THAT(checked.out, Contains("ok fs-grants 1 "));
}

TEST_CASE("airlock grants --read-only grants only the tools annotated read-only", "[peers]") {
    temp_dir root{"airlock-grants-root"};
    auto r = run_command({AIRLOCK_BINARY, "grants", "--server", filesystem_stdio(root.path()), "--name", "fs", "--read-only"});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    auto m = airlock::core::parse_manifest(r.out);
    REQUIRE(m.has_value());
    REQUIRE_FALSE(m->tools.empty());
    for (auto const& g : m->tools) {
        INFO(g.ref.uri());
        CHECK_FALSE(g.mutates);
    }
    CHECK(m->grant_for(*airlock::core::tool_id::parse("tool://fs/list_directory")));
    CHECK_FALSE(m->grant_for(*airlock::core::tool_id::parse("tool://fs/write_file")));
    CHECK_FALSE(m->grant_for(*airlock::core::tool_id::parse("tool://fs/move_file")));
}

TEST_CASE("airlock grants without --name says which server name its refs use", "[peers]") {
    auto r = run_command({AIRLOCK_BINARY, "grants", "--server", everything_stdio()});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("- ref: tool://upstream/get.sum\n      mutates: false\n"));
    CHECK_THAT(r.err, Contains("pass --name"));
}

TEST_CASE("airlock check --online names each grant of a tool an upstream lacks, with the closest it offers",
          "[peers]") {
    typo_deployment d;
    auto r = run_command({AIRLOCK_BINARY, "check", "--online", d.config.string()}, 90s);
    INFO(r.out << r.err);
    // Warnings, not errors: airlock serves the grants that are right.
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("ok upstream fs: 14 tools\n"));
    CHECK_THAT(r.out, Contains("ok upstream everything: "));
    for (auto const& w : typo_warnings) CHECK_THAT(r.out, Contains(d.config.string() + ": warning: principal alice: " + w));
    // The grants that are right are not named.
    CHECK_THAT(r.out, !Contains("tool://fs/read_text_file is granted"));
    CHECK_THAT(r.out, !Contains("tool://everything/echo is granted"));
    // Without --online nothing is contacted and nothing is said of the tools.
    auto offline = run_command({AIRLOCK_BINARY, "check", d.config.string()}, 60s);
    CHECK(offline.exit_code == 0);
    CHECK_THAT(offline.out, !Contains("offers no such tool"));
}

TEST_CASE("airlock check --online fails on an upstream whose tools cannot be listed, naming it", "[peers]") {
    typo_deployment d;
    auto text = slurp(d.config);
    auto at = text.find(peers::filesystem());
    text.replace(at, peers::filesystem().size(), (d.dir.path() / "missing.js").string());
    std::ofstream(d.config) << text;
    auto r = run_command({AIRLOCK_BINARY, "check", "--online", d.config.string()}, 90s);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Contains(d.config.string() + ": error: upstream fs: its tools could not be listed ("));
    CHECK_THAT(r.out, Contains("ok upstream everything: "));
}

TEST_CASE("airlock serve logs each grant of a tool an upstream lacks once its tools are listed, and again after a "
          "reload", "[peers]") {
    typo_deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    REQUIRE(airlock.wait_for_stderr_line("listening on http://", 30s));
    // The upstreams answer in either order, so the log is searched whole rather than line by line.
    std::vector<std::string> expected;
    for (auto const& w : typo_warnings)
        // The log is JSON lines: the message ends at the closing quote, where check's line ends.
        expected.push_back("principal alice: " + (w.back() == '\n' ? w.substr(0, w.size() - 1) + "\"" : w));
    auto const all_logged = [&] {
        auto const log = airlock.stderr_text();
        return std::all_of(expected.begin(), expected.end(), [&](auto const& e) { return log.find(e) != std::string::npos; });
    };
    for (int i = 0; i < 300 && !all_logged(); ++i) std::this_thread::sleep_for(100ms);
    for (auto const& e : expected) CHECK_THAT(airlock.stderr_text(), Contains(e));
    // Once each: the catalogue's later reads do not repeat it.
    auto const log = airlock.stderr_text();
    auto const first = log.find("tool://fs/read_txt_file is granted");
    CHECK(log.find("tool://fs/read_txt_file is granted", first + 1) == std::string::npos);

    // A reload with another mistake: the new grant is named once the new catalogue lists fs.
    std::ofstream(d.dir.path() / "alice.yaml") << R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: alice-desk, version: "2" }
spec:
  tools:
    - ref: tool://fs/list_allowed_directory
      mutates: false
  budgets: {}
)";
    airlock.signal(SIGHUP);
    INFO(airlock.stderr_text());
    CHECK(airlock.wait_for_stderr_line("principal alice: tool://fs/list_allowed_directory is granted but fs offers no "
                                       "such tool; did you mean tool://fs/list_allowed_directories?",
                                       30s));
    airlock.signal(SIGTERM);
    CHECK(airlock.wait() == 0);
}
