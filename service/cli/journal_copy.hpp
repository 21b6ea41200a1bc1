#pragma once
// `airlock journal copy --from STORE --to STORE` and `airlock journal migrate-schema --postgres URL`:
// moving a journal between LMDB and PostgreSQL, every chain verified on the way, and bringing a
// PostgreSQL journal's schema to this airlock's version.

#include <string>
#include <vector>

namespace airlock::service::cli {

// True when `args` (everything after `journal`) is `copy …` or `migrate-schema …`.
bool is_journal_copy(std::vector<std::string> const& args);
int run_journal_copy(std::vector<std::string> const& args);

}  // namespace airlock::service::cli
