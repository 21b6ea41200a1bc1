#pragma once
// `airlock runs`: list the runs in a journal (agent runs and gateway sessions alike), filtered and paged.

#include <string>
#include <vector>

namespace airlock::service {

int run_runs(std::vector<std::string> const& args);

}  // namespace airlock::service
