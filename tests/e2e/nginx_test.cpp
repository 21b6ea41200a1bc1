// airlock behind Debian's nginx, configured with the blocks docs/nginx.md documents (read from the
// file, so the documentation is what runs), over TCP and over a unix socket: SSE responses stream
// unbuffered, the notification stream outlives nginx's read timeout on airlock's keep-alive
// comments, and X-Forwarded-For is believed only from trusted proxies.
#include "tests/e2e/sidecar_deployment.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/http_get.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {

// The ```nginx block that follows `marker` in docs/nginx.md.
std::string documented_block(std::string const& marker) {
    auto doc = file_text(std::string(AIRLOCK_SOURCE_DIR) + "/docs/nginx.md");
    auto at = doc.find(marker);
    REQUIRE(at != std::string::npos);
    auto open = doc.find("```nginx\n", at);
    REQUIRE(open != std::string::npos);
    open += 9;
    auto close = doc.find("```", open);
    REQUIRE(close != std::string::npos);
    return doc.substr(open, close - open);
}

std::uint16_t free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

// nginx in the foreground, as the current user, everything it writes inside its own temp dir,
// in front of `airlock` ("127.0.0.1:PORT" or "unix:/path"). Stopped when the object goes.
struct nginx {
    temp_dir prefix{"airlock-nginx"};
    std::uint16_t port = 0;
    std::unique_ptr<child_process> child;

    explicit nginx(std::string const& airlock) {
        auto p = prefix.path().string();
        std::filesystem::create_directories(prefix.path() / "tmp");
        auto upstream = documented_block("<!-- nginx upstream");
        auto server_line = upstream.find("server 127.0.0.1:8787;");
        REQUIRE(server_line != std::string::npos);
        upstream.replace(server_line, std::string("server 127.0.0.1:8787;").size(), "server " + airlock + ";");
        auto location = documented_block("<!-- nginx location");
        std::string user;
        // As root, nginx would hand its workers to another user; this test runs it as itself.
        if (::geteuid() == 0)
            if (auto* pw = ::getpwuid(::geteuid())) user = std::string("user ") + pw->pw_name + ";\n";
        for (int attempt = 0; attempt < 5 && !child; ++attempt) {
            port = free_port();
            std::ofstream(prefix.path() / "nginx.conf")
                << user << "daemon off;\nmaster_process off;\nworker_processes 1;\npid " << p << "/nginx.pid;\n"
                << "error_log " << p << "/error.log info;\nevents { worker_connections 64; }\nhttp {\n"
                << "    access_log " << p << "/access.log;\n"
                << "    client_body_temp_path " << p << "/tmp/body;\n    proxy_temp_path " << p << "/tmp/proxy;\n"
                << "    fastcgi_temp_path " << p << "/tmp/fastcgi;\n    uwsgi_temp_path " << p << "/tmp/uwsgi;\n"
                << "    scgi_temp_path " << p << "/tmp/scgi;\n"
                // Far below nginx's default of 60 s: airlock's keep-alive comments must beat it.
                << "    proxy_read_timeout 2s;\n"
                << upstream << "    server {\n        listen 127.0.0.1:" << port << ";\n" << location << "    }\n}\n";
            child = std::make_unique<child_process>(std::vector<std::string>{
                "/usr/sbin/nginx", "-p", p + "/", "-c", p + "/nginx.conf", "-e", p + "/error.log"});
            bool up = false;
            for (int i = 0; i < 100 && !up; ++i) {
                std::this_thread::sleep_for(50ms);
                up = http_get(port, "/healthz").status != 0;
            }
            if (!up) {
                child->signal(SIGTERM);
                child->wait(5s);
                child.reset();  // the port was taken meanwhile: another one
            }
        }
        INFO(error_log());
        REQUIRE(child);
    }
    ~nginx() {
        if (!child) return;
        child->signal(SIGQUIT);
        child->wait(10s);
    }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/mcp"; }
    std::string error_log() const { return file_text(prefix.path() / "error.log"); }
    std::string access_log() const { return file_text(prefix.path() / "access.log"); }
};

boost::json::object outcome(child_process& client) {
    auto code = client.wait(90s);
    INFO(client.stderr_text());
    REQUIRE(code == 0);
    return boost::json::parse(client.stdout_text()).as_object();
}

// A tools/call whose first progress event must reach the client while the call runs: the call
// only ends when the client, on that event, calls release.
void check_unbuffered_sse(nginx const& proxy) {
    auto client = sidecar_deployment::client("hold", proxy.url());
    auto out = outcome(*client);
    CHECK(out.at("release") == "released");
    CHECK_THAT(std::string(out.at("text").as_string()), Catch::StartsWith("released after"));
}

// A bearer token that is wrong, sent with a forged X-Forwarded-For and a forged Forwarded (which
// nginx passes through as it came): airlock's refusal names the client address it settled on.
std::string refused_from(child_process& airlock, std::uint16_t port, std::string const& host) {
    auto r = raw_http(port, "POST /mcp HTTP/1.1\r\nHost: " + host +
                                "\r\nAuthorization: Bearer wrong-token-0123456789\r\nX-Forwarded-For: 203.0.113.7\r\n"
                                "Forwarded: for=192.0.2.60\r\n"
                                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                                "Connection: close\r\nContent-Length: 2\r\n\r\n{}");
    CHECK(r.status == 401);
    auto line = airlock.wait_for_stderr_line("refused a request from", 20s);
    REQUIRE(line);
    return *line;
}

// A REST run through nginx, waited for, then its journal, both through the proxy; airlock's request
// log names the client the forwarding headers gave, as far as the trusted chain goes.
void check_rest_run(nginx const& proxy, child_process& airlock, std::string const& expected_client) {
    auto [run, journal] = run_over_rest(proxy.port, "127.0.0.1", R"({"agent":"courier","input":{"question":"deliver"}})",
                                        "X-Forwarded-For: 198.51.100.4\r\n");
    CHECK(run.at("status") == "succeeded");
    CHECK(run.at("output") == "delivered");
    CHECK(journal.find("slow done after 2 steps") != std::string::npos);
    CHECK(std::count(journal.begin(), journal.end(), '\n') == static_cast<long>(run.at("head_seq").as_int64()));
    auto line = airlock.wait_for_stderr_line("route=/v1/runs status=200", 20s);
    REQUIRE(line);
    CHECK_THAT(*line, Catch::Contains("client=" + expected_client + " ") && Catch::Contains("principal=alice"));
}

}  // namespace

TEST_CASE("through nginx over TCP, a tools/call answered as SSE streams unbuffered, and X-Forwarded-For from the trusted proxy is believed") {
    std::string server = "    trusted_proxies: [127.0.0.1]\n    allowed_hosts: [\"127.0.0.1\"]\n    sse_keep_alive: 500ms\n";
    sidecar_deployment d({"slow", "hold", "release"}, server);
    d.write_config(server, d.courier_agent());
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0",
                           "--log-format", "text"});
    auto port = airlock_port(airlock);
    nginx proxy("127.0.0.1:" + std::to_string(port));
    check_unbuffered_sse(proxy);
    // nginx (trusted) appends the client's address to the header the client sent; 127.0.0.1 being
    // trusted too, the leftmost hop is the one believed.
    check_rest_run(proxy, airlock, "198.51.100.4");
    // nginx appends the address it saw (127.0.0.1, trusted here too), so the forged hop is believed:
    // that is what trusting 127.0.0.1 means.
    CHECK_THAT(refused_from(airlock, proxy.port, "127.0.0.1"), Catch::Contains("from 203.0.113.7 "));
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
}

TEST_CASE("through nginx, the GET notification stream stays open past nginx's read timeout on airlock's keep-alive comments") {
    sidecar_deployment d({"slow"}, "    trusted_proxies: [127.0.0.1]\n    allowed_hosts: [\"127.0.0.1\"]\n    sse_keep_alive: 500ms\n");
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = airlock_port(airlock);
    nginx proxy("127.0.0.1:" + std::to_string(port));
    auto client = sidecar_deployment::client("watch", proxy.url());
    REQUIRE(client->wait_for_stderr_line("tools: hold__slow", 60s));
    // Three of nginx's 2 s read timeouts with nothing to say but keep-alive comments.
    std::this_thread::sleep_for(6s);
    d.grant({"slow", "release"});
    airlock.signal(SIGHUP);
    auto out = outcome(*client);
    CHECK(boost::json::serialize(out.at("after")) == R"(["hold__release","hold__slow"])");
    // One GET, never timed out and reopened: the notification came on the stream opened first.
    INFO(proxy.access_log());
    INFO(proxy.error_log());
    CHECK(proxy.error_log().find("timed out") == std::string::npos);
    auto log = proxy.access_log();
    std::size_t gets = 0;
    for (auto at = log.find("\"GET /mcp "); at != std::string::npos; at = log.find("\"GET /mcp ", at + 1)) ++gets;
    CHECK(gets == 1);
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
}

TEST_CASE("through nginx over a unix socket, SSE streams unbuffered, and a forwarded address is believed only as far as the trusted chain goes") {
    temp_dir sockets{"airlock-sock"};
    auto socket = (sockets.path() / "airlock.sock").string();
    std::string server = "    unix_socket: " + socket +
                         "\n    unix_socket_mode: \"0660\"\n    trusted_proxies: [unix]\n    sse_keep_alive: 500ms\n";
    sidecar_deployment d({"slow", "hold", "release"}, server);
    d.write_config(server, d.courier_agent());
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--log-format", "text"});
    REQUIRE(airlock.wait_for_stderr_line("listening on unix:", 30s));
    CHECK((std::filesystem::status(socket).permissions() & std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
           std::filesystem::perms::group_read | std::filesystem::perms::group_write));
    nginx proxy("unix:" + socket);
    check_unbuffered_sse(proxy);
    // nginx (trusted: the socket's peer) says the client is 127.0.0.1, which is no trusted proxy,
    // so the hop that client forged is not believed.
    CHECK_THAT(refused_from(airlock, proxy.port, "127.0.0.1"), Catch::Contains("from 127.0.0.1 "));
    // The socket's peer (nginx) is trusted and says the client is 127.0.0.1, which is no trusted
    // proxy: the hop 198.51.100.4 that client claims is not believed.
    check_rest_run(proxy, airlock, "127.0.0.1");
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
    CHECK_FALSE(std::filesystem::exists(socket));
}

TEST_CASE("X-Forwarded-For from a peer that is not a trusted proxy is ignored") {
    sidecar_deployment d({"slow"}, "    trusted_proxies: [10.0.0.0/8]\n");
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = airlock_port(airlock);
    CHECK_THAT(refused_from(airlock, port, "127.0.0.1:" + std::to_string(port)), Catch::Contains("from 127.0.0.1 "));
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
}
