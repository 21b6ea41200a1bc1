// The MCP client against real servers over Streamable HTTP, in both eras, and the upstream faults
// that decide what a failed call means.
#include "mcp/client/client.hpp"
#include "mcp/client/stdio_transport.hpp"

#include "tests/support/mcp_http_client.hpp"
#include "tests/support/node_peers.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/with_client.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include <fstream>
#include <optional>

using namespace airlock;
namespace asio = boost::asio;
namespace peers = airlock::testing::peers;
using airlock::testing::with_client;

namespace {

std::unique_ptr<mcp::mcp_client> http_client(asio::io_context& ioc, std::string name, std::string url) {
    mcp::client_options co;
    co.server_name = name;
    co.connect_deadline = std::chrono::seconds(20);
    co.call_deadline = std::chrono::seconds(20);
    return testing::http_mcp_client(ioc.get_executor(), std::move(url), std::move(co));
}

core::tool_id id(char const* uri) { return *core::tool_id::parse(uri); }

}  // namespace

TEST_CASE("server-everything over Streamable HTTP: the legacy era, get-sum and progress over SSE") {
    testing::everything_server server;
    asio::io_context ioc;
    auto c = http_client(ioc, "everything", server.url());
    std::optional<core::tool_result<mcp::call_tool_result>> sum, slow;
    std::vector<double> progress;
    with_client(ioc, *c, [&]() -> asio::awaitable<void> {
        auto get_sum = id("tool://everything/get.sum");
        auto long_op = id("tool://everything/trigger.long.running.operation");
        boost::json::value sum_args = {{"a", 2}, {"b", 3}};
        boost::json::value long_args = {{"duration", 1}, {"steps", 4}};
        auto on_progress = [&](mcp::progress_params const& p) { progress.push_back(p.progress); };
        sum = co_await c->async_call_tool(get_sum, sum_args, std::nullopt);
        slow = co_await c->async_call_tool(long_op, long_args, std::nullopt, on_progress);
    });
    CHECK(c->current_era() == mcp::era::legacy);
    REQUIRE(sum->has_value());
    CHECK_THAT(boost::json::serialize((*sum)->content), Catch::Contains("is 5"));
    REQUIRE(slow->has_value());
    CHECK(progress.size() >= 3);
}

TEST_CASE("a 2026-07-28 server is detected and get-sum is called in the modern era") {
    testing::modern_proxy proxy;
    asio::io_context ioc;
    auto c = http_client(ioc, "everything", proxy.url());
    std::optional<core::tool_result<mcp::call_tool_result>> sum;
    with_client(ioc, *c, [&]() -> asio::awaitable<void> {
        auto get_sum = id("tool://everything/get.sum");
        boost::json::value args = {{"a", 2}, {"b", 3}};
        sum = co_await c->async_call_tool(get_sum, args, std::nullopt);
    });
    CHECK(c->current_era() == mcp::era::modern);
    CHECK(c->protocol_version() == "2026-07-28");
    REQUIRE(sum->has_value());
    CHECK_THAT(boost::json::serialize((*sum)->content), Catch::Contains("is 5"));
}

TEST_CASE("an upstream killed mid-call leaves the call in doubt: timed_out") {
    testing::temp_dir dir;
    // A stdio server that answers the handshake and listing, then dies on the first tools/call.
    auto script = dir.path() / "dies.mjs";
    std::ofstream(script) << R"JS(
import readline from 'node:readline';
const rl = readline.createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize')
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} },
                                               serverInfo: { name: 'dies', version: '1' } } });
  else if (m.method === 'tools/list')
    send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'pay', inputSchema: { type: 'object' } }] } });
  else if (m.method === 'tools/call') process.exit(9);
  else if (m.id !== undefined) send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no' } });
});
)JS";
    asio::io_context ioc;
    mcp::stdio_options so;
    so.server_name = "dies";
    so.argv = {peers::node(), script.string()};
    so.stdin_close_grace = std::chrono::milliseconds(200);
    so.sigterm_grace = std::chrono::milliseconds(200);
    mcp::client_options co;
    co.server_name = "dies";
    mcp::mcp_client c(std::make_unique<mcp::stdio_transport>(ioc.get_executor(), so), co);
    std::optional<core::tool_result<boost::json::value>> r;
    with_client(ioc, c, [&]() -> asio::awaitable<void> {
        auto pay = id("tool://dies/pay");
        boost::json::value args = {{"amount", 10}};
        r = co_await c.async_call(pay, args, std::nullopt);
    });
    REQUIRE_FALSE(r->has_value());
    CHECK(r->error().kind == core::tool_error_kind::timed_out);
    CHECK(core::disposition_of(r->error().kind) == core::disposition::in_doubt);
}

TEST_CASE("an upstream that is not listening is unreachable: the call did not happen") {
    asio::io_context ioc;
    // Port 9 on loopback (discard) is closed on these machines; the connection is refused at once.
    auto c = http_client(ioc, "nobody", "http://127.0.0.1:9/mcp");
    std::optional<core::tool_result<boost::json::value>> r;
    with_client(ioc, *c, [&]() -> asio::awaitable<void> {
        auto t = id("tool://nobody/x");
        r = co_await c->async_call(t, boost::json::object{}, std::nullopt);
    });
    REQUIRE_FALSE(r->has_value());
    CHECK(r->error().kind == core::tool_error_kind::unreachable);
}
