#include "tests/support/child_process.hpp"
#include "tests/support/http_get.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <regex>

using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {
// Starts `airlock serve` on a free loopback port and returns the port it reports.
std::uint16_t start_serve(child_process& p) {
    auto line = p.wait_for_stderr_line("listening on http://", 20s);
    REQUIRE(line.has_value());
    std::smatch m;
    REQUIRE(std::regex_search(*line, m, std::regex(R"(127\.0\.0\.1:(\d+))")));
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}
}  // namespace

TEST_CASE("serve answers /healthz with 200 and a JSON body") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0", "--threads", "2"});
    auto port = start_serve(p);
    auto r = http_get(port, "/healthz");
    CHECK(r.status == 200);
    CHECK_THAT(r.head, Catch::Contains("application/json"));
    CHECK(r.body == R"({"status":"ok"})");
}

TEST_CASE("an unknown route gets 404 with a JSON error naming the path") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0"});
    auto port = start_serve(p);
    auto r = http_get(port, "/nope");
    CHECK(r.status == 404);
    CHECK_THAT(r.body, Catch::Contains("/nope"));
}

TEST_CASE("oversized headers get 431 and an oversized body 413, and the server stays up") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0"});
    auto port = start_serve(p);
    std::string big_header(20 * 1024, 'x');
    auto r = raw_http(port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + big_header + "\r\n\r\n");
    CHECK(r.status == 431);
    r = raw_http(port, "POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000000\r\n\r\n");
    CHECK(r.status == 413);
    CHECK(http_get(port, "/healthz").status == 200);
}

TEST_CASE("garbage instead of HTTP gets 400 and does not take the server down") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0"});
    auto port = start_serve(p);
    auto r = raw_http(port, "\x01\x02 not http at all\r\n\r\n");
    CHECK(r.status == 400);
    CHECK(http_get(port, "/healthz").status == 200);
}

TEST_CASE("SIGTERM stops serve cleanly with exit code 0") {
    child_process p({AIRLOCK_BINARY, "serve", "--listen", "127.0.0.1:0"});
    auto port = start_serve(p);
    REQUIRE(http_get(port, "/healthz").status == 200);
    p.signal(SIGTERM);
    CHECK(p.wait(15s) == 0);
}
