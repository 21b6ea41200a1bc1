#pragma once
// A real PostgreSQL 15 server for a test: initdb in a fresh temporary directory, started on a free
// port on 127.0.0.1 (TCP only), as the unprivileged `postgres` user when the test runs as root
// (PostgreSQL refuses to run as root). Always stopped: by the destructor, and, should the test
// process die first, by a watchdog that waits on a pipe only this process holds.

#include "tests/support/child_process.hpp"

#include <filesystem>
#include <memory>
#include <string>

namespace airlock::testing {

struct postgres_settings {
    // Off for tests that only need the semantics (the conformance battery); on for a bench or a
    // crash test, which need what a real deployment has.
    bool fsync = false;
    int max_connections = 200;
};

class postgres_server {
public:
    explicit postgres_server(postgres_settings settings = {});
    ~postgres_server();
    postgres_server(postgres_server const&) = delete;
    postgres_server& operator=(postgres_server const&) = delete;

    // One server for the whole test process, started at first use.
    static postgres_server& shared();

    // postgresql://airlock@127.0.0.1:PORT/DATABASE
    std::string url(std::string const& database = "postgres") const;
    // Creates a new, empty database and gives its URL.
    std::string create_database();
    // Runs one SQL statement as the superuser; throws with the server's words when it fails.
    void execute(std::string const& database, std::string const& sql) const;

    // Stops the server (immediately, as a crash would, when `immediate`) and starts it again on the
    // same port and data.
    void stop(bool immediate = true);
    void start();
    // SIGSTOP, then SIGCONT, to the server and every process it started: a server that still holds
    // its connections open but answers nothing (a hung host, a frozen VM).
    void pause();
    void resume();
    int port() const noexcept { return port_; }

private:
    std::vector<std::string> as_owner(std::vector<std::string> argv) const;
    void signal_all(int sig) const;
    std::filesystem::path dir_;
    postgres_settings settings_;
    int port_ = 0;
    int databases_ = 0;
    bool running_ = false;
    std::unique_ptr<child_process> watchdog_;
};

}  // namespace airlock::testing
