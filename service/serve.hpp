#pragma once
// `airlock serve`: the long-running HTTP service.

#include <string>
#include <vector>

namespace airlock::service {

// Runs until SIGINT/SIGTERM; returns the process exit code.
int run_serve(std::vector<std::string> const& args);

}  // namespace airlock::service
