// The MCP client against real servers from npm, over stdio.
#include "mcp/client/client.hpp"
#include "mcp/client/stdio_transport.hpp"

#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/with_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include <filesystem>
#include <optional>
#include <set>
#include <fstream>

using namespace airlock;
namespace asio = boost::asio;
namespace peers = airlock::testing::peers;
using airlock::testing::with_client;

namespace {

std::unique_ptr<mcp::mcp_client> stdio_client(asio::io_context& ioc, std::string name, std::vector<std::string> argv,
                                              std::map<std::string, std::string> env = {}) {
    mcp::stdio_options so;
    so.server_name = name;
    so.argv = std::move(argv);
    so.env = std::move(env);
    so.stdin_close_grace = std::chrono::milliseconds(500);
    so.sigterm_grace = std::chrono::milliseconds(500);
    mcp::client_options co;
    co.server_name = name;
    co.kind = mcp::transport_kind::stdio;
    co.connect_deadline = std::chrono::seconds(20);
    co.call_deadline = std::chrono::seconds(20);
    return std::make_unique<mcp::mcp_client>(std::make_unique<mcp::stdio_transport>(ioc.get_executor(), so), co);
}

core::tool_id id(char const* uri) { return *core::tool_id::parse(uri); }

}  // namespace

TEST_CASE("server-everything over stdio: every tool is listed, with '-' names read as '.'") {
    asio::io_context ioc;
    auto c = stdio_client(ioc, "everything", {peers::node(), peers::everything(), "stdio"});
    std::optional<core::tool_result<std::vector<mcp::upstream_tool>>> listed;
    with_client(ioc, *c, [&]() -> asio::awaitable<void> { listed = co_await c->async_list_tools(); });
    REQUIRE(listed->has_value());
    std::set<std::string> wire;
    for (auto const& t : **listed) wire.insert(t.id.wire_name());
    CHECK(wire.contains("everything__get-sum"));
    CHECK(wire.contains("everything__echo"));
    CHECK(wire.contains("everything__get-structured-content"));
    CHECK((*listed)->size() >= 10);
    CHECK(c->current_era() == mcp::era::legacy);
}

TEST_CASE("server-everything over stdio: get-sum returns 5 for 2 + 3") {
    asio::io_context ioc;
    auto c = stdio_client(ioc, "everything", {peers::node(), peers::everything(), "stdio"});
    std::optional<core::tool_result<mcp::call_tool_result>> r;
    with_client(ioc, *c, [&]() -> asio::awaitable<void> {
        // GCC 12 cannot keep string-literal temporaries in a co_await expression: name them first.
        auto tool = id("tool://everything/get.sum");
        boost::json::value args = {{"a", 2}, {"b", 3}};
        r = co_await c->async_call_tool(tool, args, std::nullopt);
    });
    REQUIRE(r->has_value());
    REQUIRE((*r)->content.size() == 1);
    CHECK_THAT(std::string((*r)->content[0].at("text").as_string()), Catch::Contains("is 5"));
}

TEST_CASE("server-everything over stdio: echo and structured content reach the caller") {
    asio::io_context ioc;
    auto c = stdio_client(ioc, "everything", {peers::node(), peers::everything(), "stdio"});
    std::optional<core::tool_result<boost::json::value>> echoed, structured;
    with_client(ioc, *c, [&]() -> asio::awaitable<void> {
        auto echo = id("tool://everything/echo");
        auto weather = id("tool://everything/get.structured.content");
        boost::json::value echo_args = {{"message", "hello airlock"}};
        boost::json::value weather_args = {{"location", "Chicago"}};
        echoed = co_await c->async_call(echo, echo_args, std::nullopt);
        structured = co_await c->async_call(weather, weather_args, std::nullopt);
    });
    REQUIRE(echoed->has_value());
    CHECK_THAT(boost::json::serialize(**echoed), Catch::Contains("hello airlock"));
    REQUIRE(structured->has_value());
    CHECK((*structured)->as_object().contains("temperature"));
}

TEST_CASE("server-everything over stdio: a long-running operation reports progress to the callback") {
    asio::io_context ioc;
    auto c = stdio_client(ioc, "everything", {peers::node(), peers::everything(), "stdio"});
    std::vector<double> progress;
    std::optional<core::tool_result<mcp::call_tool_result>> r;
    with_client(ioc, *c, [&]() -> asio::awaitable<void> {
        auto on_progress = [&](mcp::progress_params const& p) { progress.push_back(p.progress); };
        auto tool = id("tool://everything/trigger.long.running.operation");
        boost::json::value args = {{"duration", 1}, {"steps", 4}};
        r = co_await c->async_call_tool(tool, args, std::nullopt, on_progress);
    });
    REQUIRE(r->has_value());
    CHECK(progress.size() >= 3);
    CHECK(std::is_sorted(progress.begin(), progress.end()));
}

TEST_CASE("an unknown tool is refused without reaching the server") {
    asio::io_context ioc;
    auto c = stdio_client(ioc, "everything", {peers::node(), peers::everything(), "stdio"});
    std::optional<core::tool_result<boost::json::value>> r;
    with_client(ioc, *c, [&]() -> asio::awaitable<void> {
        auto tool = id("tool://everything/no.such.tool");
        r = co_await c->async_call(tool, boost::json::object{}, std::nullopt);
    });
    REQUIRE_FALSE(r->has_value());
    CHECK(r->error().kind == core::tool_error_kind::refused);
}

TEST_CASE("server-memory over stdio: created entities come back from read_graph") {
    testing::temp_dir dir;
    asio::io_context ioc;
    auto c = stdio_client(ioc, "memory", {peers::node(), peers::memory()},
                          {{"MEMORY_FILE_PATH", (dir.path() / "memory.jsonl").string()}});
    std::optional<core::tool_result<boost::json::value>> created, graph;
    with_client(ioc, *c, [&]() -> asio::awaitable<void> {
        boost::json::object entity{{"name", "airlock"}, {"entityType", "project"},
                                   {"observations", boost::json::array{"guards tool calls"}}};
        boost::json::value entities = {{"entities", boost::json::array{entity}}};
        auto create = id("tool://memory/create_entities");
        auto read_graph = id("tool://memory/read_graph");
        created = co_await c->async_call(create, entities, std::nullopt);
        graph = co_await c->async_call(read_graph, boost::json::object{}, std::nullopt);
    });
    REQUIRE(created->has_value());
    REQUIRE(graph->has_value());
    CHECK_THAT(boost::json::serialize(**graph), Catch::Contains("guards tool calls"));
}

TEST_CASE("server-filesystem over stdio: write then read inside the allowed directory; outside it fails") {
    testing::temp_dir dir;
    auto allowed = std::filesystem::canonical(dir.path()).string();
    asio::io_context ioc;
    auto c = stdio_client(ioc, "fs", {peers::node(), peers::filesystem(), allowed});
    std::optional<core::tool_result<boost::json::value>> written, read, outside;
    with_client(ioc, *c, [&]() -> asio::awaitable<void> {
        auto path = allowed + "/note.txt";
        auto write_file = id("tool://fs/write_file");
        auto read_file = id("tool://fs/read_text_file");
        boost::json::value write_args = {{"path", path}, {"content", "kept safe"}};
        boost::json::value read_args = {{"path", path}};
        boost::json::value outside_args = {{"path", "/etc/hostname"}};
        written = co_await c->async_call(write_file, write_args, std::nullopt);
        read = co_await c->async_call(read_file, read_args, std::nullopt);
        outside = co_await c->async_call(read_file, outside_args, std::nullopt);
    });
    REQUIRE(written->has_value());
    REQUIRE(read->has_value());
    CHECK_THAT(boost::json::serialize(**read), Catch::Contains("kept safe"));
    REQUIRE_FALSE(outside->has_value());
    CHECK(outside->error().kind == core::tool_error_kind::tool_failed);
}

TEST_CASE("an upstream tool name holding \"__\", as another gateway's server__tool does, maps to a ToolId and back") {
    auto name = airlock::mcp::airlock_tool_name("everything__get-sum");
    REQUIRE(name.has_value());
    CHECK(*name == "everything_.get.sum");
    auto id = airlock::core::tool_id::make("inner", *name);
    REQUIRE(id.has_value());
    CHECK(id->wire_name() == "inner__everything_-get-sum");
    auto back = airlock::core::tool_id::from_wire_name(id->wire_name());
    REQUIRE(back.has_value());
    CHECK(*back == *id);
    CHECK(airlock::mcp::airlock_tool_name("a___b").value() == "a_._b");
    CHECK_FALSE(airlock::mcp::airlock_tool_name("__hidden").has_value());  // a leading '_' stays unrepresentable
}

TEST_CASE("calls cancelled before or during the handshake leave the client free to connect, and later calls share one session") {
    asio::io_context ioc;
    mcp::stdio_options so;
    so.server_name = "everything";
    so.argv = {peers::node(), peers::everything(), "stdio"};
    so.stdin_close_grace = std::chrono::milliseconds(500);
    so.sigterm_grace = std::chrono::milliseconds(500);
    mcp::client_options co;
    co.server_name = "everything";
    co.kind = mcp::transport_kind::stdio;
    // Short, so a handshake left marked as under way shows as "connect timed out" soon.
    co.connect_deadline = std::chrono::seconds(5);
    co.call_deadline = std::chrono::seconds(20);
    mcp::mcp_client c(std::make_unique<mcp::stdio_transport>(ioc.get_executor(), so), co);
    std::optional<core::tool_result<mcp::call_tool_result>> after;
    int ended = 0;
    std::uint64_t connection = 0;
    with_client(ioc, c, [&]() -> asio::awaitable<void> {
        auto exec = co_await asio::this_coro::executor;
        // Cancelled at once (before the handshake can begin), then at moments inside it.
        for (int delay_ms : {0, 0, 1, 2, 5, 10, 20, 40}) {
            asio::cancellation_signal cancel;
            bool done = false;
            auto tool = id("tool://everything/echo");
            boost::json::value args = {{"message", "cut off"}};
            auto on_end = [&](std::exception_ptr, core::tool_result<mcp::call_tool_result>) {
                done = true;
                ++ended;
            };
            asio::co_spawn(exec, c.async_call_tool(tool, args, std::nullopt),
                           asio::bind_cancellation_slot(cancel.slot(), on_end));
            if (delay_ms > 0) {
                asio::steady_timer t(exec, std::chrono::milliseconds(delay_ms));
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            }
            cancel.emit(asio::cancellation_type::terminal);
            while (!done) {
                asio::steady_timer t(exec, std::chrono::milliseconds(5));
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            }
        }
        auto tool = id("tool://everything/echo");
        boost::json::value args = {{"message", "after the cancellations"}};
        after = co_await c.async_call_tool(tool, args, std::nullopt);
        connection = c.connection();
    });
    CHECK(ended == 8);
    CHECK(connection == 1);  // one handshake: no cancelled caller made the next one start another
    REQUIRE(after.has_value());
    INFO((after->has_value() ? std::string() : after->error().detail));
    REQUIRE(after->has_value());
    CHECK_THAT(std::string((*after)->content.at(0).at("text").as_string()), Catch::Contains("after the cancellations"));
}
