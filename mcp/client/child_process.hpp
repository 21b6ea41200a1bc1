#pragma once
// A child process as the stdio transport runs one: the program found on the PATH the child gets,
// an environment of only what is configured (plus PATH), its stdin, stdout and stderr on pipes,
// its own process group, and a reaping that is safe to race with a destructor on another thread.
// No Asio: the caller wraps the pipe ends it is given in whatever it reads and writes with.

#include "core/error.hpp"

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace airlock::mcp {

// What to run.
struct child_spec {
    std::vector<std::string> argv;           // argv[0] is looked up in PATH when it has no '/'
    std::map<std::string, std::string> env;  // the child's whole environment, plus PATH
    std::optional<std::string> cwd;          // its working directory; the parent's when absent
};

// The PATH a child of `spec` gets: its configured one, else the parent's, else a default.
std::string child_path(child_spec const& spec);

// The executable argv0 names: as given when it contains '/', else the first executable regular
// file along `path_var` (an empty entry is the working directory); nullopt when there is none.
std::optional<std::string> resolve_executable(std::string const& argv0, std::string const& path_var);

// "exited with status 3", "was killed by signal 9 (SIGKILL)", ...; `known` false when another
// part of the process reaped the child and its status is lost.
std::string describe_wait_status(bool known, int status);

// The parent's ends of the child's pipes (close-on-exec, blocking until the caller says otherwise)
// and a pidfd when the kernel has them (-1 otherwise). The caller owns and closes every one.
struct child_pipes {
    int in = -1;   // the child's stdin, to write
    int out = -1;  // its stdout, to read
    int err = -1;  // its stderr, to read
    int pidfd = -1;  // readable once the child has exited
};

// One started child, from spawn to reaping. Every member may be called from any thread.
class child_process {
public:
    explicit child_process(pid_t pid) : pid_(pid) {}
    child_process(child_process const&) = delete;
    child_process& operator=(child_process const&) = delete;

    pid_t pid() const noexcept { return pid_; }

    // Sends `sig` to the child's process group while the leader is unreaped: until then its pid
    // cannot name another process, afterwards it could.
    void signal(int sig);
    // Reaps the child if it has exited (what it left in its process group is killed); true once reaped.
    bool try_reap();
    // Blocks until the child exits, then reaps it (the other members wait meanwhile).
    void wait();
    // Kills the process group and reaps: the child is gone when this returns, whatever its state.
    void kill_and_reap();
    bool reaped() const;
    // How it ended (describe_wait_status), once reaped.
    std::string how_it_ended() const;

private:
    void reap_locked();

    pid_t const pid_;
    mutable std::mutex mutex_;
    bool reaped_ = false;
    bool status_known_ = false;
    int wait_status_ = 0;
};

struct started_child {
    std::shared_ptr<child_process> process;
    child_pipes pipes;
};

// Starts `spec` in its own process group with default signal dispositions and an empty signal
// mask, and no descriptor of the parent's but the three pipes. Fails "not_sent" with a message
// that names what is wrong (no argv, a program not found, a bad variable name, pipe or spawn errors).
core::result<started_child> spawn_child(child_spec const& spec);

// Writing to a child that has exited raises SIGPIPE, whose default action would end the process.
// Asio guards sockets with MSG_NOSIGNAL but not pipes, so the signal is ignored process-wide —
// only if nobody chose a disposition for it already. Idempotent and thread-safe.
void ignore_sigpipe();

}  // namespace airlock::mcp
