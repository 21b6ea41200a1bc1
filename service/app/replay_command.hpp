#pragma once
// `airlock replay`: a journaled run re-run from the journal alone.

#include <string>
#include <vector>

namespace airlock::service {

// `airlock replay --config FILE RUN`: strict replay of one run; exit 1 on divergence.
int run_replay(std::vector<std::string> const& args);

}  // namespace airlock::service
