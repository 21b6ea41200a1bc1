#pragma once
// A TCP listener on 127.0.0.1 (a free port) that counts the connections made to it and never
// answers one: `hold` keeps each connection open, reading and discarding what comes (an HTTP
// upstream that accepts and hangs); `reset` reads the first bytes, then resets the connection (an
// upstream that crashes mid-request). Everything is closed, and its thread joined, when it goes.

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace airlock::testing {

class mute_listener {
public:
    enum class mode { hold, reset };

    explicit mute_listener(mode m = mode::hold) : mode_(m) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0)
            throw std::runtime_error("mute_listener: cannot listen on 127.0.0.1");
        socklen_t len = sizeof a;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { run(); });
    }
    ~mute_listener() {
        stopping_ = true;
        thread_.join();
        for (int c : open_) ::close(c);
        ::close(fd_);
    }
    mute_listener(mute_listener const&) = delete;
    mute_listener& operator=(mute_listener const&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    int connections() const noexcept { return connections_; }
    std::size_t bytes_received() const noexcept { return bytes_; }

private:
    void run() {
        while (!stopping_) {
            std::vector<pollfd> fds{{fd_, POLLIN, 0}};
            for (int c : open_) fds.push_back({c, POLLIN, 0});
            if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
            if (fds[0].revents & POLLIN) {
                int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
                if (c >= 0) {
                    ++connections_;
                    open_.push_back(c);
                }
            }
            for (std::size_t i = 1; i < fds.size(); ++i) {
                if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                char buf[4096];
                auto n = ::recv(fds[i].fd, buf, sizeof buf, 0);
                if (n > 0) bytes_ += static_cast<std::size_t>(n);
                if (n > 0 && mode_ == mode::hold) continue;
                if (n > 0) {
                    // SO_LINGER with a zero timeout: close() sends RST, not FIN.
                    linger l{1, 0};
                    ::setsockopt(fds[i].fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
                }
                ::close(fds[i].fd);
                std::erase(open_, fds[i].fd);
            }
        }
    }

    mode mode_;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<int> connections_{0};
    std::atomic<std::size_t> bytes_{0};
    std::vector<int> open_;  // the thread's only
    std::thread thread_;
};

}  // namespace airlock::testing
