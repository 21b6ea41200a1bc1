#pragma once
// One airlock deployment for the crash rounds: a temporary directory with a durable LMDB journal,
// the counting upstream (every call it performs logged by effect key, synchronously) and
// server-everything beside it, a trusted gateway principal, an operator, and two scripted agents:
// `counter` (two adds and a peek) and `reviewed` (one add held for an approval). The real
// `airlock serve` binary runs it on a free loopback port.

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace airlock::crash {

inline constexpr char gateway_token[] = "crash-gateway-0123456789abcdef";
inline constexpr char operator_token[] = "crash-operator-0123456789abcdef";

struct deployment_options {
    std::string map_size = "1GiB";
    std::string counter_deadline = "3s";  // a hung counter call ends this soon (the SIGSTOP scenario)
    int counter_delay_ms = 40;            // how long each counter call takes, so kills land mid-call
};

class deployment {
public:
    explicit deployment(std::string const& name, deployment_options options = {});
    ~deployment();
    deployment(deployment const&) = delete;
    deployment& operator=(deployment const&) = delete;

    // Starts `airlock serve` and waits for it to listen; on failure returns what it printed.
    std::optional<std::string> start(std::vector<std::string> const& prefix = {});
    void kill9();                       // SIGKILL, then reaps it
    int stop();                         // SIGTERM and its exit code
    bool running() const noexcept { return airlock_ != nullptr; }
    int pid() const;
    std::uint16_t port() const noexcept { return port_; }
    std::string stderr_text() const;
    // Waits for a starting airlock to end by itself (the refused starts), its exit code and output.
    int wait_exit(std::chrono::milliseconds deadline, std::string& output);

    std::filesystem::path const& dir() const noexcept { return dir_.path(); }
    std::filesystem::path journal() const { return dir_.path() / "journal"; }
    std::filesystem::path counter_log() const { return dir_.path() / "calls.log"; }
    std::filesystem::path config() const { return dir_.path() / "airlock.yaml"; }

    // Writes the configuration (again): a later start reads it.
    void write_files(deployment_options const& options);

private:
    testing::temp_dir dir_;
    std::unique_ptr<testing::child_process> airlock_;
    std::uint16_t port_ = 0;
};

// The pid of airlock's child whose command line contains `needle`, or -1.
int child_pid(int parent, std::string const& needle);

// `airlock ARGS...` run to completion.
testing::command_result airlock_command(std::vector<std::string> args);

}  // namespace airlock::crash
