#include "mcp/client/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace airlock::mcp {

namespace {

core::error not_sent(std::string message) { return core::make_error("not_sent", std::move(message)); }

// The child's whole environment: what is configured for it and PATH, nothing of the parent's own
// (airlock's keys and tokens must never reach a tool server).
core::result<std::vector<std::string>> child_environment(child_spec const& spec, std::string const& path_var) {
    std::vector<std::string> out;
    for (auto const& [k, v] : spec.env) {
        if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos)
            return not_sent("env: '" + k + "' is not a valid variable name");
        if (k != "PATH") out.push_back(k + "=" + v);
    }
    out.push_back("PATH=" + path_var);
    return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

// Three pipes, closed together on any failure and by the destructor unless released.
struct pipe_set {
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};

    pipe_set() = default;
    pipe_set(pipe_set const&) = delete;
    pipe_set& operator=(pipe_set const&) = delete;
    ~pipe_set() { close_all(); }

    bool open() { return ::pipe2(in, O_CLOEXEC) == 0 && ::pipe2(out, O_CLOEXEC) == 0 && ::pipe2(err, O_CLOEXEC) == 0; }

    void close_child_ends() {
        close_one(in[0]);
        close_one(out[1]);
        close_one(err[1]);
    }

    void close_all() {
        for (int* p : {in, out, err})
            for (int i = 0; i < 2; ++i) close_one(p[i]);
    }

    static void close_one(int& fd) {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
};

pid_t spawn_with(std::string const& exe, child_spec const& spec, pipe_set const& pipes, char* const* args,
                 char* const* envp, int& rc) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipes.in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, pipes.out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pipes.err[1], 2);
    // Asio does not open sockets close-on-exec; without this the child would inherit airlock's
    // listening sockets and database files.
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    if (spec.cwd) posix_spawn_file_actions_addchdir_np(&fa, spec.cwd->c_str());

    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Its own process group, so shutdown signals reach what the server started (a shell
    // wrapper's node, npx's child) and a terminal's Ctrl-C reaches airlock alone, which then
    // stops its children in the spec's order.
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);  // their dispositions cannot be changed; asking would only be noise
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);  // undo airlock's SIGPIPE ignore and friends
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    pid_t pid = -1;
    rc = ::posix_spawn(&pid, exe.c_str(), &fa, &attr, args, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return pid;
}

}  // namespace

std::string child_path(child_spec const& spec) {
    if (auto it = spec.env.find("PATH"); it != spec.env.end()) return it->second;
    if (char const* own = std::getenv("PATH")) return own;
    return "/usr/local/bin:/usr/bin:/bin";
}

// Resolving here (not with posix_spawnp) searches the PATH the child gets and turns "not found"
// into a clear error instead of a failed exec.
std::optional<std::string> resolve_executable(std::string const& argv0, std::string const& path_var) {
    auto runnable = [](std::string const& p) {
        struct stat st {};
        return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
    };
    if (argv0.find('/') != std::string::npos) return runnable(argv0) ? std::optional(argv0) : std::nullopt;
    std::size_t start = 0;
    for (;;) {
        auto end = path_var.find(':', start);
        auto dir = path_var.substr(start, end == std::string::npos ? std::string::npos : end - start);
        auto candidate = (dir.empty() ? std::string(".") : dir) + "/" + argv0;
        if (runnable(candidate)) return candidate;
        if (end == std::string::npos) return std::nullopt;
        start = end + 1;
    }
}

std::string describe_wait_status(bool known, int status) {
    if (!known) return "exited (status unknown: reaped elsewhere)";
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        char const* abbrev = sigabbrev_np(WTERMSIG(status));
        return "was killed by signal " + std::to_string(WTERMSIG(status)) +
               (abbrev ? std::string(" (SIG") + abbrev + ")" : std::string());
    }
    return "ended with wait status " + std::to_string(status);
}

core::result<started_child> spawn_child(child_spec const& spec) {
    auto const& argv = spec.argv;
    if (argv.empty() || argv.front().empty()) return not_sent("no command is configured (argv is empty)");
    auto path_var = child_path(spec);
    auto exe = resolve_executable(argv.front(), path_var);
    if (!exe)
        return not_sent("'" + argv.front() + "' is not an executable file" +
                        (argv.front().find('/') == std::string::npos ? " in PATH" : ""));
    auto env_strings = child_environment(spec, path_var);
    if (!env_strings) return env_strings.error();
    auto envp = c_strings(*env_strings);
    std::vector<std::string> arg_strings(argv);
    auto args = c_strings(arg_strings);

    pipe_set pipes;
    if (!pipes.open()) return not_sent(std::string("pipe: ") + std::strerror(errno));
    int rc = 0;
    pid_t pid = spawn_with(*exe, spec, pipes, args.data(), envp.data(), rc);
    pipes.close_child_ends();
    if (rc != 0) return not_sent("cannot start " + argv.front() + ": " + std::strerror(rc));

    started_child out{std::make_shared<child_process>(pid), {}};
    out.pipes.in = std::exchange(pipes.in[1], -1);
    out.pipes.out = std::exchange(pipes.out[0], -1);
    out.pipes.err = std::exchange(pipes.err[0], -1);
    // A pidfd turns "the child exited" into readiness a reactor waits on, with no SIGCHLD
    // handler (process-wide, and airlock's signal set belongs to the service).
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd >= 0) {
        ::fcntl(pidfd, F_SETFD, FD_CLOEXEC);
        out.pipes.pidfd = pidfd;
    }
    return out;
}

void child_process::signal(int sig) {
    std::lock_guard lock(mutex_);
    if (!reaped_) ::kill(-pid_, sig);
}

bool child_process::try_reap() {
    std::lock_guard lock(mutex_);
    if (reaped_) return true;
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno == ECHILD) reaped_ = true;  // someone else reaped it (SIGCHLD ignored, or a stray waitpid(-1))
        return reaped_;
    }
    if (info.si_pid == 0) return false;
    ::kill(-pid_, SIGKILL);
    reap_locked();
    return true;
}

void child_process::wait() {
    std::lock_guard lock(mutex_);
    if (reaped_) return;
    siginfo_t info{};
    int r;
    do {
        r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT);
    } while (r != 0 && errno == EINTR);
    if (r != 0) {
        if (errno == ECHILD) reaped_ = true;
        return;
    }
    ::kill(-pid_, SIGKILL);  // as try_reap: what it left in its group goes with it
    reap_locked();
}

void child_process::kill_and_reap() {
    std::lock_guard lock(mutex_);
    if (reaped_) return;
    ::kill(-pid_, SIGKILL);
    reap_locked();
}

bool child_process::reaped() const {
    std::lock_guard lock(mutex_);
    return reaped_;
}

std::string child_process::how_it_ended() const {
    std::lock_guard lock(mutex_);
    return describe_wait_status(status_known_, wait_status_);
}

void child_process::reap_locked() {
    int status = 0;
    pid_t r;
    do {
        r = ::waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
    reaped_ = true;
    status_known_ = r == pid_;
    wait_status_ = status;
}

void ignore_sigpipe() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction current {};
        if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
    });
}

}  // namespace airlock::mcp
