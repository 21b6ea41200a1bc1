#pragma once
// Timestamps as journal records and the REST API write them: RFC 3339 UTC, whole seconds.

#include <chrono>
#include <string>

namespace airlock::service {

// "2026-11-30T10:59:50Z"
std::string rfc3339(std::chrono::system_clock::time_point t);

}  // namespace airlock::service
