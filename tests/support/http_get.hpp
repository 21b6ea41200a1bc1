#pragma once
// A deliberately plain HTTP/1.1 client over a POSIX socket, for end-to-end tests: it shares no code
// with the server it tests.

#include <chrono>
#include <cstdint>
#include <string>

namespace airlock::testing {

struct raw_response {
    int status = 0;
    std::string head;  // status line and headers
    std::string body;
};

// A TCP connection to 127.0.0.1:port (its descriptor, -1 when refused); `receive_buffer` > 0 sets
// SO_RCVBUF, so a client that reads slowly or not at all holds back the server soon.
int connect_loopback(std::uint16_t port, int receive_buffer = 0);
// Writes all of `bytes`; false when the connection failed first.
bool send_all(int fd, std::string const& bytes);

// Sends `request` bytes as they are to 127.0.0.1:port and reads until the server closes or the
// deadline passes. Returns status 0 when nothing parseable came back.
raw_response raw_http(std::uint16_t port, std::string const& request,
                      std::chrono::milliseconds deadline = std::chrono::seconds(10), int receive_buffer = 0);

raw_response http_get(std::uint16_t port, std::string const& path);

// One 2026-07-28 request to /mcp with a bearer token: `params` are the request's params members
// (each followed by a comma), to which the _meta every modern request carries is added; `name`
// goes in Mcp-Name.
raw_response modern_post(std::uint16_t port, std::string const& token, std::string const& method,
                         std::string const& name, std::string const& params);
// A 2025-11-25 POST to /mcp with a bearer token, on the session `session` (none when empty).
raw_response legacy_post(std::uint16_t port, std::string const& token, std::string const& session,
                         std::string const& body);
// initialize over legacy_post; the session id the server assigned, empty when it answered otherwise.
std::string legacy_session(std::uint16_t port, std::string const& token);
// The bytes modern_post sends.
std::string modern_request(std::uint16_t port, std::string const& token, std::string const& method,
                           std::string const& name, std::string const& params);

}  // namespace airlock::testing
