// The client configurations in examples/clients (Claude Desktop, Claude Code, Cursor, VS Code), as a
// user pastes them: each server entry is read from the file, its placeholders replaced the way
// docs/clients.md says to, and then used. A stdio entry's command is started and spoken MCP to; an
// HTTP entry's URL and headers reach a running airlock. A configuration that stops working as
// written fails here.
#include "tests/support/child_process.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include <csignal>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr char const* desk_token = "clients-desk-0123456789abcdef";

std::string replaced(std::string text, std::string const& from, std::string const& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

// The deployment the examples name: principal desk, reached by its token or over stdio.
struct desk_deployment : gateway_deployment {
    desk_deployment()
        : gateway_deployment("unused-alice-0123456789abcdef",
                             "  - name: desk\n    token_file: desk.token\n    manifest: alice.yaml\n") {
        write_secret("desk.token", std::string(desk_token) + "\n");
    }
};

// The file with its placeholders filled in, as JSON: the binary, the config, the token, the port.
json::object filled(std::string const& name, desk_deployment const& d, std::uint16_t port) {
    auto text = file_text(std::string(AIRLOCK_SOURCE_DIR) + "/examples/clients/" + name);
    text = replaced(text, "/path/to/airlock.yaml", d.config.string());
    text = replaced(text, "/path/to/airlock", AIRLOCK_BINARY);
    for (auto const* var : {"${AIRLOCK_TOKEN}", "${env:AIRLOCK_TOKEN}", "${input:airlock-token}"})
        text = replaced(text, var, desk_token);
    text = replaced(text, "127.0.0.1:8080", "127.0.0.1:" + std::to_string(port));
    return json::parse(text).as_object();
}

json::object const& servers_of(json::object const& file) {
    return (file.contains("servers") ? file.at("servers") : file.at("mcpServers")).as_object();
}

// Starts the entry's command and lists the tools over stdio, as the client would.
void check_stdio(json::object const& entry) {
    std::vector<std::string> argv{std::string(entry.at("command").as_string())};
    for (auto const& a : entry.at("args").as_array()) argv.emplace_back(a.as_string());
    child_process child(argv, {}, child_stdin::pipe);
    REQUIRE(child.write_stdin(
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
        R"("clientInfo":{"name":"example","version":"1"}}})"
        "\n"
        R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
        "\n"
        R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"
        "\n"));
    for (int i = 0; i < 300 && child.stdout_text().find("\"id\":2") == std::string::npos; ++i)
        std::this_thread::sleep_for(100ms);
    INFO(child.stderr_text());
    CHECK_THAT(child.stdout_text(), Catch::Contains("everything__get-sum"));
    child.close_stdin();
    child.wait(20s);
}

// Sends an initialize to the entry's URL with the entry's headers.
raw_response post_initialize(json::object const& entry, std::uint16_t port, bool with_headers) {
    auto url = std::string(entry.at("url").as_string());
    REQUIRE(url == "http://127.0.0.1:" + std::to_string(port) + "/mcp");
    std::string head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                       "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                       "Connection: close\r\n";
    if (with_headers && entry.contains("headers"))
        for (auto const& [k, v] : entry.at("headers").as_object()) head += std::string(k) + ": " + std::string(v.as_string()) + "\r\n";
    std::string body = R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                       R"("capabilities":{},"clientInfo":{"name":"example","version":"1"}}})";
    return raw_http(port, head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

}  // namespace

TEST_CASE("the client configurations in examples/clients work as written, over stdio and over HTTP with a header",
          "[e2e][peers]") {
    desk_deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    for (int i = 0; i < 300 && http_get(port, "/readyz").status != 200; ++i) std::this_thread::sleep_for(100ms);

    int stdio = 0, http = 0;
    for (auto const* name : {"claude_desktop_config.json", "claude-code.mcp.json", "cursor.mcp.json", "vscode.mcp.json"}) {
        auto file = filled(name, d, port);
        for (auto const& [server, value] : servers_of(file)) {
            INFO(name << ": " << server);
            auto const& entry = value.as_object();
            if (entry.contains("command")) {
                check_stdio(entry);
                ++stdio;
            } else {
                auto ok = post_initialize(entry, port, true);
                INFO(ok.head << ok.body);
                CHECK(ok.status == 200);
                CHECK_THAT(ok.body, Catch::Contains("serverInfo"));
                // The header is what lets it in.
                CHECK(post_initialize(entry, port, false).status == 401);
                ++http;
            }
        }
    }
    CHECK(stdio == 4);
    CHECK(http == 3);
    airlock.signal(SIGTERM);
    airlock.wait(20s);
}
