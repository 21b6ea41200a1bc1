#pragma once
// What `airlock serve` prints for a person at a terminal once it listens: where each part is served,
// and three commands to try against this very configuration (its address, principal and agent),
// written to be pasted as they are from the directory airlock was started in.

#include "service/config/config.hpp"

#include <string>

namespace airlock::service {

// `base_url` is what the server bound, e.g. "http://127.0.0.1:8080" (a unix socket: "unix:/path").
std::string start_hints(config const& c, std::string const& base_url);

}  // namespace airlock::service
