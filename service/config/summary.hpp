#pragma once
// The configuration as `airlock check CONFIG` prints it.

#include "service/config/config.hpp"

#include <ostream>
#include <string>

namespace airlock::service {

// Human-readable, for `airlock check CONFIG`: listen address, journal, signing, upstreams and their
// egress status, egress entries, principals and their grant counts, warnings. Never a secret.
std::string summary(config const& c);
// Where the journal is, for logs and summaries: its directory, or "postgres:" and the database's
// URL with any password shown as ***.
std::string journal_location(config const& c);
// The summary, so test frameworks and logs can print a result<config> directly.
std::ostream& operator<<(std::ostream& os, config const& c);

}  // namespace airlock::service
