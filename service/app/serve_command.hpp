#pragma once
// `airlock serve`: the HTTP service (MCP at /mcp, the REST API at /v1, health and metrics).

#include <string>
#include <vector>

namespace airlock::service {

// Runs until SIGINT/SIGTERM; returns the process exit code.
int run_serve(std::vector<std::string> const& args);

}  // namespace airlock::service
