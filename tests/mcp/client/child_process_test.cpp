#include "mcp/client/child_process.hpp"

#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <string>

using namespace airlock::mcp;

namespace {

// Everything the descriptor yields until its end, then closes it.
std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    for (;;) {
        auto n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

void close_pipes(child_pipes const& p) {
    for (int fd : {p.in, p.out, p.err, p.pidfd})
        if (fd >= 0) ::close(fd);
}

child_spec shell(std::string script) { return child_spec{{"/bin/sh", "-c", std::move(script)}, {}, std::nullopt}; }

}  // namespace

TEST_CASE("a child's exit status is told once it has been waited for") {
    auto started = spawn_child(shell("exit 3"));
    REQUIRE(started.has_value());
    close_pipes(started->pipes);
    started->process->wait();
    CHECK(started->process->reaped());
    CHECK(started->process->how_it_ended() == "exited with status 3");
}

TEST_CASE("a child killed by a signal is told by the signal's name") {
    auto started = spawn_child(shell("sleep 30"));
    REQUIRE(started.has_value());
    close_pipes(started->pipes);
    started->process->kill_and_reap();
    CHECK(started->process->how_it_ended() == "was killed by signal 9 (SIGKILL)");
}

TEST_CASE("what a child writes on stdout and stderr arrives on their own pipes") {
    auto started = spawn_child(shell("read line; echo \"out:$line\"; echo oops >&2"));
    REQUIRE(started.has_value());
    auto& p = started->pipes;
    REQUIRE(::write(p.in, "hello\n", 6) == 6);
    ::close(p.in);
    CHECK(read_all(p.out) == "out:hello\n");
    CHECK(read_all(p.err) == "oops\n");
    if (p.pidfd >= 0) ::close(p.pidfd);
    started->process->wait();
    CHECK(started->process->how_it_ended() == "exited with status 0");
}

TEST_CASE("a child's environment holds only the configured variables and PATH") {
    auto spec = shell("env | sort");
    spec.env = {{"GREETING", "hi"}, {"PATH", "/usr/bin:/bin"}};
    auto started = spawn_child(spec);
    REQUIRE(started.has_value());
    ::close(started->pipes.in);
    auto env = read_all(started->pipes.out);
    close_pipes({-1, -1, started->pipes.err, started->pipes.pidfd});
    started->process->wait();
    // sh may add PWD, SHLVL and _ of its own; nothing of the parent's comes through.
    CHECK(env.find("GREETING=hi\n") != std::string::npos);
    CHECK(env.find("PATH=/usr/bin:/bin\n") != std::string::npos);
    CHECK(env.find("HOME=") == std::string::npos);
}

TEST_CASE("a child starts in the configured working directory") {
    auto spec = shell("pwd");
    spec.cwd = "/tmp";
    auto started = spawn_child(spec);
    REQUIRE(started.has_value());
    ::close(started->pipes.in);
    auto out = read_all(started->pipes.out);
    close_pipes({-1, -1, started->pipes.err, started->pipes.pidfd});
    started->process->wait();
    CHECK(out == std::filesystem::canonical("/tmp").string() + "\n");
}

TEST_CASE("a program that is not in PATH is refused before anything starts") {
    auto started = spawn_child(child_spec{{"airlock-no-such-program"}, {{"PATH", "/usr/bin:/bin"}}, std::nullopt});
    REQUIRE_FALSE(started.has_value());
    CHECK(started.error().code == "not_sent");
    CHECK(started.error().message == "'airlock-no-such-program' is not an executable file in PATH");
}

TEST_CASE("a path to a file that does not exist is refused without mention of PATH") {
    auto started = spawn_child(child_spec{{"/nonexistent/server"}, {}, std::nullopt});
    REQUIRE_FALSE(started.has_value());
    CHECK(started.error().message == "'/nonexistent/server' is not an executable file");
}

TEST_CASE("an empty argv and a variable name with '=' are refused") {
    auto empty = spawn_child(child_spec{});
    REQUIRE_FALSE(empty.has_value());
    CHECK(empty.error().message == "no command is configured (argv is empty)");
    auto bad = spawn_child(child_spec{{"/bin/sh"}, {{"A=B", "c"}}, std::nullopt});
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().message == "env: 'A=B' is not a valid variable name");
}

TEST_CASE("a program is found along PATH in order, an empty entry meaning the working directory") {
    CHECK(resolve_executable("sh", "/nonexistent:/bin") == std::optional<std::string>("/bin/sh"));
    CHECK(resolve_executable("sh", "/nonexistent") == std::nullopt);
    CHECK(resolve_executable("/bin/sh", "") == std::optional<std::string>("/bin/sh"));
    // A directory is not a program, even when it is executable.
    CHECK(resolve_executable("tmp", "/") == std::nullopt);
}

TEST_CASE("the PATH a child gets is its configured one, else airlock's own") {
    CHECK(child_path(child_spec{{}, {{"PATH", "/opt/bin"}}, std::nullopt}) == "/opt/bin");
    if (char const* own = std::getenv("PATH")) CHECK(child_path(child_spec{}) == own);
}

TEST_CASE("signalling a child that has been reaped does nothing") {
    auto started = spawn_child(shell("exit 0"));
    REQUIRE(started.has_value());
    close_pipes(started->pipes);
    started->process->wait();
    started->process->signal(SIGTERM);  // its pid may name another process by now: no signal goes out
    CHECK(started->process->try_reap());
    CHECK(started->process->how_it_ended() == "exited with status 0");
}
