#include "tests/support/http_get.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace airlock::testing {

int connect_loopback(std::uint16_t port, int receive_buffer) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    // Before connect(): the window it advertises is fixed by then.
    if (receive_buffer > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

bool send_all(int fd, std::string const& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return false;
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

raw_response raw_http(std::uint16_t port, std::string const& request, std::chrono::milliseconds deadline,
                      int receive_buffer) {
    raw_response out;
    int fd = connect_loopback(port, receive_buffer);
    if (fd < 0) return out;
    send_all(fd, request);
    std::string data;
    auto until = std::chrono::steady_clock::now() + deadline;
    char buf[16384];
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        data.append(buf, static_cast<std::size_t>(n));
    }
    close(fd);
    auto end = data.find("\r\n\r\n");
    if (data.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) return out;
    out.head = data.substr(0, end);
    out.body = data.substr(end + 4);
    out.status = std::atoi(data.c_str() + 9);
    return out;
}

raw_response http_get(std::uint16_t port, std::string const& path) {
    return raw_http(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nConnection: close\r\n\r\n");
}

std::string modern_request(std::uint16_t port, std::string const& token, std::string const& method,
                           std::string const& name, std::string const& params) {
    std::string meta = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                       R"("io.modelcontextprotocol/clientCapabilities":{"sampling":{}},)"
                       R"("io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"}})";
    auto body = R"({"jsonrpc":"2.0","id":1,"method":")" + method + R"(","params":{)" + params + meta + "}}";
    return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nAuthorization: Bearer " + token +
           "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
           "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " + method + "\r\nMcp-Name: " + name +
           "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

raw_response modern_post(std::uint16_t port, std::string const& token, std::string const& method,
                         std::string const& name, std::string const& params) {
    return raw_http(port, modern_request(port, token, method, name, params));
}

raw_response legacy_post(std::uint16_t port, std::string const& token, std::string const& session,
                         std::string const& body) {
    std::string head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nAuthorization: Bearer " +
                       token +
                       "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                       "MCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n";
    if (!session.empty()) head += "Mcp-Session-Id: " + session + "\r\n";
    return raw_http(port, head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

std::string legacy_session(std::uint16_t port, std::string const& token) {
    auto init = legacy_post(port, token, "",
                            R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                            R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
    auto at = init.head.find("Mcp-Session-Id: ");
    if (init.status != 200 || at == std::string::npos) return {};
    return init.head.substr(at + 16, init.head.find("\r\n", at) - at - 16);
}

}  // namespace airlock::testing
