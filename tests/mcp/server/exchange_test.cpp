#include "mcp/server/exchange.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace airlock::mcp;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// A request whose way to the client is a list the test reads.
struct recorded_request : served_request {
    using served_request::served_request;
    asio::awaitable<bool> async_send(message m) override {
        sent.push_back(std::move(m));
        co_return reachable;
    }
    asio::awaitable<void> async_round_due() override {
        ++rounds_due;
        co_return;
    }
    std::string unanswered() const override { return "no answer came"; }

    std::vector<message> sent;
    bool reachable = true;
    int rounds_due = 0;
};

struct rig {
    asio::io_context ioc;
    std::shared_ptr<exchange> engine = std::make_shared<exchange>(exchange::options{});
    std::shared_ptr<ask_table> table = std::make_shared<ask_table>();

    std::shared_ptr<recorded_request> start(era e, std::string method, json::object caps) {
        auto rq = std::make_shared<recorded_request>(ioc.get_executor());
        exchange::caller who;
        who.principal = "alice";
        who.session_id = e == era::legacy ? "s-1" : "";
        who.client_era = e;
        who.version = e == era::legacy ? "2025-11-25" : "2026-07-28";
        who.capabilities = std::move(caps);
        engine->bind(rq, request{std::int64_t{7}, std::move(method), json::object{}}, std::move(who));
        rq->asks = table;
        return rq;
    }

    // Runs what is ready, without waiting for what waits on the client.
    void settle() {
        ioc.restart();
        while (ioc.poll() > 0) {
        }
    }

    // Asks through the request's context; the answer lands in `out` once the io_context has run.
    void ask(std::shared_ptr<recorded_request> const& rq, std::string method, std::optional<handler_result>& out) {
        auto task = [](std::shared_ptr<recorded_request> rq, std::string method,
                       std::optional<handler_result>& out) -> asio::awaitable<void> {
            json::object params;
            params["x"] = 1;
            out = co_await rq->ctx.ask_client(std::move(method), std::move(params));
        };
        asio::co_spawn(ioc, task(rq, std::move(method), out), asio::detached);
    }
};

json::object caps(char const* text) { return json::parse(text).as_object(); }

}  // namespace

TEST_CASE("a legacy request's question goes to the client as a request, and its answer comes back to the asker") {
    rig r;
    auto rq = r.start(era::legacy, "tools/call", caps(R"({"sampling":{}})"));
    std::optional<handler_result> answer;
    r.ask(rq, "sampling/createMessage", answer);
    r.settle();
    REQUIRE(rq->sent.size() == 1);
    auto const* q = std::get_if<request>(&rq->sent.front());
    REQUIRE(q);
    CHECK(q->method == "sampling/createMessage");
    CHECK(r.engine->asking(*r.table, std::get<std::int64_t>(q->id)));
    CHECK_FALSE(answer);

    CHECK(r.engine->route_answer(*r.table, response{q->id, json::object{{"role", "assistant"}}}));
    r.settle();
    REQUIRE(answer);
    REQUIRE(answer->has_value());
    CHECK((*answer)->at("role") == "assistant");
    CHECK_FALSE(r.engine->asking(*r.table, std::get<std::int64_t>(q->id)));
    // A second answer with the same id matches nothing.
    CHECK_FALSE(r.engine->route_answer(*r.table, response{q->id, json::object{}}));
}

TEST_CASE("a legacy question for a capability the client did not declare fails without reaching the client") {
    rig r;
    auto rq = r.start(era::legacy, "tools/call", json::object{});
    std::optional<handler_result> answer;
    r.ask(rq, "elicitation/create", answer);
    r.settle();
    CHECK(rq->sent.empty());
    REQUIRE(answer);
    REQUIRE_FALSE(answer->has_value());
    CHECK(answer->error().code == rpc_code::method_not_found);
}

TEST_CASE("cancelling a request fails the question it waits on and emits its cancellation") {
    rig r;
    auto rq = r.start(era::legacy, "tools/call", caps(R"({"roots":{}})"));
    bool emitted = false;
    rq->ctx.cancelled.assign([&](asio::cancellation_type) { emitted = true; });
    std::optional<handler_result> answer;
    r.ask(rq, "roots/list", answer);
    r.settle();
    REQUIRE(rq->sent.size() == 1);
    r.engine->cancel(rq);
    r.settle();
    CHECK(emitted);
    REQUIRE(answer);
    REQUIRE_FALSE(answer->has_value());
    CHECK(answer->error().message == "no answer came");
    // A cancelled request asks nothing more.
    std::optional<handler_result> later;
    r.ask(rq, "roots/list", later);
    r.settle();
    CHECK(rq->sent.size() == 1);
    REQUIRE(later);
    CHECK_FALSE(later->has_value());
}

TEST_CASE("a modern request that needs a capability its client did not declare ends with -32021") {
    rig r;
    auto rq = r.start(era::modern, "tools/call", json::object{});
    std::optional<handler_result> answer;
    r.ask(rq, "sampling/createMessage", answer);
    r.settle();
    REQUIRE(answer);
    REQUIRE_FALSE(answer->has_value());
    CHECK(answer->error().code == rpc_code::missing_required_client_capability);
    CHECK(rq->sent.empty());
    CHECK(rq->rounds_due == 0);
}

TEST_CASE("a modern request's question becomes an input request of a round, never a request to the client") {
    rig r;
    auto rq = r.start(era::modern, "tools/call", caps(R"({"elicitation":{}})"));
    std::optional<handler_result> answer;
    r.ask(rq, "elicitation/create", answer);
    r.ask(rq, "elicitation/create", answer);
    r.settle();
    CHECK(rq->sent.empty());
    CHECK(rq->rounds_due == 1);  // both questions belong in the one round due
    REQUIRE(rq->input);
    CHECK(rq->input->open.size() == 2);
    CHECK_FALSE(answer);
}

TEST_CASE("a retry whose requestState names no parked request is refused, naming why") {
    rig r;
    request retry{std::int64_t{9}, "tools/call", json::object{{"requestState", 42}}};
    auto go = r.engine->resume(retry, "alice", std::nullopt);
    REQUIRE(go.refused);
    CHECK(*go.refused == "params.requestState must be a string");
    CHECK_FALSE(go.rq);
}

TEST_CASE("a modern result carries resultType complete, a legacy one is sent as the backend wrote it") {
    auto modern = exchange::reply_of(era::modern, "tools/list", std::int64_t{1}, json::object{{"tools", json::array{}}});
    auto const& m = std::get<response>(modern).result;
    CHECK(m.at("resultType") == "complete");
    CHECK(m.at("ttlMs") == 0);
    auto legacy = exchange::reply_of(era::legacy, "tools/list", std::int64_t{1}, json::object{{"tools", json::array{}}});
    CHECK_FALSE(std::get<response>(legacy).result.contains("resultType"));
    auto failed = exchange::reply_of(era::modern, "tools/call", std::int64_t{1},
                                     error_object{rpc_code::internal_error, "boom", std::nullopt});
    CHECK(std::get<error_response>(failed).error.message == "boom");
}
