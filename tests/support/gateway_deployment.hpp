#pragma once
// A gateway deployment for end-to-end tests of `airlock serve`: a temporary directory with one
// stdio upstream (server-everything), egress allowing exactly it, and principal alice granted
// everything__get-sum and everything__echo; plus the port a started airlock reports.

#include "tests/support/child_process.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <regex>
#include <string>

namespace airlock::testing {

struct gateway_deployment {
    temp_dir dir{"airlock-gateway"};
    std::filesystem::path config = dir.path() / "airlock.yaml";

    // `stdio_extra` goes inside the upstream's stdio mapping (", env_from: {...}"); `extra` after the
    // principals list (more principals, or further top-level sections).
    explicit gateway_deployment(std::string const& alice_token, std::string const& extra = "",
                                std::string const& stdio_extra = "") {
        write_secret("alice.token", alice_token + "\n");
        std::ofstream(dir.path() / "alice.yaml") << R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: alice-desk, version: "1" }
spec:
  tools:
    - ref: tool://everything/get.sum
      mutates: false
    - ref: tool://everything/echo
      mutates: false
  budgets: {}
)";
        std::ofstream(config) << "journal: { dir: journal }\n"
                              << "upstreams:\n  - name: everything\n    stdio: { argv: [\"" << peers::node() << "\", \""
                              << peers::everything() << "\", stdio]" << stdio_extra << " }\n"
                              << "egress:\n  - process: \"" << peers::node() << "\"\n"
                              << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n"
                              << extra;
    }

    // A file only its owner reads, as airlock wants secrets kept.
    void write_secret(std::string const& name, std::string const& text) const {
        std::ofstream(dir.path() / name) << text;
        ::chmod((dir.path() / name).c_str(), 0600);
    }
};

// Waits for the line `airlock serve` logs once it listens and returns the loopback port it names.
inline std::uint16_t wait_listening(child_process& p, std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    auto line = p.wait_for_stderr_line("listening on http://", deadline);
    REQUIRE(line.has_value());
    std::smatch m;
    REQUIRE(std::regex_search(*line, m, std::regex(R"(127\.0\.0\.1:(\d+))")));
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}

}  // namespace airlock::testing
