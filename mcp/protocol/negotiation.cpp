#include "mcp/protocol/negotiation.hpp"

#include "mcp/protocol/messages.hpp"
#include "mcp/protocol/versions.hpp"

#include <boost/json/value_from.hpp>

namespace airlock::mcp {

namespace json = boost::json;

std::string_view negotiate_initialize_version(std::string_view requested) noexcept {
    for (auto v : supported_versions())
        if (v == requested && era_of(v) == era::legacy) return v;
    return version::legacy_latest;
}

core::result<std::string> accept_initialize_version(std::string_view answered) {
    if (era_of(answered) == era::legacy) return std::string(answered);
    return core::make_error("unsupported_version", "the server answered initialize with protocol version '" +
                                                       std::string(answered) +
                                                       "', which airlock does not speak as a legacy version");
}

error_response unsupported_version_error(std::optional<request_id> id, std::string_view requested) {
    unsupported_version_data data;
    for (auto v : supported_versions()) data.supported.emplace_back(v);
    data.requested = std::string(requested);
    return make_error_response(std::move(id), rpc_code::unsupported_protocol_version, "Unsupported protocol version",
                               json::value_from(data));
}

}  // namespace airlock::mcp
