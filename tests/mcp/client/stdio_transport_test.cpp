// The stdio transport against real child processes: the npm reference servers, and small Node
// scripts that misbehave on purpose (written to a temporary directory by each test).

#include "mcp/client/stdio_transport.hpp"

#include "tests/support/log_capture.hpp"
#include "tests/support/run_awaitable.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <spdlog/spdlog.h>

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace airlock::mcp;
using namespace std::chrono_literals;
using airlock::testing::log_capture;
using airlock::testing::run_awaitable;
using airlock::testing::temp_dir;
using kind = transport_error::kind;

namespace {

std::string const peers_dir = AIRLOCK_PEERS_DIR;
std::string const node = peers_dir + "/node_modules/.bin/node";
std::string const everything_js = peers_dir + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
std::string const memory_js = peers_dir + "/node_modules/@modelcontextprotocol/server-memory/dist/index.js";

// One script, many misbehaviours: argv[2] is the mode, argv[3] a file that receives every line
// the script reads on stdin (and a few events), so a test can see what airlock sent.
constexpr char const* fake_server_js = R"JS('use strict';
const fs = require('fs');
const readline = require('readline');
const [mode, logFile] = process.argv.slice(2);
const log = (s) => fs.appendFileSync(logFile, s + '\n');
const send = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const keepRunning = mode === 'ignore-eof' || mode === 'ignore-term';
// A reply of 100 kB, its id where a server might put it: first (Python SDK), last (TypeScript SDK),
// near the end before "jsonrpc", or hidden (neither among the first nor the last bytes).
const huge = (id, layout) => {
  const pad = 'x'.repeat(100000);
  if (layout === 'id-first') return JSON.stringify({ jsonrpc: '2.0', id, result: { pad } });
  if (layout === 'id-last') return JSON.stringify({ result: { pad }, jsonrpc: '2.0', id });
  if (layout === 'id-before-jsonrpc') return JSON.stringify({ result: { pad }, id, jsonrpc: '2.0' });
  return JSON.stringify({ result: { pad }, id, _meta: { pad }, jsonrpc: '2.0' });
};
const held = [];
if (keepRunning) setInterval(() => {}, 1000);
if (mode === 'ignore-eof') process.on('SIGTERM', () => { log('got SIGTERM'); process.exit(0); });
if (mode === 'ignore-term') process.on('SIGTERM', () => log('got SIGTERM'));
if (mode === 'server-requests') {
  send({ jsonrpc: '2.0', id: 's1', method: 'ping' });
  send({ jsonrpc: '2.0', id: 's2', method: 'sampling/createMessage', params: {} });
}
if (mode === 'notify') send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  log(line);
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.method === undefined || m.id === undefined) return;
  if (mode === 'silent') return;
  if (mode === 'huge' || mode === 'huge-pair') {
    // huge-pair holds the first call until the second is in, so both are in flight when the huge
    // reply (to the call named huge/LAYOUT) goes out first.
    held.push(m);
    if (held.length < (mode === 'huge-pair' ? 2 : 1)) return;
    const calls = held.splice(0);
    for (const h of calls) if (h.method.startsWith('huge/')) process.stdout.write(huge(h.id, h.method.slice(5)) + '\n');
    for (const h of calls) if (!h.method.startsWith('huge/')) send({ jsonrpc: '2.0', id: h.id, result: { method: h.method } });
    return;
  }
  if (mode === 'die' && m.method === 'die') process.exit(3);
  if (mode === 'reply-then-exit') { send({ jsonrpc: '2.0', id: m.id, result: { last: true } }); process.exit(0); }
  if (mode === 'noise') process.stdout.write('this line is not JSON\n');
  if (mode === 'long-line') process.stdout.write('{"jsonrpc":"2.0","method":"x","params":{"pad":"' + 'x'.repeat(100000) + '"}}\n');
  if (mode === 'log') send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } });
  if (mode === 'bad-reply') { send({ jsonrpc: '2.0', id: m.id, result: 5 }); return; }
  if (mode === 'env') { send({ jsonrpc: '2.0', id: m.id, result: { env: process.env } }); return; }
  send({ jsonrpc: '2.0', id: m.id, result: { method: m.method, pid: process.pid } });
});
rl.on('close', () => { log('stdin closed'); if (!keepRunning) process.exit(0); });
// Last: a test that signals the script waits for this, so the handlers above are in place.
process.stderr.write('fake server starting in mode ' + mode + '\n');
log('ready');
)JS";

struct fake_server {
    temp_dir dir{"airlock-stdio"};
    std::string script = (dir.path() / "fake_server.cjs").string();
    std::string log = (dir.path() / "received.log").string();

    fake_server() { std::ofstream(script) << fake_server_js; }

    std::string received() const {
        std::ifstream in(log);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    // Short grace periods and backoff: the behaviours are the same, the tests stay fast.
    stdio_options options(std::string const& mode) const {
        stdio_options o;
        o.server_name = "fake";
        o.argv = {node, script, mode, log};
        o.stdin_close_grace = 300ms;
        o.sigterm_grace = 300ms;
        o.restart_backoff_initial = 20ms;
        o.restart_backoff_max = 200ms;
        return o;
    }
};

request make_request(std::int64_t id, std::string method, json::object params = {}) {
    return request{id, std::move(method), std::move(params)};
}

request_options within(std::chrono::milliseconds deadline) {
    request_options o;
    o.deadline = deadline;
    return o;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

// Polls `done` every 20 ms until it holds or `limit` passes; true when it held.
template <class Pred>
asio::awaitable<bool> eventually(Pred done, std::chrono::milliseconds limit = 5'000ms) {
    for (auto waited = 0ms; waited < limit; waited += 20ms) {
        if (done()) co_return true;
        co_await sleep_for(20ms);
    }
    co_return done();
}

// The script has installed its signal handlers and reads stdin.
asio::awaitable<bool> ready(fake_server const& fake) {
    auto started = [&fake] { return fake.received().find("ready") != std::string::npos; };
    co_return co_await eventually(started);
}

bool process_is_gone(int pid) {
    // A zombie still answers kill(pid, 0): ESRCH means it was reaped, too.
    return ::kill(pid, 0) == -1 && errno == ESRCH;
}

json::object const& result_of(transport_result<message> const& r) {
    REQUIRE(r.has_value());
    auto const* resp = std::get_if<response>(&*r);
    REQUIRE(resp != nullptr);
    return resp->result;
}

std::string describe(transport_result<message> const& r) {
    if (r) return serialize(*r);
    return std::string(to_string(r.error().what)) + ": " + r.error().detail;
}


stdio_options everything_options() {
    stdio_options o;
    o.server_name = "everything";
    o.argv = {node, everything_js, "stdio"};
    return o;
}

// The legacy handshake, by hand: initialize, then notifications/initialized.
asio::awaitable<transport_result<message>> initialize(transport& t) {
    json::object params{{"protocolVersion", "2025-11-25"},
                        {"capabilities", json::object{}},
                        {"clientInfo", {{"name", "airlock-test"}, {"version", "0"}}}};
    auto r = co_await t.async_request(make_request(1, "initialize", std::move(params)), within(20s));
    if (r && std::holds_alternative<response>(*r)) {
        // GCC 12 destroys a braced temporary inside a co_await expression twice: build it first.
        notification initialized{"notifications/initialized", json::object{}};
        auto sent = co_await t.async_notify(std::move(initialized));
        if (!sent) co_return sent.error();
    }
    co_return r;
}

// One call on a fresh transport, closed afterwards.
transport_result<message> call_once(stdio_options const& o, request req, std::chrono::milliseconds deadline) {
    return run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, o);
        auto r = co_await t.async_request(std::move(req), within(deadline));
        co_await t.async_close();
        co_return r;
    }());
}

asio::awaitable<transport_result<message>> call_numbered(transport& t, std::int64_t i) {
    auto req = make_request(i, "call-" + std::to_string(i));
    co_return co_await t.async_request(std::move(req), within(10s));
}

std::string first_text(json::object const& call_result) {
    auto const& content = call_result.at("content").as_array();
    REQUIRE_FALSE(content.empty());
    return std::string(content.at(0).at("text").as_string());
}

}  // namespace

// ---- the reference server ------------------------------------------------------------------

TEST_CASE("server-everything over stdio answers the initialize handshake") {
    auto r = run_awaitable([]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, everything_options());
        auto r = co_await initialize(t);
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    auto const& result = result_of(r);
    CHECK(result.at("protocolVersion").is_string());
    CHECK(result.at("serverInfo").at("name").is_string());
    CHECK(result.at("capabilities").as_object().contains("tools"));
}

TEST_CASE("tools/list over stdio lists get-sum among server-everything's tools") {
    auto r = run_awaitable([]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, everything_options());
        auto init = co_await initialize(t);
        if (!init) co_return init;
        auto r = co_await t.async_request(make_request(2, "tools/list"), within(20s));
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    std::set<std::string> names;
    for (auto const& tool : result_of(r).at("tools").as_array()) names.insert(std::string(tool.at("name").as_string()));
    CHECK(names.count("get-sum") == 1);
    CHECK(names.count("echo") == 1);
    CHECK(names.count("trigger-long-running-operation") == 1);
}

TEST_CASE("tools/call get-sum over stdio returns 5 for 2 + 3") {
    auto r = run_awaitable([]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, everything_options());
        auto init = co_await initialize(t);
        if (!init) co_return init;
        json::object params{{"name", "get-sum"}, {"arguments", {{"a", 2}, {"b", 3}}}};
        auto r = co_await t.async_request(make_request(2, "tools/call", std::move(params)), within(20s));
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    auto const& result = result_of(r);
    CHECK_FALSE((result.contains("isError") && result.at("isError").as_bool()));
    CHECK(first_text(result) == "The sum of 2 and 3 is 5.");
}

TEST_CASE("a long-running tool's progress notifications reach the call's callback") {
    std::vector<notification> seen;
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, everything_options());
        std::vector<notification> unrelated;
        t.set_notification_handler([&](notification const& n) { unrelated.push_back(n); });
        auto init = co_await initialize(t);
        if (!init) co_return init;
        json::object params{{"name", "trigger-long-running-operation"},
                            {"arguments", {{"duration", 0.3}, {"steps", 3}}},
                            {"_meta", {{"progressToken", 7}}}};
        request_options opts = within(20s);
        opts.on_notification = [&](notification const& n) { seen.push_back(n); };
        auto r = co_await t.async_request(make_request(7, "tools/call", std::move(params)), std::move(opts));
        co_await t.async_close();
        for (auto const& n : unrelated) CHECK(n.method != "notifications/progress");
        co_return r;
    }());
    INFO(describe(r));
    CHECK(first_text(result_of(r)).find("Long running operation completed") != std::string::npos);
    REQUIRE(seen.size() == 3);
    for (std::size_t i = 0; i < seen.size(); ++i) {
        CHECK(seen[i].method == "notifications/progress");
        REQUIRE(seen[i].params);
        CHECK(seen[i].params->at("progressToken") == json::value(7));
        CHECK(seen[i].params->at("progress").to_number<double>() == static_cast<double>(i + 1));
    }
}

TEST_CASE("server-memory over stdio returns the entities it created") {
    temp_dir dir{"airlock-memory"};
    stdio_options o;
    o.server_name = "memory";
    o.argv = {node, memory_js};
    o.env = {{"MEMORY_FILE_PATH", (dir.path() / "memory.jsonl").string()}};
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, o);
        auto init = co_await initialize(t);
        if (!init) co_return init;
        json::object entity{{"name", "airlock"}, {"entityType", "project"}, {"observations", {"speaks MCP over stdio"}}};
        json::object create{{"name", "create_entities"}, {"arguments", {{"entities", json::array{entity}}}}};
        auto created = co_await t.async_request(make_request(2, "tools/call", std::move(create)), within(20s));
        if (!created) co_return created;
        json::object read{{"name", "read_graph"}, {"arguments", json::object{}}};
        auto r = co_await t.async_request(make_request(3, "tools/call", std::move(read)), within(20s));
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    auto const& entities = result_of(r).at("structuredContent").at("entities").as_array();
    REQUIRE(entities.size() == 1);
    CHECK(entities[0].at("name") == "airlock");
    CHECK(entities[0].at("observations").as_array().at(0) == "speaks MCP over stdio");
}

// ---- faults --------------------------------------------------------------------------------

TEST_CASE("a non-JSON line on a server's stdout is logged and skipped, and the call still succeeds") {
    fake_server fake;
    log_capture logs;
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("noise"));
        auto r = co_await t.async_request(make_request(1, "tools/list"), within(10s));
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    CHECK(result_of(r).at("method") == "tools/list");
    CHECK(logs.contains("upstream fake: skipped a stdout line that is not a JSON-RPC message"));
    CHECK(logs.contains("this line is not JSON"));
}

TEST_CASE("a stdout line longer than the maximum is skipped and the next message is read") {
    fake_server fake;
    log_capture logs;
    auto o = fake.options("long-line");
    o.max_message_bytes = 1'000;
    auto r = call_once(o, make_request(1, "tools/list"), 10s);
    INFO(describe(r));
    CHECK(result_of(r).at("method") == "tools/list");
    CHECK(logs.contains("skipped a stdout message longer than 1000 bytes"));
}

namespace {

// Two calls in flight on a server in mode huge-pair: `huge/LAYOUT` (answered first, with 100 kB)
// and `tools/list`; the limit is 1000 bytes. The results in that order. The deadlines are far
// beyond the test's run unless `huge_deadline` says otherwise: a call fails for its reply's size.
std::pair<transport_result<message>, transport_result<message>> call_huge_and_small(
    fake_server const& fake, std::string const& layout, std::chrono::milliseconds huge_deadline = 60s) {
    auto o = fake.options("huge-pair");
    o.max_message_bytes = 1'000;
    return run_awaitable([&]() -> asio::awaitable<std::pair<transport_result<message>, transport_result<message>>> {
        using namespace asio::experimental::awaitable_operators;
        stdio_transport t(co_await asio::this_coro::executor, o);
        auto huge = t.async_request(make_request(7, "huge/" + layout), within(huge_deadline));
        auto small = t.async_request(make_request(8, "tools/list"), within(60s));
        auto [huge_result, small_result] = co_await (std::move(huge) && std::move(small));
        co_await t.async_close();
        co_return std::pair(std::move(huge_result), std::move(small_result));
    }());
}

// call_huge_and_small with `layout`: "ok" when the huge reply fails its call for its size, by its
// id 7, and the other call gets its own reply; otherwise the first of those that did not hold, with
// what came back, so a failing CHECK shows why.
std::string huge_and_small_verdict(std::string const& layout) {
    fake_server fake;
    auto [huge, small] = call_huge_and_small(fake, layout);
    if (huge.has_value()) return "the huge reply was read: " + describe(huge);
    if (huge.error().what != kind::protocol) return "the huge call failed as another kind: " + describe(huge);
    if (huge.error().detail.find("more than 1000 bytes in reply to request 7") == std::string::npos)
        return "the huge call's error does not name its size and id: " + describe(huge);
    if (!small.has_value() || !std::get_if<response>(&*small)) return "the small call got no result: " + describe(small);
    if (result_of(small).at("method") != "tools/list") return "the small call got another reply: " + describe(small);
    return "ok";
}

}  // namespace

TEST_CASE("a reply longer than the maximum with its id last fails its call at once while another call gets its reply") {
    fake_server fake;
    log_capture logs;
    auto [huge, small] = call_huge_and_small(fake, "id-last");
    INFO(describe(huge));
    REQUIRE_FALSE(huge.has_value());
    CHECK(huge.error().what == kind::protocol);
    CHECK_THAT(huge.error().detail, Catch::Contains("more than 1000 bytes in reply to request 7") &&
                                        Catch::Contains("max_message_bytes"));
    INFO(describe(small));
    CHECK(result_of(small).at("method") == "tools/list");
    CHECK(logs.contains("the reply to request 7 is longer than 1000 bytes"));
}

TEST_CASE("a reply longer than the maximum with its id just before jsonrpc fails its call at once while another call gets its reply") {
    CHECK(huge_and_small_verdict("id-before-jsonrpc") == "ok");
}

TEST_CASE("a reply longer than the maximum with its id first fails its call at once while another call gets its reply") {
    CHECK(huge_and_small_verdict("id-first") == "ok");
}

TEST_CASE("a reply longer than the maximum whose id cannot be seen fails the only call in flight") {
    fake_server fake;
    auto o = fake.options("huge");
    o.max_message_bytes = 1'000;
    auto r = call_once(o, make_request(3, "huge/id-hidden"), 60s);
    INFO(describe(r));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::protocol);
    CHECK_THAT(r.error().detail, Catch::Contains("more than 1000 bytes in reply to request 3"));
}

TEST_CASE("a reply longer than the maximum whose id cannot be seen fails neither of two calls in flight") {
    fake_server fake;
    log_capture logs;
    auto [huge, small] = call_huge_and_small(fake, "id-hidden", 1s);
    INFO(describe(huge));
    REQUIRE_FALSE(huge.has_value());
    CHECK(huge.error().what == kind::deadline);
    INFO(describe(small));
    CHECK(result_of(small).at("method") == "tools/list");
    CHECK(logs.contains("skipped a stdout message longer than 1000 bytes"));
}

TEST_CASE("a server that exits mid-call fails the pending call as no_reply") {
    fake_server fake;
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("die"));
        auto r = co_await t.async_request(make_request(1, "die"), within(10s));
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::no_reply);
    CHECK(r.error().detail.find("exited with status 3") != std::string::npos);
}

TEST_CASE("a reply written just before the server exits is still delivered") {
    fake_server fake;
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("reply-then-exit"));
        auto r = co_await t.async_request(make_request(1, "tools/list"), within(10s));
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    CHECK(result_of(r).at("last") == true);
}

TEST_CASE("a server that died is restarted by the next call") {
    fake_server fake;
    int first_pid = 0, second_pid = 0;
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("die"));
        auto opened = co_await t.async_open();
        if (!opened) co_return opened.error();
        first_pid = t.pid().value_or(0);
        auto died = co_await t.async_request(make_request(1, "die"), within(10s));
        CHECK_FALSE(died.has_value());
        auto r = co_await t.async_request(make_request(2, "tools/list"), within(10s));
        second_pid = t.pid().value_or(0);
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    CHECK(result_of(r).at("method") == "tools/list");
    CHECK(first_pid > 0);
    CHECK(second_pid > 0);
    CHECK(first_pid != second_pid);
    CHECK(process_is_gone(first_pid));
}

TEST_CASE("a reply that is not valid JSON-RPC fails its call as protocol without waiting for the deadline") {
    fake_server fake;
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("bad-reply"));
        auto r = co_await t.async_request(make_request(5, "tools/list"), within(60s));
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::protocol);
    CHECK(r.error().detail.find("request 5") != std::string::npos);
}

TEST_CASE("concurrent calls from two threads each receive their own reply") {
    fake_server fake;
    asio::io_context ioc;
    stdio_transport t(ioc.get_executor(), fake.options("echo"));
    std::vector<std::future<transport_result<message>>> calls;
    for (std::int64_t i = 1; i <= 20; ++i)
        calls.push_back(asio::co_spawn(asio::make_strand(ioc), call_numbered(t, i), asio::use_future));
    std::thread first([&] { ioc.run(); });
    std::thread second([&] { ioc.run(); });
    std::vector<transport_result<message>> results;
    for (auto& c : calls) results.push_back(c.get());
    asio::co_spawn(ioc, t.async_close(), asio::use_future).get();
    first.join();
    second.join();
    for (std::size_t i = 0; i < results.size(); ++i) {
        INFO(describe(results[i]));
        REQUIRE(results[i].has_value());
        auto const* resp = std::get_if<response>(&*results[i]);
        REQUIRE(resp != nullptr);
        CHECK(resp->id == request_id{static_cast<std::int64_t>(i + 1)});
        CHECK(resp->result.at("method") == json::value("call-" + std::to_string(i + 1)));
    }
}

TEST_CASE("a call past its deadline fails deadline and the server receives notifications/cancelled") {
    fake_server fake;
    bool cancel_arrived = false;
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("silent"));
        auto slow_call = make_request(42, "tools/call", json::object{{"name", "slow"}});
        auto r = co_await t.async_request(std::move(slow_call), within(300ms));
        auto condition = [&fake] { return fake.received().find("notifications/cancelled") != std::string::npos; };
        cancel_arrived = co_await eventually(condition);
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::deadline);
    REQUIRE(cancel_arrived);
    json::object cancelled;
    std::istringstream lines(fake.received());
    for (std::string line; std::getline(lines, line);)
        if (line.find("notifications/cancelled") != std::string::npos) cancelled = json::parse(line).as_object();
    CHECK(cancelled.at("params").at("requestId") == 42);
    CHECK(cancelled.at("params").at("reason").is_string());
}

TEST_CASE("a call its caller gives up on fails cancelled, not deadline, and the server is told") {
    using namespace asio::experimental::awaitable_operators;
    fake_server fake;
    std::optional<transport_result<message>> outcome;
    bool cancel_arrived = false;
    run_awaitable([&]() -> asio::awaitable<void> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("silent"));
        auto call = [&]() -> asio::awaitable<void> {
            auto slow_call = make_request(7, "tools/call", json::object{{"name", "slow"}});
            outcome = co_await t.async_request(std::move(slow_call), within(60s));
        };
        // The caller leaves once the server holds the call, long before its deadline.
        auto caller_leaves = [&]() -> asio::awaitable<void> {
            auto received = [&fake] { return fake.received().find("\"slow\"") != std::string::npos; };
            co_await eventually(received);
        };
        auto racing = call();
        auto leaving = caller_leaves();
        co_await (std::move(racing) || std::move(leaving));
        auto told = [&fake] { return fake.received().find("notifications/cancelled") != std::string::npos; };
        cancel_arrived = co_await eventually(told);
        co_await t.async_close();
    }());
    REQUIRE(outcome);
    INFO(describe(*outcome));
    REQUIRE_FALSE(outcome->has_value());
    CHECK(outcome->error().what == kind::cancelled);
    CHECK(to_string(outcome->error().what) == "cancelled");
    CHECK(outcome->error().detail.find("the call was cancelled") != std::string::npos);
    CHECK(outcome->error().detail.find("deadline") == std::string::npos);
    CHECK(cancel_arrived);
}

TEST_CASE("the child's environment holds only the configured variables and PATH") {
    fake_server fake;
    ::setenv("AIRLOCK_TEST_SECRET", "hunter2", 1);
    auto o = fake.options("env");
    o.env = {{"GREETING", "hello"}};
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, o);
        auto r = co_await t.async_request(make_request(1, "env"), within(10s));
        co_await t.async_close();
        co_return r;
    }());
    ::unsetenv("AIRLOCK_TEST_SECRET");
    INFO(describe(r));
    auto const& env = result_of(r).at("env").as_object();
    std::set<std::string> keys;
    for (auto const& kv : env) keys.insert(std::string(kv.key()));
    CHECK(keys == std::set<std::string>{"GREETING", "PATH"});
    CHECK(env.at("GREETING") == "hello");
    CHECK(env.at("PATH") == json::value(std::getenv("PATH")));
}

TEST_CASE("closing the transport closes the server's stdin and the server exits by itself") {
    fake_server fake;
    log_capture logs;
    int pid = 0;
    run_awaitable([&]() -> asio::awaitable<void> {
        auto o = fake.options("echo");
        o.stdin_close_grace = 10s;  // generous: a slow machine must not turn this into a SIGTERM test
        stdio_transport t(co_await asio::this_coro::executor, o);
        auto opened = co_await t.async_open();
        REQUIRE(opened.has_value());
        pid = t.pid().value_or(0);
        bool started = co_await ready(fake);
        REQUIRE(started);
        co_await t.async_close();
    }());
    REQUIRE(pid > 0);
    CHECK(process_is_gone(pid));
    CHECK(fake.received().find("stdin closed") != std::string::npos);
    CHECK_FALSE(logs.contains("SIGTERM"));
    CHECK(logs.contains("exited with status 0"));
}

TEST_CASE("a server that ignores stdin EOF is stopped with SIGTERM and reaped") {
    fake_server fake;
    log_capture logs;
    int pid = 0;
    run_awaitable([&]() -> asio::awaitable<void> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("ignore-eof"));
        auto opened = co_await t.async_open();
        REQUIRE(opened.has_value());
        pid = t.pid().value_or(0);
        bool started = co_await ready(fake);  // SIGTERM must find the script's handler installed
        REQUIRE(started);
        co_await t.async_close();
    }());
    REQUIRE(pid > 0);
    CHECK(process_is_gone(pid));
    auto received = fake.received();
    CHECK(received.find("stdin closed") != std::string::npos);
    CHECK(received.find("got SIGTERM") != std::string::npos);
    CHECK_FALSE(logs.contains("SIGKILL"));
}

TEST_CASE("a server that ignores SIGTERM is killed with SIGKILL and reaped") {
    fake_server fake;
    log_capture logs;
    int pid = 0;
    run_awaitable([&]() -> asio::awaitable<void> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("ignore-term"));
        auto opened = co_await t.async_open();
        REQUIRE(opened.has_value());
        pid = t.pid().value_or(0);
        bool started = co_await ready(fake);  // SIGTERM must find the script's handler installed
        REQUIRE(started);
        co_await t.async_close();
    }());
    REQUIRE(pid > 0);
    CHECK(process_is_gone(pid));
    CHECK(fake.received().find("got SIGTERM") != std::string::npos);
    CHECK(logs.contains("was killed by signal 9"));
}

TEST_CASE("destroying a transport without closing it kills the child and leaves no zombie") {
    fake_server fake;
    int pid = 0;
    bool gone_at_once = false;
    run_awaitable([&]() -> asio::awaitable<void> {
        {
            stdio_transport t(co_await asio::this_coro::executor, fake.options("ignore-term"));
            auto opened = co_await t.async_open();
            REQUIRE(opened.has_value());
            pid = t.pid().value_or(0);
        }
        gone_at_once = pid > 0 && process_is_gone(pid);
    }());
    REQUIRE(pid > 0);
    CHECK(gone_at_once);
}

TEST_CASE("stderr lines of the server are logged tagged with the server name") {
    fake_server fake;
    log_capture logs;
    bool logged = false;
    run_awaitable([&]() -> asio::awaitable<void> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("echo"));
        auto opened = co_await t.async_open();
        REQUIRE(opened.has_value());
        auto condition = [&] { return logs.contains("info upstream fake stderr: fake server starting in mode echo"); };
        logged = co_await eventually(condition);
        co_await t.async_close();
    }());
    CHECK(logged);
}

TEST_CASE("a server's ping is answered with an empty result and an unknown request with -32601") {
    fake_server fake;
    bool both = false;
    run_awaitable([&]() -> asio::awaitable<void> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("server-requests"));
        auto opened = co_await t.async_open();
        REQUIRE(opened.has_value());
        auto condition = [&] {
            auto got = fake.received();
            return got.find("\"s1\"") != std::string::npos && got.find("\"s2\"") != std::string::npos;
        };
        both = co_await eventually(condition);
        co_await t.async_close();
    }());
    REQUIRE(both);
    json::object ping_reply, sampling_reply;
    std::istringstream lines(fake.received());
    for (std::string line; std::getline(lines, line);) {
        if (line.find("\"s1\"") != std::string::npos) ping_reply = json::parse(line).as_object();
        if (line.find("\"s2\"") != std::string::npos) sampling_reply = json::parse(line).as_object();
    }
    CHECK(ping_reply.at("result") == json::object{});
    CHECK(sampling_reply.at("error").at("code") == rpc_code::method_not_found);
}

TEST_CASE("a server request reaches the server request handler and its answer goes back") {
    fake_server fake;
    bool answered = false;
    run_awaitable([&]() -> asio::awaitable<void> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("server-requests"));
        t.set_server_request_handler(
            [](request r) -> asio::awaitable<boost::system::result<json::object, error_object>> {
                co_return json::object{{"handled", r.method}};
            });
        auto opened = co_await t.async_open();
        REQUIRE(opened.has_value());
        auto condition = [&] { return fake.received().find("\"handled\"") != std::string::npos; };
        answered = co_await eventually(condition);
        co_await t.async_close();
    }());
    REQUIRE(answered);
    json::object reply;
    std::istringstream lines(fake.received());
    for (std::string line; std::getline(lines, line);)
        if (line.find("\"s2\"") != std::string::npos) reply = json::parse(line).as_object();
    CHECK(reply.at("result").at("handled") == "sampling/createMessage");
}

TEST_CASE("a log message goes to the one call in flight that asked for request-scoped logging") {
    fake_server fake;
    std::vector<std::string> to_call, to_handler;
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("log"));
        t.set_notification_handler([&](notification const& n) { to_handler.push_back(n.method); });
        json::object params{{"name", "x"}, {"_meta", {{"io.modelcontextprotocol/logLevel", "info"}}}};
        request_options opts = within(10s);
        opts.on_notification = [&](notification const& n) { to_call.push_back(n.method); };
        auto r = co_await t.async_request(make_request(1, "tools/call", std::move(params)), std::move(opts));
        co_await t.async_close();
        co_return r;
    }());
    INFO(describe(r));
    REQUIRE(r.has_value());
    CHECK(to_call == std::vector<std::string>{"notifications/message"});
    CHECK(to_handler.empty());
}

TEST_CASE("a notification not tied to a call reaches the notification handler") {
    fake_server fake;
    std::vector<std::string> methods;
    run_awaitable([&]() -> asio::awaitable<void> {
        stdio_transport t(co_await asio::this_coro::executor, fake.options("notify"));
        t.set_notification_handler([&](notification const& n) { methods.push_back(n.method); });
        auto opened = co_await t.async_open();
        REQUIRE(opened.has_value());
        auto condition = [&] { return !methods.empty(); };
        co_await eventually(condition);
        co_await t.async_close();
    }());
    REQUIRE(methods.size() == 1);
    CHECK(methods[0] == "notifications/tools/list_changed");
}

TEST_CASE("a command that is not in PATH fails not_sent") {
    stdio_options o;
    o.server_name = "missing";
    o.argv = {"airlock-no-such-server-binary"};
    auto r = run_awaitable([&]() -> asio::awaitable<transport_result<message>> {
        stdio_transport t(co_await asio::this_coro::executor, o);
        auto r = co_await t.async_request(make_request(1, "tools/list"), within(1s));
        co_await t.async_close();
        co_return r;
    }());
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what == kind::not_sent);
    CHECK(r.error().detail.find("airlock-no-such-server-binary") != std::string::npos);
}

TEST_CASE("the destination of a stdio transport is the configured argv[0]") {
    asio::io_context ioc;
    stdio_options o;
    o.argv = {"npx", "-y", "some-server"};
    stdio_transport t(ioc.get_executor(), o);
    CHECK(t.destination() == airlock::core::destination{airlock::core::process_destination{"npx"}});
}
