#pragma once
// The TELLER example as shipped (examples/teller.yaml, examples/teller.script.yaml, the ledger MCP
// server examples/ledger/server.mjs over stdio), configured with its journal in a test's directory.

#include "tests/support/file_text.hpp"
#include "tests/support/peers.hpp"

#include <filesystem>
#include <fstream>
#include <string>

namespace airlock::testing::teller {

inline std::string source(std::string const& rel) { return std::string(AIRLOCK_SOURCE_DIR) + "/" + rel; }
inline std::string manifest() { return source("examples/teller.yaml"); }
inline std::string script() { return source("examples/teller.script.yaml"); }

// The upstream, egress and journal sections: the ledger over stdio, the journal in `dir`/journal.
inline std::string ledger_sections() {
    auto node = peers::node();
    return "journal: { dir: journal }\n"
           "upstreams:\n  - name: ledger\n    stdio: { argv: [" + node + ", " + source("examples/ledger/server.mjs") +
           "] }\n"
           "egress:\n  - process: " + node + "\n  - local\n";
}

// `dir`/airlock.yaml: the ledger, and the agent of `manifest_file` playing the example's script.
// `more` is appended as it is (more sections, or more egress entries right after egress's).
inline std::filesystem::path write_config(std::filesystem::path const& dir, std::string const& manifest_file,
                                          std::string const& more = "") {
    auto file = dir / "airlock.yaml";
    std::ofstream(file) << ledger_sections() << more << "agents:\n  - { manifest: " << manifest_file
                        << ", script: " << script() << " }\n";
    return file;
}

// A copy of the example's manifest in `dir` with `from` replaced by `to` (which must be found).
inline std::filesystem::path edited_manifest(std::filesystem::path const& dir, std::string const& name,
                                             std::string const& from, std::string const& to) {
    auto yaml = file_text(manifest());
    auto at = yaml.find(from);
    if (at == std::string::npos) throw std::runtime_error("examples/teller.yaml no longer contains: " + from);
    yaml.replace(at, from.size(), to);
    auto file = dir / name;
    std::ofstream(file) << yaml;
    return file;
}

}  // namespace airlock::testing::teller
