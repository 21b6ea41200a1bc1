#include "tests/support/postgres_server.hpp"

#include <libpq-fe.h>

#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace airlock::testing {

namespace {

std::filesystem::path bindir() {
    if (char const* d = std::getenv("AIRLOCK_PG_BINDIR")) return d;
    return "/usr/lib/postgresql/15/bin";
}

int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        if (fd >= 0) ::close(fd);
        throw std::runtime_error("postgres_server: no free port");
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

std::string read_file(std::filesystem::path const& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void run_or_throw(std::vector<std::string> argv, std::string const& what, std::filesystem::path const& log = {}) {
    child_process p(std::move(argv));
    int rc = p.wait(std::chrono::seconds(60));
    if (rc != 0)
        throw std::runtime_error("postgres_server: " + what + " failed (exit " + std::to_string(rc) + "): " +
                                 p.stderr_text() + p.stdout_text() + (log.empty() ? "" : read_file(log)));
}

}  // namespace

std::vector<std::string> postgres_server::as_owner(std::vector<std::string> argv) const {
    if (::geteuid() != 0) return argv;
    argv.insert(argv.begin(), {"runuser", "-u", "postgres", "--"});
    return argv;
}

postgres_server::postgres_server(postgres_settings settings) : settings_(settings) {
    std::random_device rd;
    dir_ = std::filesystem::temp_directory_path() / ("airlock-pg-" + std::to_string(rd()));
    std::filesystem::create_directory(dir_);
    if (::geteuid() == 0) {
        passwd const* pw = ::getpwnam("postgres");
        if (!pw) throw std::runtime_error("postgres_server: running as root needs the `postgres` user (scripts/deps.sh)");
        if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0)
            throw std::runtime_error("postgres_server: cannot hand " + dir_.string() + " to the postgres user");
    }
    // The watchdog: `read` returns when the pipe's only writer (this process) is gone, however it
    // went, and then stops the server and removes its files.
    auto pg_ctl = (bindir() / "pg_ctl").string();
    std::string stop_cmd = (::geteuid() == 0 ? "runuser -u postgres -- " : "") + pg_ctl + " -D '" +
                           (dir_ / "data").string() + "' -m immediate stop >/dev/null 2>&1; rm -rf '" +
                           dir_.string() + "'";
    watchdog_ = std::make_unique<child_process>(std::vector<std::string>{"sh", "-c", "read _; " + stop_cmd},
                                                std::vector<std::string>{}, child_stdin::pipe);
    run_or_throw(as_owner({(bindir() / "initdb").string(), "-D", (dir_ / "data").string(), "-U", "airlock", "-A",
                           "trust", "-E", "UTF8", "--locale=C", "--no-sync"}),
                 "initdb");
    start();
}

postgres_server::~postgres_server() {
    try {
        if (running_) stop(false);
    } catch (...) {
        // The watchdog stops it all the same.
    }
    if (watchdog_) {
        watchdog_->close_stdin();
        watchdog_->wait(std::chrono::seconds(30));
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

postgres_server& postgres_server::shared() {
    static postgres_server server;
    return server;
}

void postgres_server::start() {
    for (int attempt = 0; attempt < 5; ++attempt) {
        if (port_ == 0 || attempt > 0) port_ = free_port();
        std::string opts = "-c listen_addresses=127.0.0.1 -c unix_socket_directories='' -p " + std::to_string(port_) +
                           " -c max_connections=" + std::to_string(settings_.max_connections) +
                           (settings_.fsync ? "" : " -c fsync=off -c full_page_writes=off");
        child_process p(as_owner({(bindir() / "pg_ctl").string(), "-D", (dir_ / "data").string(), "-l",
                                  (dir_ / "server.log").string(), "-o", opts, "-w", "-t", "60", "start"}));
        if (p.wait(std::chrono::seconds(90)) == 0) {
            running_ = true;
            return;
        }
        // Another process took the port between the probe and the bind: try another.
        if (read_file(dir_ / "server.log").find("could not bind") == std::string::npos)
            throw std::runtime_error("postgres_server: pg_ctl start failed: " + p.stderr_text() +
                                     read_file(dir_ / "server.log"));
    }
    throw std::runtime_error("postgres_server: no port could be bound");
}

void postgres_server::stop(bool immediate) {
    run_or_throw(as_owner({(bindir() / "pg_ctl").string(), "-D", (dir_ / "data").string(), "-m",
                           immediate ? "immediate" : "fast", "-w", "stop"}),
                 "pg_ctl stop");
    running_ = false;
}

void postgres_server::signal_all(int sig) const {
    int postmaster = 0;
    std::ifstream(dir_ / "data" / "postmaster.pid") >> postmaster;
    if (postmaster <= 0) throw std::runtime_error("postgres_server: no postmaster.pid");
    std::vector<int> pids{postmaster};
    for (auto const& e : std::filesystem::directory_iterator("/proc")) {
        auto name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream stat(e.path() / "stat");
        std::string line;
        std::getline(stat, line);
        // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
        auto close = line.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(line.substr(close + 1));
        char state = 0;
        int ppid = 0;
        rest >> state >> ppid;
        if (ppid == postmaster) pids.push_back(std::stoi(name));
    }
    for (int pid : pids) ::kill(pid, sig);
}

void postgres_server::pause() { signal_all(SIGSTOP); }
void postgres_server::resume() { signal_all(SIGCONT); }

std::string postgres_server::url(std::string const& database) const {
    return "postgresql://airlock@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

void postgres_server::execute(std::string const& database, std::string const& sql) const {
    PGconn* c = PQconnectdb(url(database).c_str());
    if (PQstatus(c) != CONNECTION_OK) {
        std::string why = PQerrorMessage(c);
        PQfinish(c);
        throw std::runtime_error("postgres_server: cannot connect: " + why);
    }
    PGresult* r = PQexec(c, sql.c_str());
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    std::string why = ok ? "" : PQresultErrorMessage(r);
    PQclear(r);
    PQfinish(c);
    if (!ok) throw std::runtime_error("postgres_server: " + sql + ": " + why);
}

std::string postgres_server::create_database() {
    std::string name = "airlock_test_" + std::to_string(++databases_);
    execute("postgres", "CREATE DATABASE " + name);
    return url(name);
}

}  // namespace airlock::testing
