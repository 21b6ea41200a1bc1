#pragma once
// Newline-delimited JSON read from a pipe, as MCP over stdio writes it: for tests that drive a
// stdio endpoint or the airlock binary through its stdin and stdout.

#include <boost/json.hpp>

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>

namespace airlock::testing {

// The next object on `fd`, or nullopt after `deadline` or at the end of input. `pending` holds
// what was read past the last whole line, for the next call.
inline std::optional<boost::json::object> next_json_line(int fd, std::string& pending,
                                                         std::chrono::milliseconds deadline) {
    auto until = std::chrono::steady_clock::now() + deadline;
    for (;;) {
        if (auto nl = pending.find('\n'); nl != std::string::npos) {
            auto line = pending.substr(0, nl);
            pending.erase(0, nl + 1);
            return boost::json::parse(line).as_object();
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left.count() <= 0) return std::nullopt;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
        char buf[8192];
        auto n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return std::nullopt;
        pending.append(buf, static_cast<std::size_t>(n));
    }
}

}  // namespace airlock::testing
