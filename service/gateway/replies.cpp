#include "service/gateway/replies.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <spdlog/spdlog.h>

#include <utility>

namespace airlock::service {

namespace json = boost::json;

mcp::error_object invalid_params(std::string message) {
    return mcp::error_object{mcp::rpc_code::invalid_params, std::move(message), std::nullopt};
}

mcp::error_object no_run(core::error const& e, std::string_view refused) {
    if (e.code == "stopping") {
        spdlog::info("{} refused: airlock is stopping", refused);
        return mcp::error_object{mcp::rpc_code::internal_error,
                                 "airlock is stopping: this request was refused before it started (nothing was done); "
                                 "send it again once airlock is back",
                                 std::nullopt};
    }
    if (e.code == "reloaded") {
        spdlog::info("{} refused: it began as the configuration was reloaded", refused);
        return mcp::error_object{mcp::rpc_code::internal_error,
                                 "airlock's configuration was reloaded as this request began: it was refused before it "
                                 "started (nothing was done); send it again",
                                 std::nullopt};
    }
    spdlog::error("journal unavailable, {} refused: {}", refused, e.message);
    return mcp::error_object{mcp::rpc_code::internal_error, "the journal is unavailable", std::nullopt};
}

mcp::error_object no_such_resource(std::string const& uri) {
    return mcp::error_object{resource_not_found, "Resource not found: " + uri, json::value(json::object{{"uri", uri}})};
}

bool is_method_not_found(mcp::handler_result const& r) {
    return !r && r.error().code == mcp::rpc_code::method_not_found;
}

}  // namespace airlock::service
