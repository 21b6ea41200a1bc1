#pragma once
// `airlock check FILE`: validates an agent manifest and prints its identity and digest.

#include <string>
#include <vector>

namespace airlock::service {

int run_check(std::vector<std::string> const& args);

}  // namespace airlock::service
