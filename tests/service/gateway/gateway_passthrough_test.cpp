// The gateway beyond tools: resources, prompts, completion and logging passed through to real
// upstreams (the project's conformance fixture, and server-everything for a second one), governed
// per server and journaled; and the relays of what an upstream sends while a call runs (log
// messages, sampling questions, resource updates) and of a client's cancellation.
#include "service/gateway/gateway.hpp"

#include "mcp/client/stdio_transport.hpp"
#include "store/memory_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/mcp_http_client.hpp"
#include "tests/support/peers.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <optional>
#include <set>

using namespace airlock;
namespace asio = boost::asio;
namespace json = boost::json;
namespace peers = airlock::testing::peers;

namespace {

constexpr char const* alice_yaml = R"(
apiVersion: airlock/v1
kind: Agent
metadata: { name: alice-desk, version: "1" }
spec:
  tools:
    - ref: tool://fixture/test_simple_text
      mutates: false
    - ref: tool://fixture/test_tool_with_logging
      mutates: false
    - ref: tool://fixture/test_sampling
      mutates: false
    - ref: tool://fixture/test_sampling_after_delay
      mutates: false
    - ref: tool://fixture/test_custom_header
      mutates: false
    - ref: tool://fixture/test_bad_custom_header
      mutates: false
    - ref: tool://everything/echo
      mutates: false
    - ref: tool://twin/test_simple_text
      mutates: false
  budgets: {}
)";

// Granted a tool of a server no upstream provides: sees none of the upstreams' resources or prompts.
constexpr char const* bob_yaml = R"(
apiVersion: airlock/v1
kind: Agent
metadata: { name: bob-desk, version: "1" }
spec:
  tools:
    - ref: tool://elsewhere/thing
      mutates: false
  budgets: {}
)";

std::string fixture_script() { return std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/conformance_server.mjs"; }

std::shared_ptr<mcp::mcp_client> stdio_client(asio::io_context& ioc, std::string name, std::vector<std::string> argv) {
    mcp::stdio_options so;
    so.server_name = name;
    so.argv = std::move(argv);
    so.stdin_close_grace = std::chrono::milliseconds(300);
    so.sigterm_grace = std::chrono::milliseconds(300);
    mcp::client_options co;
    co.server_name = name;
    co.capabilities = {{"sampling", json::object{}}, {"elicitation", json::object{}}};
    return std::make_shared<mcp::mcp_client>(std::make_unique<mcp::stdio_transport>(ioc.get_executor(), so), co);
}

std::shared_ptr<mcp::mcp_client> http_client(asio::io_context& ioc, std::string name, std::string url) {
    mcp::client_options co;
    co.server_name = name;
    co.capabilities = {{"sampling", json::object{}}, {"elicitation", json::object{}}};
    return testing::http_mcp_client(ioc.get_executor(), std::move(url), std::move(co));
}

struct harness {
    asio::io_context ioc;
    std::shared_ptr<store::memory_store> journal = std::make_shared<store::memory_store>();
    std::vector<std::shared_ptr<mcp::mcp_client>> clients;
    std::shared_ptr<service::gateway> gw;

    // The fixture (prefix: none; its watched resource changes every 100 ms), and with `two`
    // server-everything as a second, prefixed upstream.
    // With `fixture_url`, the fixture is reached over Streamable HTTP at that URL instead.
    // With `twin`, a second instance of the fixture ("twin", also prefix: none) comes after it.
    explicit harness(bool two = false, std::size_t page_size = 100, std::string const& fixture_url = "",
                     char const* bob_manifest = bob_yaml, bool twin = false) {
        service::gateway_options o;
        o.executor = ioc.get_executor();
        o.list_page_size = page_size;
        if (fixture_url.empty())
            clients.push_back(stdio_client(ioc, "fixture", {peers::node(), fixture_script(), "--transport", "stdio",
                                                            "--watch-interval-ms", "100"}));
        else
            clients.push_back(http_client(ioc, "fixture", fixture_url));
        o.upstreams.push_back({"fixture", clients.back(), false});
        if (two) {
            clients.push_back(stdio_client(ioc, "everything", {peers::node(), peers::everything(), "stdio"}));
            o.upstreams.push_back({"everything", clients.back(), true});
        }
        if (twin) {
            clients.push_back(stdio_client(ioc, "twin", {peers::node(), fixture_script(), "--transport", "stdio"}));
            o.upstreams.push_back({"twin", clients.back(), false});
        }
        REQUIRE(o.egress.add(core::process_destination{peers::node()}).has_value());
        if (!fixture_url.empty()) {
            // http://127.0.0.1:PORT/mcp, exactly (loopback is granted only by an exact entry).
            auto port = std::stoi(fixture_url.substr(fixture_url.rfind(':') + 1));
            REQUIRE(o.egress.add(core::remote_destination{"http", "127.0.0.1", static_cast<std::uint16_t>(port)}).has_value());
        }
        auto alice = core::parse_manifest(alice_yaml);
        auto bob = core::parse_manifest(bob_manifest);
        REQUIRE(alice.has_value());
        REQUIRE(bob.has_value());
        o.principals.push_back({"alice", *alice, false});
        o.principals.push_back({"bob", *bob, false});
        o.journal = journal;
        o.pins = journal;
        auto g = service::gateway::make(std::move(o));
        REQUIRE(g.has_value());
        gw = *g;
    }

    static mcp::request_context context(std::string principal = "alice") {
        mcp::request_context ctx;
        ctx.principal = std::move(principal);
        ctx.session_id = "s1";
        ctx.protocol_version = "2025-11-25";
        ctx.request_id_text = "1";
        return ctx;
    }

    // Callers name their params: GCC 12 mishandles braced temporaries in a co_await expression.
    asio::awaitable<mcp::handler_result> ask(char const* method, json::object params, mcp::request_context& ctx) {
        mcp::request req{std::string("1"), std::string(method), std::move(params)};
        co_return co_await gw->async_handle(std::move(req), ctx);
    }

    // Runs `body`, then closes the upstreams so no child outlives the test.
    template <class F>
    void run(F body) {
        auto task = [&]() -> asio::awaitable<void> {
            std::exception_ptr failure;
            try {
                co_await body();
            } catch (...) {
                failure = std::current_exception();
            }
            for (auto& c : clients) co_await c->async_close();
            if (failure) std::rethrow_exception(failure);
        };
        auto fut = asio::co_spawn(ioc, task(), asio::use_future);
        ioc.run();
        fut.get();
    }

    std::vector<core::record> records() {
        asio::io_context local;
        auto page = asio::co_spawn(local, journal->async_runs({}), asio::use_future);
        local.run();
        auto p = page.get();
        REQUIRE(p.has_value());
        std::vector<core::record> all;
        for (auto const& run : p->runs) {
            asio::io_context local2;
            auto recs = asio::co_spawn(local2, journal->async_read(run.run_id, 1), asio::use_future);
            local2.run();
            auto r = recs.get();
            REQUIRE(r.has_value());
            all.insert(all.end(), r->begin(), r->end());
        }
        return all;
    }
};

// Waits (bounded) until `done` holds, letting the io_context run meanwhile.
asio::awaitable<bool> eventually(std::function<bool()> done) {
    auto exec = co_await asio::this_coro::executor;
    // Bounded: 10 s, far beyond what the fixture needs (it acts within 100 ms).
    for (int i = 0; i < 500; ++i) {
        if (done()) co_return true;
        asio::steady_timer t(exec, std::chrono::milliseconds(20));
        co_await t.async_wait(asio::use_awaitable);
    }
    co_return done();
}

std::string first_text(json::object const& result, char const* list_key) {
    auto const& first = result.at(list_key).as_array().at(0).as_object();
    if (auto const* c = first.if_contains("content")) return std::string(c->at("text").as_string());
    return std::string(first.at("text").as_string());
}

std::vector<std::string> names_of(json::object const& result, char const* key, char const* field = "name") {
    std::vector<std::string> out;
    for (auto const& item : result.at(key).as_array()) out.emplace_back(item.at(field).as_string());
    return out;
}

bool contains(std::vector<std::string> const& v, std::string const& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// Every page of `method`, following nextCursor (at most 50 pages).
asio::awaitable<std::vector<json::object>> all_pages(harness& h, char const* method, mcp::request_context& ctx) {
    std::vector<json::object> pages;
    std::optional<std::string> cursor;
    for (int i = 0; i < 50; ++i) {
        json::object params;
        if (cursor) params["cursor"] = *cursor;
        auto r = co_await h.ask(method, std::move(params), ctx);
        if (!r) throw std::runtime_error(std::string(method) + ": " + r.error().message);
        pages.push_back(*r);
        auto const* next = r->if_contains("nextCursor");
        if (!next) break;
        cursor = std::string(next->as_string());
    }
    co_return pages;
}

// The `field` of every item of every page, in order.
std::vector<std::string> items_of(std::vector<json::object> const& pages, char const* key, char const* field = "name") {
    std::vector<std::string> out;
    for (auto const& p : pages)
        for (auto& n : names_of(p, key, field)) out.push_back(std::move(n));
    return out;
}

// Two sessions' calls to the fixture's test_sampling_after_delay that overlap: A asks after 800 ms;
// B starts at 200 ms and asks after 3 s, so when A's question comes B's call is the latest in
// flight to the same upstream, and when B's comes A's call has ended. Each client answers "answered
// by A|B" and logs the messages it was asked.
struct overlapping_questions {
    std::optional<mcp::handler_result> first, second;
    std::vector<std::string> asked_a, asked_b;
};

overlapping_questions ask_overlapping(harness& h) {
    overlapping_questions o;
    h.run([&]() -> asio::awaitable<void> {
        using namespace asio::experimental::awaitable_operators;
        auto answering = [](std::string who, std::vector<std::string>& log) {
            return [who, &log](std::string, json::object params) -> asio::awaitable<mcp::handler_result> {
                log.push_back(json::serialize(params.at("messages")));
                json::object answer{{"role", "assistant"},
                                    {"content", {{"type", "text"}, {"text", "answered by " + who}}},
                                    {"model", "test-model"}};
                co_return answer;
            };
        };
        auto a = harness::context();
        a.ask_client = answering("A", o.asked_a);
        auto b = harness::context();
        b.session_id = "s2";
        b.ask_client = answering("B", o.asked_b);
        auto call_a = [&]() -> asio::awaitable<void> {
            json::object call{{"name", "test_sampling_after_delay"}, {"arguments", {{"prompt", "a?"}, {"delay_ms", 800}}}};
            o.first = co_await h.ask("tools/call", std::move(call), a);
        };
        auto call_b = [&]() -> asio::awaitable<void> {
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(200));
            co_await t.async_wait(asio::use_awaitable);
            json::object call{{"name", "test_sampling_after_delay"}, {"arguments", {{"prompt", "b?"}, {"delay_ms", 3000}}}};
            o.second = co_await h.ask("tools/call", std::move(call), b);
        };
        co_await (call_a() && call_b());
    });
    return o;
}

}  // namespace

TEST_CASE("a principal granted a tool of an upstream lists and reads its resources, prompts and completions") {
    harness h;
    std::optional<mcp::handler_result> resources, templates, read, prompts, prompt, completion;
    h.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        json::object none;
        resources = co_await h.ask("resources/list", none, ctx);
        templates = co_await h.ask("resources/templates/list", none, ctx);
        json::object uri{{"uri", "test://template/42/data"}};
        read = co_await h.ask("resources/read", std::move(uri), ctx);
        prompts = co_await h.ask("prompts/list", none, ctx);
        json::object get{{"name", "test_prompt_with_arguments"}, {"arguments", {{"arg1", "a"}, {"arg2", "b"}}}};
        prompt = co_await h.ask("prompts/get", std::move(get), ctx);
        json::object complete{{"ref", {{"type", "ref/prompt"}, {"name", "test_prompt_with_arguments"}}},
                              {"argument", {{"name", "arg1"}, {"value", "pa"}}}};
        completion = co_await h.ask("completion/complete", std::move(complete), ctx);
    });
    REQUIRE(resources->has_value());
    CHECK(contains(names_of(**resources, "resources", "uri"), "test://static-text"));
    REQUIRE(templates->has_value());
    CHECK(contains(names_of(**templates, "resourceTemplates", "uriTemplate"), "test://template/{id}/data"));
    REQUIRE(read->has_value());
    CHECK_THAT(first_text(**read, "contents"), Catch::Contains("Data for ID: 42"));
    REQUIRE(prompts->has_value());
    CHECK(contains(names_of(**prompts, "prompts"), "test_simple_prompt"));
    REQUIRE(prompt->has_value());
    CHECK(first_text(**prompt, "messages") == "Prompt with arguments: arg1='a', arg2='b'");
    REQUIRE(completion->has_value());
    auto values = (*completion)->at("completion").at("values").as_array();
    CHECK(values == json::array{"paris", "park", "party"});
}

TEST_CASE("a principal granted nothing of an upstream sees none of its resources, prompts or capabilities") {
    harness h;
    std::optional<mcp::handler_result> resources, read, prompt;
    h.run([&]() -> asio::awaitable<void> {
        co_await h.gw->async_connect_upstreams();
        auto ctx = harness::context("bob");
        json::object none;
        resources = co_await h.ask("resources/list", none, ctx);
        json::object uri{{"uri", "test://static-text"}};
        read = co_await h.ask("resources/read", std::move(uri), ctx);
        json::object get{{"name", "test_simple_prompt"}};
        prompt = co_await h.ask("prompts/get", std::move(get), ctx);
    });
    REQUIRE(resources->has_value());
    CHECK((*resources)->at("resources").as_array().empty());
    REQUIRE_FALSE(read->has_value());
    CHECK(read->error().code == -32002);
    CHECK_FALSE(prompt->has_value());
    auto caps = h.gw->server_capabilities("bob");
    CHECK(caps.contains("tools"));
    CHECK_FALSE(caps.contains("resources"));
    CHECK_FALSE(caps.contains("prompts"));
}

TEST_CASE("the capabilities airlock advertises are those of the upstreams the principal sees") {
    harness h;
    h.run([&]() -> asio::awaitable<void> { co_await h.gw->async_connect_upstreams(); });
    auto caps = h.gw->server_capabilities("alice");
    CHECK(caps.at("resources").at("subscribe") == true);
    CHECK(caps.at("resources").at("listChanged") == true);
    CHECK(caps.at("prompts").at("listChanged") == true);
    CHECK(caps.contains("logging"));
    CHECK(caps.contains("completions"));
}

TEST_CASE("every resources/read and prompts/get is journaled as a note saying who read or got what") {
    harness h;
    h.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        json::object uri{{"uri", "test://static-text"}};
        auto read = co_await h.ask("resources/read", std::move(uri), ctx);
        REQUIRE(read.has_value());
        json::object get{{"name", "test_simple_prompt"}};
        auto got = co_await h.ask("prompts/get", std::move(get), ctx);
        REQUIRE(got.has_value());
    });
    std::vector<json::object> notes;
    for (auto const& r : h.records())
        if (r.kind == core::record_kind::note) notes.push_back(r.body);
    REQUIRE(notes.size() == 2);
    CHECK(notes[0].at("text") == "resources/read");
    CHECK(notes[0].at("principal") == "alice");
    CHECK(notes[0].at("uri") == "test://static-text");
    CHECK(notes[1].at("text") == "prompts/get");
    CHECK(notes[1].at("prompt") == "test_simple_prompt");
}

TEST_CASE("log messages a stdio upstream sends during a call reach that call's client") {
    harness h;
    std::vector<mcp::notification> seen;
    bool all_three = false;
    std::optional<mcp::handler_result> result;
    h.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        ctx.notify = [&](mcp::notification n) -> asio::awaitable<void> {
            seen.push_back(std::move(n));
            co_return;
        };
        json::object call{{"name", "test_tool_with_logging"}, {"arguments", json::object{}}};
        result = co_await h.ask("tools/call", std::move(call), ctx);
        std::function<bool()> three = [&] { return seen.size() >= 3; };
        all_three = co_await eventually(three);
    });
    REQUIRE(result->has_value());
    CHECK_FALSE((*result)->contains("isError"));
    REQUIRE(all_three);
    CHECK(seen[0].method == "notifications/message");
    CHECK(seen[0].params->at("data") == "Tool execution started");
}

TEST_CASE("merged lists of two upstreams come in pages of the configured size, and their cursors lead through each item once") {
    harness whole(true), paged(true, 3);
    std::vector<json::object> tools, prompts, resources, one_page_tools, one_page_prompts;
    whole.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        one_page_tools = co_await all_pages(whole, "tools/list", ctx);
        one_page_prompts = co_await all_pages(whole, "prompts/list", ctx);
    });
    paged.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        tools = co_await all_pages(paged, "tools/list", ctx);
        prompts = co_await all_pages(paged, "prompts/list", ctx);
        resources = co_await all_pages(paged, "resources/list", ctx);
    });
    REQUIRE(one_page_tools.size() == 1);
    auto all_tools = items_of(one_page_tools, "tools");
    // Five fixture tools (the granted test_bad_custom_header is withheld) and everything's echo:
    // the second page crosses from one upstream into the other.
    REQUIRE(all_tools.size() == 6);
    CHECK(items_of(tools, "tools") == all_tools);
    CHECK(tools.size() == 2);
    CHECK(tools[0].at("tools").as_array().size() == 3);
    CHECK_FALSE(tools.back().contains("nextCursor"));

    auto all_prompts = items_of(one_page_prompts, "prompts");
    CHECK(items_of(prompts, "prompts") == all_prompts);
    CHECK(prompts.size() == (all_prompts.size() + 2) / 3);
    CHECK(contains(all_prompts, "test_simple_prompt"));
    CHECK(std::any_of(all_prompts.begin(), all_prompts.end(), [](auto const& n) { return n.starts_with("everything__"); }));
    for (auto const& p : prompts) CHECK(p.at("prompts").as_array().size() <= 3);

    auto uris = items_of(resources, "resources", "uri");
    CHECK(std::set<std::string>(uris.begin(), uris.end()).size() == uris.size());  // none twice
    CHECK(contains(uris, "test://static-text"));
}

TEST_CASE("a list cursor that was altered or comes from another list or caller is refused with -32602") {
    harness h(true, 2);
    std::optional<mcp::handler_result> altered, other_list, other_caller, not_string;
    h.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        json::object none;
        auto first = co_await h.ask("prompts/list", none, ctx);
        REQUIRE(first.has_value());
        std::string cursor(first->at("nextCursor").as_string());
        auto bent = cursor;
        bent[4] = bent[4] == '1' ? '2' : '1';
        json::object p1{{"cursor", bent}};
        altered = co_await h.ask("prompts/list", std::move(p1), ctx);
        json::object p2{{"cursor", cursor}};
        other_list = co_await h.ask("resources/list", std::move(p2), ctx);
        auto bob = harness::context("bob");
        json::object p3{{"cursor", cursor}};
        other_caller = co_await h.ask("prompts/list", std::move(p3), bob);
        json::object p4{{"cursor", 7}};
        not_string = co_await h.ask("tools/list", std::move(p4), ctx);
    });
    for (auto* r : {&altered, &other_list, &other_caller, &not_string}) {
        REQUIRE(r->has_value());
        REQUIRE_FALSE((*r)->has_value());
        CHECK((*r)->error().code == -32602);
        CHECK_THAT((*r)->error().message, Catch::StartsWith("invalid cursor"));
    }
}

TEST_CASE("a 2026-07-28 call over HTTP must mirror the tool's x-mcp-header arguments in matching Mcp-Param headers") {
    harness h;
    std::vector<mcp::handler_result> results;
    h.run([&]() -> asio::awaitable<void> {
        // header value → what came back, in order: matching, base64 of the same, missing, different.
        std::vector<std::optional<std::string>> headers{"us-west1", "=?base64?dXMtd2VzdDE=?=", std::nullopt, "eu-north1"};
        for (auto const& value : headers) {
            auto ctx = harness::context();
            ctx.client_era = mcp::era::modern;
            ctx.param_headers.emplace();
            if (value) ctx.param_headers->add("mcp-param-region", *value);
            json::object call{{"name", "test_custom_header"}, {"arguments", {{"region", "us-west1"}}}};
            results.push_back(co_await h.ask("tools/call", std::move(call), ctx));
        }
        // Where there are no headers (stdio, legacy), there is nothing to check.
        auto plain = harness::context();
        json::object call{{"name", "test_custom_header"}, {"arguments", {{"region", "us-west1"}}}};
        results.push_back(co_await h.ask("tools/call", std::move(call), plain));
    });
    REQUIRE(results.size() == 5);
    for (std::size_t i : {0u, 1u, 4u}) {
        INFO("case " << i);
        REQUIRE(results[i].has_value());
        CHECK(first_text(*results[i], "content") == "region: us-west1");
    }
    REQUIRE_FALSE(results[2].has_value());
    CHECK(results[2].error().code == -32020);
    CHECK_THAT(results[2].error().message, Catch::Contains("required header Mcp-Param-Region is missing"));
    REQUIRE_FALSE(results[3].has_value());
    CHECK(results[3].error().code == -32020);
    CHECK_THAT(results[3].error().message, Catch::Contains("'eu-north1' does not match"));
}

TEST_CASE("a granted tool whose x-mcp-header breaks the spec's rules is left out of tools/list and cannot be called") {
    harness h;
    std::optional<mcp::handler_result> listed, called;
    h.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        json::object none;
        listed = co_await h.ask("tools/list", std::move(none), ctx);
        json::object call{{"name", "test_bad_custom_header"}, {"arguments", {{"region", "us-west1"}}}};
        called = co_await h.ask("tools/call", std::move(call), ctx);
    });
    REQUIRE(listed->has_value());
    std::set<std::string> names;
    for (auto const& t : (**listed).at("tools").as_array()) names.insert(std::string(t.at("name").as_string()));
    CHECK(names.contains("test_custom_header"));
    CHECK_FALSE(names.contains("test_bad_custom_header"));
    REQUIRE(called->has_value());
    CHECK((**called).at("isError") == true);
}

TEST_CASE("a sampling request an upstream sends during a call is asked of that call's client, and its answer returned") {
    harness h;
    std::optional<std::string> asked;
    std::optional<mcp::handler_result> result;
    h.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        ctx.ask_client = [&](std::string method, json::object params) -> asio::awaitable<mcp::handler_result> {
            asked = method + " " + json::serialize(params.at("messages"));
            json::object answer{{"role", "assistant"},
                                {"content", {{"type", "text"}, {"text", "a considered answer"}}},
                                {"model", "test-model"}};
            co_return answer;
        };
        json::object call{{"name", "test_sampling"}, {"arguments", {{"prompt", "what now?"}}}};
        result = co_await h.ask("tools/call", std::move(call), ctx);
    });
    REQUIRE(asked.has_value());
    CHECK_THAT(*asked, Catch::StartsWith("sampling/createMessage ") && Catch::Contains("what now?"));
    REQUIRE(result->has_value());
    CHECK(first_text(**result, "content") == "LLM response: a considered answer");
}

TEST_CASE("over HTTP, a sampling question reaches the client of the call whose stream carried it, not the latest caller") {
    // The fixture over Streamable HTTP: its questions come on the response stream of the call that asks.
    testing::child_process fixture({peers::node(), fixture_script(), "--transport", "http", "--port", "0", "--host", "127.0.0.1"});
    auto line = fixture.wait_for_stderr_line("listening on http://", std::chrono::seconds(30));
    REQUIRE(line);
    harness h(false, 100, line->substr(line->find("http://")));
    auto o = ask_overlapping(h);
    REQUIRE(o.first->has_value());
    REQUIRE(o.second->has_value());
    CHECK(first_text(**o.first, "content") == "LLM response: answered by A");
    CHECK(first_text(**o.second, "content") == "LLM response: answered by B");
    fixture.signal(SIGTERM);
    fixture.wait(std::chrono::seconds(10));
}

TEST_CASE("over stdio, a sampling question while two callers have calls in flight is asked of neither") {
    // A stdio server's question names no call. With the calls of two sessions in flight, handing
    // it to the latest would show one caller's prompt to the other: it is refused instead.
    harness h;
    auto o = ask_overlapping(h);
    CHECK(o.asked_a.empty());
    REQUIRE(o.asked_b.size() == 1);
    CHECK_THAT(o.asked_b.front(), Catch::Contains("b?"));
    // A's question went unanswered, so its call failed; B's, asked when B was alone, got B's answer.
    REQUIRE(o.first.has_value());
    bool const a_failed = !o.first->has_value() || (**o.first).contains("isError");
    CHECK(a_failed);
    REQUIRE(o.second->has_value());
    CHECK(first_text(**o.second, "content") == "LLM response: answered by B");
}

TEST_CASE("over stdio, an upstream that two principals see has its questions asked of nobody, even with one caller") {
    // The question may come after the call that caused it has ended, while another principal's
    // call is the only one in flight: with two tenants on the upstream, nobody can be told apart.
    constexpr char const* bob_too = "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: bob-desk, version: \"1\" }\n"
                                    "spec: { tools: [ { ref: tool://fixture/test_simple_text, mutates: false } ], budgets: {} }\n";
    harness h(false, 100, "", bob_too);
    std::vector<std::string> asked;
    std::optional<mcp::handler_result> result;
    h.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        ctx.ask_client = [&](std::string method, json::object) -> asio::awaitable<mcp::handler_result> {
            asked.push_back(method);
            json::object answer{{"role", "assistant"}, {"content", {{"type", "text"}, {"text", "x"}}}, {"model", "m"}};
            co_return answer;
        };
        json::object call{{"name", "test_sampling"}, {"arguments", {{"prompt", "what now?"}}}};
        result = co_await h.ask("tools/call", std::move(call), ctx);
    });
    CHECK(asked.empty());
    REQUIRE(result.has_value());
    bool const failed = !result->has_value() || (**result).contains("isError");
    CHECK(failed);
}

TEST_CASE("a call the client cancels ends at once, is journaled in doubt, and never waits for the upstream") {
    harness h;
    std::optional<mcp::handler_result> result;
    h.run([&]() -> asio::awaitable<void> {
        auto exec = co_await asio::this_coro::executor;
        asio::cancellation_signal cancel;
        // The upstream's question is never answered: only the cancellation can end the call.
        auto never = std::make_shared<asio::steady_timer>(exec, std::chrono::hours(1));
        auto ctx = harness::context();
        ctx.cancelled = cancel.slot();
        ctx.ask_client = [&, never](std::string, json::object) -> asio::awaitable<mcp::handler_result> {
            asio::post(exec, [&] { cancel.emit(asio::cancellation_type::terminal); });
            co_await never->async_wait(asio::as_tuple(asio::use_awaitable));
            co_return mcp::error_object{mcp::rpc_code::internal_error, "the client went away", std::nullopt};
        };
        json::object call{{"name", "test_sampling"}, {"arguments", {{"prompt", "never answered"}}}};
        result = co_await h.ask("tools/call", std::move(call), ctx);
        never->cancel();
    });
    // An error, not a tool result: the endpoint that cut the call off says so, and only so.
    REQUIRE(result.has_value());
    REQUIRE_FALSE(result->has_value());
    CHECK_THAT(result->error().message, Catch::Contains("cancelled before it finished"));
    std::optional<json::object> failed;
    for (auto const& r : h.records())
        if (r.kind == core::record_kind::effect_failed) failed = r.body;
    REQUIRE(failed.has_value());
    CHECK(failed->at("error_kind") == "timed_out");
    CHECK(failed->at("disposition") == "in_doubt");
    // Ended by the cancellation, not by the call deadline running out.
    CHECK_THAT(std::string(failed->at("detail").as_string()), Catch::Contains("cancelled"));
}

TEST_CASE("resource updates reach the stream of the session subscribed to that URI only, until it unsubscribes") {
    harness h;
    std::vector<std::string> alice_got, alice_other_session_got, bob_got;
    bool updated = false;
    std::optional<mcp::handler_result> subscribed, unsubscribed;
    h.run([&]() -> asio::awaitable<void> {
        // harness::context() is alice's session s1; s2 is another session of hers that did not subscribe.
        auto a = h.gw->add_session_listener("alice", "s1", [&](mcp::notification const& n) { alice_got.push_back(n.method); });
        auto a2 = h.gw->add_session_listener("alice", "s2", [&](mcp::notification const& n) {
            alice_other_session_got.push_back(n.method);
        });
        auto b = h.gw->add_listener("bob", [&](mcp::notification const& n) { bob_got.push_back(n.method); });
        auto ctx = harness::context();
        json::object uri{{"uri", "test://watched-resource"}};
        subscribed = co_await h.ask("resources/subscribe", uri, ctx);
        std::function<bool()> some = [&] { return contains(alice_got, "notifications/resources/updated"); };
        updated = co_await eventually(some);
        unsubscribed = co_await h.ask("resources/unsubscribe", std::move(uri), ctx);
        h.gw->remove_listener(a);
        h.gw->remove_listener(a2);
        h.gw->remove_listener(b);
    });
    REQUIRE(subscribed->has_value());
    REQUIRE(unsubscribed->has_value());
    CHECK(updated);
    CHECK_FALSE(contains(alice_other_session_got, "notifications/resources/updated"));
    CHECK_FALSE(contains(bob_got, "notifications/resources/updated"));
}

TEST_CASE("with several upstreams, lists merge and each read or get goes to the upstream that owns the URI or prompt") {
    harness h(true);
    std::optional<mcp::handler_result> prompts, fixture_read, everything_read, prefixed_get;
    h.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        json::object none;
        prompts = co_await h.ask("prompts/list", none, ctx);
        json::object a{{"uri", "test://static-text"}};
        fixture_read = co_await h.ask("resources/read", std::move(a), ctx);
        // Listed by no one: it belongs to everything's template demo://resource/dynamic/text/{resourceId}.
        json::object b{{"uri", "demo://resource/dynamic/text/1"}};
        everything_read = co_await h.ask("resources/read", std::move(b), ctx);
        json::object get{{"name", "everything__simple-prompt"}};
        prefixed_get = co_await h.ask("prompts/get", std::move(get), ctx);
    });
    REQUIRE(prompts->has_value());
    auto names = names_of(**prompts, "prompts");
    CHECK(contains(names, "test_simple_prompt"));  // prefix: none keeps its names
    CHECK(contains(names, "everything__simple-prompt"));
    CHECK_FALSE(contains(names, "simple-prompt"));
    REQUIRE(fixture_read->has_value());
    CHECK(first_text(**fixture_read, "contents") == "This is the content of the static text resource.");
    REQUIRE(everything_read->has_value());
    CHECK((*everything_read)->at("contents").as_array().at(0).at("uri") == "demo://resource/dynamic/text/1");
    REQUIRE(prefixed_get->has_value());
    CHECK(first_text(**prefixed_get, "messages") == "This is a simple prompt without arguments.");
}

TEST_CASE("a resource URI two upstreams list is read from the one configured first, however often they list it") {
    harness h(false, 100, "", bob_yaml, true);
    std::vector<std::string> read_from;
    h.run([&]() -> asio::awaitable<void> {
        auto ctx = harness::context();
        // Each listing has the twin list the URI after the fixture, and each read must still go to the fixture.
        for (int i = 0; i < 2; ++i) {
            json::object none;
            auto listed = co_await h.ask("resources/list", none, ctx);
            REQUIRE(listed.has_value());
            json::object uri{{"uri", "test://static-text"}};
            auto read = co_await h.ask("resources/read", std::move(uri), ctx);
            REQUIRE(read.has_value());
        }
    });
    for (auto const& r : h.records())
        if (r.kind == core::record_kind::note) read_from.emplace_back(r.body.at("server").as_string());
    CHECK(read_from == std::vector<std::string>{"fixture", "fixture"});
}
