#pragma once
// `airlock serve` (the HTTP service) and `airlock stdio` (one MCP client on stdin/stdout).

#include <string>
#include <vector>

namespace airlock::service {

// Runs until SIGINT/SIGTERM; returns the process exit code.
int run_serve(std::vector<std::string> const& args);
// `airlock replay --config FILE RUN`: strict replay of one run; exit 1 on divergence.
int run_replay(std::vector<std::string> const& args);
// Serves one MCP client on stdin/stdout until end of input; logs go to stderr only.
int run_stdio(std::vector<std::string> const& args);

}  // namespace airlock::service
