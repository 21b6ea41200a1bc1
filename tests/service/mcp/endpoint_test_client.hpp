#pragma once
// A deliberately plain HTTP/1.1 client for the endpoint tests, over TCP or a unix socket: it sends
// bytes as given and reads until a condition holds, the server closes, or a deadline passes, so a
// test can watch a stream that never ends. It shares no code with the server.

#include "mcp/protocol/sse.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace airlock::testing {

class raw_connection {
public:
    // To 127.0.0.1:port, from `from` (another loopback address such as 127.0.0.2, so one test can
    // be several clients) when it is given.
    static raw_connection tcp(std::uint16_t port, std::string const& from = "") {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && !from.empty()) {
            sockaddr_in source{};
            source.sin_family = AF_INET;
            if (::inet_pton(AF_INET, from.c_str(), &source.sin_addr) != 1 ||
                ::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source) != 0) {
                ::close(fd);
                throw std::runtime_error("cannot bind to " + from);
            }
        }
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            if (fd >= 0) ::close(fd);
            throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
        }
        return raw_connection(fd);
    }

    static raw_connection unix_socket(std::string const& path) {
        int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            if (fd >= 0) ::close(fd);
            throw std::runtime_error("cannot connect to " + path);
        }
        return raw_connection(fd);
    }

    raw_connection(raw_connection&& o) noexcept : fd_(o.fd_), data(std::move(o.data)), closed_(o.closed_) { o.fd_ = -1; }
    raw_connection(raw_connection const&) = delete;
    ~raw_connection() { close(); }

    void send(std::string const& bytes) {
        std::size_t sent = 0;
        while (sent < bytes.size()) {
            auto n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) return;
            sent += static_cast<std::size_t>(n);
        }
    }

    // Reads until `done(data)` holds, the server closes, or the deadline passes. Returns done(data).
    bool read_until(std::function<bool(std::string const&)> const& done,
                    std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
        auto until = std::chrono::steady_clock::now() + deadline;
        char buf[16384];
        while (!done(data)) {
            if (closed_) return false;
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
            auto n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0) {
                closed_ = true;
                continue;
            }
            data.append(buf, static_cast<std::size_t>(n));
        }
        return true;
    }

    // Reads until the server closes the connection (or the deadline passes); true when it closed.
    bool read_to_close(std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
        read_until([](std::string const&) { return false; }, deadline);
        return closed_;
    }

    bool server_closed() const noexcept { return closed_; }

    // Ends what this side sends (the server reads end of input) and goes on reading.
    void shutdown_send() { ::shutdown(fd_, SHUT_WR); }

    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    explicit raw_connection(int fd) : fd_(fd) {}
    int fd_ = -1;

public:
    std::string data;  // everything read so far

private:
    bool closed_ = false;
};

inline char lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// The value of the first header field of that name (case-insensitive) in a response head.
inline std::optional<std::string> header_value(std::string const& head, std::string const& name) {
    std::size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos + 2 < head.size()) {
        auto start = pos + 2;
        auto end = head.find("\r\n", start);
        auto line = head.substr(start, end == std::string::npos ? std::string::npos : end - start);
        auto colon = line.find(':');
        if (colon != std::string::npos && colon == name.size()) {
            bool same = true;
            for (std::size_t i = 0; i < colon; ++i) same = same && lower_ascii(line[i]) == lower_ascii(name[i]);
            if (same) {
                auto v = line.substr(colon + 1);
                while (!v.empty() && v.front() == ' ') v.erase(0, 1);
                return v;
            }
        }
        pos = end;
    }
    return std::nullopt;
}

struct http_reply_text {
    int status = 0;
    std::string head;
    std::string body;       // de-chunked when the response was chunked
    bool complete = false;  // the whole body arrived (Content-Length reached, or the last chunk)
};

// Parses the first response in `raw`.
inline http_reply_text parse_reply(std::string const& raw) {
    http_reply_text out;
    auto end = raw.find("\r\n\r\n");
    if (raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) return out;
    out.head = raw.substr(0, end);
    out.status = std::atoi(raw.c_str() + 9);
    auto rest = std::string_view(raw).substr(end + 4);
    auto te = header_value(out.head, "Transfer-Encoding");
    if (te && te->find("chunked") != std::string::npos) {
        std::size_t pos = 0;
        for (;;) {
            auto eol = rest.find("\r\n", pos);
            if (eol == std::string_view::npos) return out;
            auto size = std::stoul(std::string(rest.substr(pos, eol - pos)), nullptr, 16);
            if (size == 0) {
                out.complete = true;
                return out;
            }
            if (eol + 2 + size > rest.size()) {
                out.body.append(rest.substr(eol + 2));
                return out;
            }
            out.body.append(rest.substr(eol + 2, size));
            pos = eol + 2 + size + 2;
        }
    }
    if (auto cl = header_value(out.head, "Content-Length")) {
        auto n = std::stoul(*cl);
        out.body = std::string(rest.substr(0, n));
        out.complete = rest.size() >= n;
        return out;
    }
    out.body = std::string(rest);
    return out;
}

// True once `raw` holds a whole response (head and its complete body).
inline bool reply_complete(std::string const& raw) { return parse_reply(raw).complete; }

inline std::vector<mcp::sse_event> sse_events_of(std::string const& body) {
    mcp::sse_parser p;
    std::vector<mcp::sse_event> out;
    (void)p.feed(body, out);
    return out;
}

// Polls `condition` until it holds or the deadline passes (bounded: tests never hang on it).
template <class F>
bool eventually(F condition, std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
    auto until = std::chrono::steady_clock::now() + deadline;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

}  // namespace airlock::testing
