#pragma once
// The crash rounds' separate scenarios, each against a real airlock: an upstream stopped (SIGSTOP)
// mid-call, a journal whose map is full, a journal on a full disk (a small tmpfs), and a journal
// directory airlock may not write.

#include "tests/crash/deployment.hpp"

#include <string>

namespace airlock::crash {

struct scenario_result {
    std::string name;
    enum { passed, failed, skipped } verdict = failed;
    std::string detail;  // what it saw, or why it failed or was skipped
};

// Needs `d` serving; leaves it serving.
scenario_result stopped_upstream(deployment& d);
scenario_result full_map();
scenario_result full_disk();
scenario_result read_only_journal();

}  // namespace airlock::crash
