#pragma once
// An MCP client over Streamable HTTP, for tests: the transport takes its name from the client
// options, so a test states only what differs (capabilities, deadlines).

#include "mcp/client/client.hpp"
#include "mcp/client/http_transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>

namespace airlock::testing {

inline std::unique_ptr<mcp::mcp_client> http_mcp_client(boost::asio::any_io_executor exec, std::string url,
                                                        mcp::client_options co) {
    mcp::http_transport_options ho;
    ho.server_name = co.server_name;
    ho.url = std::move(url);
    co.kind = mcp::transport_kind::http;
    return std::make_unique<mcp::mcp_client>(std::make_unique<mcp::http_transport>(exec, std::move(ho)), std::move(co));
}

}  // namespace airlock::testing
