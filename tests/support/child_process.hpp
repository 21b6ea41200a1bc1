#pragma once
// A child process for end-to-end tests: started from an argv (no shell), its output captured, and
// always stopped — the destructor kills it, so a failing test leaves nothing running.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace airlock::testing {

class child_process {
public:
    // Starts argv[0] (looked up in PATH when it has no '/'). Throws std::runtime_error when it cannot.
    explicit child_process(std::vector<std::string> argv, std::vector<std::string> extra_env = {});
    ~child_process();
    child_process(child_process const&) = delete;
    child_process& operator=(child_process const&) = delete;

    // Reads stderr until a line contains `needle` or the deadline passes; returns that line.
    std::optional<std::string> wait_for_stderr_line(std::string const& needle, std::chrono::milliseconds deadline);
    // Waits for exit (killing with SIGKILL past the deadline); returns the exit code, or 128+signal.
    int wait(std::chrono::milliseconds deadline = std::chrono::seconds(30));
    // Sends a signal.
    void signal(int sig);
    // Everything captured so far (drains what is readable without blocking).
    std::string const& stdout_text();
    std::string const& stderr_text();
    int pid() const noexcept { return pid_; }

private:
    void drain(bool block_until_eof);
    int pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    std::optional<int> exit_code_;
    std::string out_;
    std::string err_;
    std::size_t err_scanned_ = 0;
};

// Runs a command to completion and returns {exit code, stdout, stderr}.
struct command_result {
    int exit_code;
    std::string out;
    std::string err;
};
command_result run_command(std::vector<std::string> argv, std::chrono::milliseconds deadline = std::chrono::seconds(60));

}  // namespace airlock::testing
