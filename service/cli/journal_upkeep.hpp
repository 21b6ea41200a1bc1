#pragma once
// `airlock journal prune | backup | compact | export --all`: keeping a journal's size in hand over
// months, and copies of it that verify.

#include <string>
#include <vector>

namespace airlock::service::cli {

// True when `args` (everything after `journal`) names one of these actions, which run_journal_upkeep takes.
bool is_journal_upkeep(std::vector<std::string> const& args);
int run_journal_upkeep(std::vector<std::string> const& args);

}  // namespace airlock::service::cli
