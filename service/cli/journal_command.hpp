#pragma once
// `airlock journal verify|show|export|import`: inspect and move runs of an LMDB journal.

#include <string>
#include <vector>

namespace airlock::service {

int run_journal(std::vector<std::string> const& args);

}  // namespace airlock::service
