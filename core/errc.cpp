#include "core/errc.hpp"

#include <string>

// A switch over errc with no default: a new code without a spelling or a JSON-RPC code is an error
// here, not a silent fallback.
#pragma GCC diagnostic error "-Wswitch"

namespace airlock::core {

std::string_view to_string(errc e) noexcept {
    switch (e) {
    case errc::bad_request: return "bad_request";
    case errc::invalid_field: return "invalid_field";
    case errc::invalid_input: return "invalid_input";
    case errc::unsupported_media_type: return "unsupported_media_type";
    case errc::too_deep: return "too_deep";
    case errc::not_found: return "not_found";
    case errc::method_not_allowed: return "method_not_allowed";
    case errc::forbidden_host: return "forbidden_host";
    case errc::forbidden_origin: return "forbidden_origin";
    case errc::unauthorized: return "unauthorized";
    case errc::forbidden: return "forbidden";
    case errc::unknown_run: return "unknown_run";
    case errc::unknown_agent: return "unknown_agent";
    case errc::unknown_capability: return "unknown_capability";
    case errc::unknown_provider: return "unknown_provider";
    case errc::not_running: return "not_running";
    case errc::sealed: return "sealed";
    case errc::not_pending: return "not_pending";
    case errc::divergence: return "divergence";
    case errc::conflict: return "conflict";
    case errc::not_an_agent_run: return "not_an_agent_run";
    case errc::at_capacity: return "at_capacity";
    case errc::unavailable: return "unavailable";
    case errc::closed: return "closed";
    case errc::invalid_run: return "invalid_run";
    case errc::invalid_runner: return "invalid_runner";
    case errc::malformed_record: return "malformed_record";
    case errc::not_admitted: return "not_admitted";
    case errc::internal: return "internal";
    }
    return "internal";  // not reached: every errc is a case above
}

std::optional<errc> errc_from_string(std::string_view code) noexcept {
    for (auto e : all_errcs)
        if (to_string(e) == code) return e;
    return std::nullopt;
}

// JSON-RPC has few codes: what the caller got wrong is invalid params (a field, a name) or an
// invalid request (the request as a whole, at the door or in the run's present state); what airlock
// cannot do now or got wrong itself is an internal error.
std::int64_t to_jsonrpc_code(errc e) noexcept {
    constexpr std::int64_t invalid_request = -32600, method_not_found = -32601, invalid_params = -32602,
                           internal_error = -32603;
    switch (e) {
    case errc::bad_request:
    case errc::unsupported_media_type:
    case errc::method_not_allowed:
    case errc::forbidden_host:
    case errc::forbidden_origin:
    case errc::unauthorized:
    case errc::forbidden:
    case errc::not_running:
    case errc::sealed:
    case errc::not_pending:
    case errc::divergence:
    case errc::conflict:
    case errc::not_an_agent_run: return invalid_request;
    case errc::not_found: return method_not_found;
    case errc::invalid_field:
    case errc::invalid_input:
    case errc::too_deep:
    case errc::unknown_run:
    case errc::unknown_agent:
    case errc::unknown_capability:
    case errc::unknown_provider: return invalid_params;
    case errc::at_capacity:
    case errc::unavailable:
    case errc::closed:
    case errc::invalid_run:
    case errc::invalid_runner:
    case errc::malformed_record:
    case errc::not_admitted:
    case errc::internal: return internal_error;
    }
    return internal_error;  // not reached
}

namespace {

class errc_category_impl final : public boost::system::error_category {
public:
    char const* name() const noexcept override { return "airlock"; }
    std::string message(int ev) const override {
        for (auto e : all_errcs)
            if (static_cast<int>(e) == ev) return std::string(to_string(e));
        return "unknown airlock error " + std::to_string(ev);
    }
};

}  // namespace

boost::system::error_category const& errc_category() noexcept {
    static errc_category_impl const category;
    return category;
}

boost::system::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), errc_category()}; }

}  // namespace airlock::core
