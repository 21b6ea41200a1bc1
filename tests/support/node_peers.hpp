#pragma once
// Node MCP peers listening on loopback HTTP for end-to-end tests and benchmarks: started on a port
// the kernel picks, stopped (SIGTERM, then SIGKILL) when the object goes, even if a test fails.

#include "tests/support/child_process.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace airlock::testing {

using namespace std::chrono_literals;

// @modelcontextprotocol/server-everything selects Streamable HTTP with the argument
// `streamableHttp` and its port with $PORT; it offers no host option and listens on every
// interface. tests/support/bind-loopback.mjs, preloaded, pins it to 127.0.0.1 and reports the port.
inline std::string bind_loopback_module() { return std::string(AIRLOCK_SOURCE_DIR) + "/tests/support/bind-loopback.mjs"; }

// A Node peer started with the loopback preload; its listening port is read from stderr.
struct node_peer {
    std::unique_ptr<child_process> child;
    std::uint16_t port = 0;

    node_peer(std::vector<std::string> args, std::vector<std::string> env) {
        std::vector<std::string> argv{peers::node(), "--import", bind_loopback_module()};
        argv.insert(argv.end(), args.begin(), args.end());
        child = std::make_unique<child_process>(argv, env);
        auto line = child->wait_for_stderr_line("airlock-test-listening", 60s);
        REQUIRE(line.has_value());
        std::istringstream in(line->substr(line->find("airlock-test-listening")));
        std::string tag, address;
        in >> tag >> address >> port;
        REQUIRE(address == "127.0.0.1");
        REQUIRE(port != 0);
    }
    // SIGTERM first, so a proxy can stop the server it started; SIGKILL if it lingers.
    ~node_peer() {
        if (!child) return;
        child->signal(SIGTERM);
        child->wait(10s);
    }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/mcp"; }
};

// server-everything in streamableHttp mode (legacy era, sessions, SSE responses).
struct everything_server : node_peer {
    everything_server() : node_peer({peers::everything(), "streamableHttp"}, {"PORT=0"}) {}
};

// mcp-proxy serving server-everything (stdio) over Streamable HTTP, 2026-07-28 included.
struct modern_proxy : node_peer {
    modern_proxy()
        : node_peer({peers::mcp_proxy(), "--host", "127.0.0.1", "--port", "0", "--server", "stream", "--",
                     peers::node(), peers::everything(), "stdio"},
                    {}) {}
};

}  // namespace airlock::testing
