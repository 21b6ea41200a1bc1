#pragma once
// `airlock tools`, `airlock call` and `airlock grants`: talk to one upstream MCP server by hand, to
// debug it or to write the grants of its tools.

#include <string>
#include <vector>

namespace airlock::service {

int run_tools(std::vector<std::string> const& args);
int run_call(std::vector<std::string> const& args);
int run_grants(std::vector<std::string> const& args);

// Splits a command line the way a user means it: whitespace separates, '...' and "..." group,
// backslash escapes the next character. No expansion of any kind happens.
bool split_command_line(std::string const& text, std::vector<std::string>& out, std::string& problem);

}  // namespace airlock::service
