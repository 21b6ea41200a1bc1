#pragma once
// The repository as a fresh checkout has it after `make`, in a temporary directory: examples/
// copied (so the example configuration's ../var lands in the temporary directory), the npm peers
// reached where a checkout has them, and the built binary at build/service/airlock, the path the
// README's commands name. Commands run from its top directory, as a user types them there.

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace airlock::testing {

struct checkout_copy {
    temp_dir dir{"airlock-checkout"};
    checkout_copy() {
        namespace fs = std::filesystem;
        fs::copy(fs::path(AIRLOCK_SOURCE_DIR) / "examples", dir.path() / "examples", fs::copy_options::recursive);
        fs::create_directories(dir.path() / "tests" / "peers");
        fs::create_directory_symlink(fs::path(AIRLOCK_PEERS_DIR) / "node_modules",
                                     dir.path() / "tests" / "peers" / "node_modules");
        fs::create_directories(dir.path() / "build" / "service");
        fs::create_symlink(AIRLOCK_BINARY, dir.path() / "build" / "service" / "airlock");
    }
    // `airlock serve` started from the copy's top directory, as `make run` starts it from the
    // checkout's, on a free port.
    std::unique_ptr<child_process> serve(std::string const& hints_flag) const {
        auto cmd = "cd '" + dir.path().string() + "' && exec '" + std::string(AIRLOCK_BINARY) +
                   "' serve --config examples/airlock.yaml --listen 127.0.0.1:0 " + hints_flag;
        return std::make_unique<child_process>(std::vector<std::string>{"/bin/bash", "-c", cmd});
    }
    // A command pasted into a shell in the same directory.
    command_result paste(std::string const& command) const {
        return run_command({"/bin/bash", "-c", "cd '" + dir.path().string() + "' && " + command},
                           std::chrono::seconds(60));
    }
};

// Waits until stdout holds `needle` (the hints are written once the server listens).
inline bool wait_for_stdout(child_process& p, std::string const& needle) {
    for (int i = 0; i < 300; ++i) {
        if (p.stdout_text().find(needle) != std::string::npos) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

}  // namespace airlock::testing
