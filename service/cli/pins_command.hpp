#pragma once
// `airlock pins list|accept`: the pinned tool definitions (rug-pull protection) of a journal.

#include <string>
#include <vector>

namespace airlock::service {

int run_pins(std::vector<std::string> const& args);

}  // namespace airlock::service
