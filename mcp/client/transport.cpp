#include "mcp/client/transport.hpp"

#include <stdexcept>

namespace airlock::mcp {

std::string_view to_string(transport_error::kind k) noexcept {
    switch (k) {
        case transport_error::kind::not_sent: return "not_sent";
        case transport_error::kind::no_reply: return "no_reply";
        case transport_error::kind::deadline: return "deadline";
        case transport_error::kind::cancelled: return "cancelled";
        case transport_error::kind::session_expired: return "session_expired";
        case transport_error::kind::http_status: return "http_status";
        case transport_error::kind::protocol: return "protocol";
    }
    return "unknown";
}

void throw_exception_from_error(transport_error const& e, boost::source_location const&) {
    throw std::runtime_error("transport " + std::string(to_string(e.what)) + ": " + e.detail);
}

}  // namespace airlock::mcp
