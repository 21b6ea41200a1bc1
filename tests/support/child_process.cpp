#include "tests/support/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
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

child_process::child_process(std::vector<std::string> argv, std::vector<std::string> extra_env) {
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);

    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
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
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    if (rc != 0) {
        close(out_fd_);
        close(err_fd_);
        throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
    }
    fcntl(out_fd_, F_SETFL, O_NONBLOCK);
    fcntl(err_fd_, F_SETFL, O_NONBLOCK);
}

child_process::~child_process() {
    if (!exit_code_ && pid_ > 0) {
        kill(pid_, SIGKILL);
        int status = 0;
        waitpid(pid_, &status, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
}

void child_process::drain(bool block_until_eof) {
    char buf[65536];
    for (int* fd : {&out_fd_, &err_fd_}) {
        if (*fd < 0) continue;
        for (;;) {
            ssize_t n = read(*fd, buf, sizeof buf);
            if (n > 0) {
                (fd == &out_fd_ ? out_ : err_).append(buf, static_cast<std::size_t>(n));
                continue;
            }
            if (n == 0) {
                close(*fd);
                *fd = -1;
            } else if (errno == EAGAIN && block_until_eof) {
                pollfd p{*fd, POLLIN, 0};
                poll(&p, 1, 100);
                continue;
            }
            break;
        }
    }
}

std::optional<std::string> child_process::wait_for_stderr_line(std::string const& needle,
                                                               std::chrono::milliseconds deadline) {
    auto until = clock::now() + deadline;
    for (;;) {
        drain(false);
        for (;;) {
            auto nl = err_.find('\n', err_scanned_);
            if (nl == std::string::npos) break;
            auto line = err_.substr(err_scanned_, nl - err_scanned_);
            err_scanned_ = nl + 1;
            if (line.find(needle) != std::string::npos) return line;
        }
        if (err_fd_ < 0 || remaining_ms(until) == 0) return std::nullopt;
        pollfd p{err_fd_, POLLIN, 0};
        poll(&p, 1, std::min(remaining_ms(until), 200));
    }
}

int child_process::wait(std::chrono::milliseconds deadline) {
    if (exit_code_) return *exit_code_;
    auto until = clock::now() + deadline;
    int status = 0;
    for (;;) {
        drain(false);
        pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) break;
        if (remaining_ms(until) == 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    drain(true);
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return *exit_code_;
}

void child_process::signal(int sig) {
    if (!exit_code_) kill(pid_, sig);
}

std::string const& child_process::stdout_text() {
    drain(false);
    return out_;
}

std::string const& child_process::stderr_text() {
    drain(false);
    return err_;
}

command_result run_command(std::vector<std::string> argv, std::chrono::milliseconds deadline) {
    child_process p(std::move(argv));
    int code = p.wait(deadline);
    return {code, p.stdout_text(), p.stderr_text()};
}

}  // namespace airlock::testing
