#pragma once
// SIGHUP: `airlock serve` reads its configuration file again and, when it loads and builds,
// replaces what serves with it (reload_plan.hpp decides what; reload.cpp does it).

#include "service/app/serving.hpp"

#include <memory>

namespace airlock::service {

// Starts a reload on its own strand; one that comes during a reload runs once more after it, with
// the file as it is then. Never throws; every outcome is logged.
void request_reload(std::shared_ptr<serving> const& sv);

}  // namespace airlock::service
