#pragma once
// What a tool call can come back with, where it goes, and the interface every tool client implements.

#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/tool_id.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>

namespace airlock::core {

// What is known about the far side when a call did not yield a result.
enum class tool_error_kind {
    unreachable,  // did not happen: nothing was sent
    refused,      // did not happen: the far side refused the request as such
    timed_out,    // in doubt: sent, no answer
    tool_failed,  // landed: the tool ran and reported failure
    malformed,    // landed (or refused locally before running): the reply or arguments did not fit
};

enum class disposition { did_not_happen, in_doubt, landed };

std::string_view to_string(tool_error_kind k) noexcept;
std::optional<tool_error_kind> parse_tool_error_kind(std::string_view s) noexcept;
disposition disposition_of(tool_error_kind k) noexcept;
std::string_view to_string(disposition d) noexcept;

struct tool_error {
    tool_error_kind kind;
    std::string tool;    // tool://server/name
    std::string detail;  // human-readable; never contains secrets
};

inline std::ostream& operator<<(std::ostream& os, tool_error const& e) {
    return os << to_string(e.kind) << " " << e.tool << ": " << e.detail;
}

[[noreturn]] void throw_exception_from_error(tool_error const& e, boost::source_location const&);

template <class T>
using tool_result = boost::system::result<T, tool_error>;

// Where a call is sent.
struct local_destination {
    friend bool operator==(local_destination const&, local_destination const&) = default;
};
struct process_destination {
    std::string argv0;
    friend bool operator==(process_destination const&, process_destination const&) = default;
};
struct remote_destination {
    std::string scheme;  // "http" or "https"
    std::string host;    // compared case-insensitively
    std::uint16_t port = 0;
    friend bool operator==(remote_destination const&, remote_destination const&) = default;
};
using destination = std::variant<local_destination, process_destination, remote_destination>;

std::string to_string(destination const& d);  // "local", "process:/usr/bin/x", "https://host:443"

// Every tool client: in-process ToolBox, MCP over stdio or HTTP, and the ToolRouter over them.
class tool_client {
public:
    virtual ~tool_client() = default;
    // The result is the tool's structured result (JSON); provenance rides in params._meta.
    virtual boost::asio::awaitable<tool_result<boost::json::value>> async_call(
        tool_id tool, boost::json::value arguments, std::optional<provenance> prov) = 0;
    // Where a call to `tool` would be sent. No default: a transport must say where it sends.
    virtual destination destination_of(tool_id const& tool) const = 0;
};

}  // namespace airlock::core
