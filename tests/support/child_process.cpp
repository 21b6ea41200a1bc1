#include "tests/support/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace airlock::testing {

namespace {
using clock = std::chrono::steady_clock;

int remaining_ms(clock::time_point until) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock::now()).count();
    return left < 0 ? 0 : static_cast<int>(left);
}
}  // namespace

child_process::child_process(std::vector<std::string> argv, std::vector<std::string> extra_env, child_stdin in) {
    int out_pipe[2], err_pipe[2], in_pipe[2] = {-1, -1};
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe failed");
    if (in == child_stdin::pipe) {
        if (pipe2(in_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
        // A child that exits before reading must fail the test's write, not kill the test with SIGPIPE.
        ::signal(SIGPIPE, SIG_IGN);
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (in == child_stdin::pipe) posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
    else posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);

    std::vector<std::string> env_strings;
    // An extra entry replaces the inherited one of the same name: with both in the block, getenv
    // would find the inherited one first.
    auto named = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
    for (char** e = environ; *e; ++e) {
        std::string_view inherited(*e);
        bool replaced = std::any_of(extra_env.begin(), extra_env.end(),
                                    [&](std::string const& x) { return named(x) == named(inherited); });
        if (!replaced) env_strings.emplace_back(inherited);
    }
    for (auto& e : extra_env) env_strings.push_back(e);
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);

    int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (in_pipe[0] >= 0) close(in_pipe[0]);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    in_fd_ = in_pipe[1];
    if (rc != 0) {
        close(out_fd_);
        close(err_fd_);
        close_stdin();
        throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
    }
    if (pipe2(wake_, O_CLOEXEC) != 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        close(out_fd_);
        close(err_fd_);
        close_stdin();
        throw std::runtime_error("pipe failed");
    }
    reader_ = std::thread([this] { read_loop(); });
}

child_process::~child_process() {
    if (!exit_code_ && pid_ > 0) {
        kill(pid_, SIGKILL);
        int status = 0;
        waitpid(pid_, &status, 0);
    }
    // A grandchild may still hold the pipes open: the reader is told to stop rather than awaited to EOF.
    char stop = 1;
    [[maybe_unused]] auto n = write(wake_[1], &stop, 1);
    reader_.join();
    close_stdin();
    for (int fd : {out_fd_, err_fd_, wake_[0], wake_[1]})
        if (fd >= 0) close(fd);
}

bool child_process::write_stdin(std::string const& text) {
    std::size_t sent = 0;
    while (in_fd_ >= 0 && sent < text.size()) {
        ssize_t n = write(in_fd_, text.data() + sent, text.size() - sent);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        sent += static_cast<std::size_t>(n);
    }
    return in_fd_ >= 0;
}

void child_process::close_stdin() {
    if (in_fd_ >= 0) close(in_fd_);
    in_fd_ = -1;
}

void child_process::read_loop() {
    char buf[65536];
    bool out_open = true, err_open = true;
    while (out_open || err_open) {
        pollfd p[3] = {{out_open ? out_fd_ : -1, POLLIN, 0}, {err_open ? err_fd_ : -1, POLLIN, 0}, {wake_[0], POLLIN, 0}};
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[2].revents) break;
        for (int i = 0; i < 2; ++i) {
            if (!p[i].revents) continue;
            ssize_t n = read(p[i].fd, buf, sizeof buf);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            std::lock_guard lock(mutex_);
            if (n > 0) {
                (i == 0 ? out_ : err_).append(buf, static_cast<std::size_t>(n));
            } else {
                (i == 0 ? out_open : err_open) = false;
                (i == 0 ? out_open_ : err_open_) = false;
            }
            changed_.notify_all();
        }
    }
    std::lock_guard lock(mutex_);
    out_open_ = err_open_ = false;
    changed_.notify_all();
}

std::optional<std::string> child_process::wait_for_stderr_line(std::string const& needle,
                                                               std::chrono::milliseconds deadline) {
    auto until = clock::now() + deadline;
    std::unique_lock lock(mutex_);
    for (;;) {
        for (;;) {
            auto nl = err_.find('\n', err_scanned_);
            if (nl == std::string::npos) break;
            auto line = err_.substr(err_scanned_, nl - err_scanned_);
            err_scanned_ = nl + 1;
            if (line.find(needle) != std::string::npos) return line;
        }
        if (!err_open_ || clock::now() >= until) return std::nullopt;
        changed_.wait_until(lock, std::min(until, clock::now() + std::chrono::milliseconds(200)));
    }
}

int child_process::wait(std::chrono::milliseconds deadline) {
    if (exit_code_) return *exit_code_;
    auto until = clock::now() + deadline;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) break;
        if (remaining_ms(until) == 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    {
        // What the child wrote before it exited; a grandchild holding the pipes open is not waited for long.
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, std::chrono::seconds(5), [&] { return !out_open_ && !err_open_; });
    }
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return *exit_code_;
}

void child_process::signal(int sig) {
    if (!exit_code_) kill(pid_, sig);
}

std::string child_process::stdout_text() const {
    std::lock_guard lock(mutex_);
    return out_;
}

std::string child_process::stderr_text() const {
    std::lock_guard lock(mutex_);
    return err_;
}

command_result run_command(std::vector<std::string> argv, std::chrono::milliseconds deadline) {
    child_process p(std::move(argv));
    int code = p.wait(deadline);
    return {code, p.stdout_text(), p.stderr_text()};
}

}  // namespace airlock::testing
