#pragma once
// A child process for end-to-end tests: started from an argv (no shell), its output captured, and
// always stopped — the destructor kills it, so a failing test leaves nothing running. A thread
// reads its stdout and stderr as they come, so a chatty child (airlock logs a line per request)
// never blocks on a full pipe while the test is busy elsewhere.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace airlock::testing {

// The child's stdin: /dev/null (it reads end of input at once), or a pipe the test writes to and
// ends with close_stdin().
enum class child_stdin { null_device, pipe };

class child_process {
public:
    // Starts argv[0] (looked up in PATH when it has no '/'). Throws std::runtime_error when it cannot.
    explicit child_process(std::vector<std::string> argv, std::vector<std::string> extra_env = {},
                           child_stdin in = child_stdin::null_device);
    ~child_process();
    child_process(child_process const&) = delete;
    child_process& operator=(child_process const&) = delete;

    // Reads stderr until a line contains `needle` or the deadline passes; returns that line.
    std::optional<std::string> wait_for_stderr_line(std::string const& needle, std::chrono::milliseconds deadline);
    // Waits for exit (killing with SIGKILL past the deadline); returns the exit code, or 128+signal.
    int wait(std::chrono::milliseconds deadline = std::chrono::seconds(30));
    // Sends a signal.
    void signal(int sig);
    // With child_stdin::pipe: writes all of `text` to the child's stdin (false when it cannot), or
    // closes it, which the child reads as end of input.
    bool write_stdin(std::string const& text);
    void close_stdin();
    // Everything captured so far.
    std::string stdout_text() const;
    std::string stderr_text() const;
    int pid() const noexcept { return pid_; }

private:
    void read_loop();
    int pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    int in_fd_ = -1;
    int wake_[2] = {-1, -1};  // written to stop the reader
    std::optional<int> exit_code_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::string out_;
    std::string err_;
    bool out_open_ = true;
    bool err_open_ = true;
    std::size_t err_scanned_ = 0;
    std::thread reader_;
};

// Runs a command to completion and returns {exit code, stdout, stderr}.
struct command_result {
    int exit_code;
    std::string out;
    std::string err;
};
command_result run_command(std::vector<std::string> argv, std::chrono::milliseconds deadline = std::chrono::seconds(60));

}  // namespace airlock::testing
