#pragma once
// `airlock stdio`: one MCP client on stdin/stdout, for hosts that spawn their servers.

#include <string>
#include <vector>

namespace airlock::service {

// Serves one MCP client on stdin/stdout until end of input or SIGTERM/SIGINT; logs go to stderr only.
int run_stdio(std::vector<std::string> const& args);

}  // namespace airlock::service
