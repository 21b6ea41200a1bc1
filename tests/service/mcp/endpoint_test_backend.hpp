#pragma once
// A small MCP server backend for the endpoint tests: real in-process tools (a core::toolbox), plus
// the protocol mechanics a backend can ask of an endpoint — progress (tool "count"), a question to
// the client (tool "ask": sampling/createMessage) and a request that runs until cancelled (tool
// "wait"). It records what the endpoint told it, for the tests to check.

#include "core/toolbox.hpp"
#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/messages.hpp"
#include "mcp/server/backend.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace airlock::testing {

struct echo_args {
    std::string text;
};
BOOST_DESCRIBE_STRUCT(echo_args, (), (text))

struct count_args {
    std::int64_t to = 3;
};
BOOST_DESCRIBE_STRUCT(count_args, (), (to))

struct ask_args {
    std::string prompt;
};
BOOST_DESCRIBE_STRUCT(ask_args, (), (prompt))

struct wait_args {};
BOOST_DESCRIBE_STRUCT(wait_args, (), ())

class test_backend final : public mcp::server_backend {
public:
    test_backend() {
        box_.add<echo_args>("echo", {.description = "Returns its text.", .mutates = false},
                            [](echo_args a) { return boost::json::value(a.text); });
        box_.add<count_args>("count", {.description = "Counts to `to`, reporting progress.", .mutates = false},
                             [](count_args a) { return boost::json::value(a.to); });
        box_.add<ask_args>("ask", {.description = "Asks the client's model and returns its answer.", .mutates = false},
                           [](ask_args a) { return boost::json::value(a.prompt); });
        box_.add<wait_args>("wait", {.description = "Waits until cancelled.", .mutates = false},
                            [](wait_args) { return boost::json::value("done"); });
    }

    mcp::implementation server_info() const override { return {"endpoint-test-backend", "1.2.3", std::nullopt, std::nullopt}; }

    boost::json::object server_capabilities(std::string const&) const override {
        return boost::json::object{{"tools", boost::json::object{{"listChanged", true}}}};
    }

    std::optional<std::string> instructions(std::string const&) const override { return "Test tools only."; }

    boost::asio::awaitable<mcp::handler_result> async_handle(mcp::request req, mcp::request_context& ctx) override {
        {
            std::lock_guard lock(mutex_);
            principals_.push_back(ctx.principal);
            eras_.push_back(ctx.client_era);
        }
        if (req.method == "tools/list") {
            boost::json::array tools;
            for (auto const& id : box_.ids()) {
                auto const* d = box_.find(id);
                tools.push_back(boost::json::object{{"name", id.name()}, {"description", d->description}, {"inputSchema", d->schema}});
            }
            co_return boost::json::object{{"tools", std::move(tools)}};
        }
        if (req.method != "tools/call")
            co_return mcp::error_object{mcp::rpc_code::method_not_found, "Method not found: " + req.method, std::nullopt};

        auto params = req.params ? *req.params : boost::json::object{};
        std::string name = params.contains("name") && params.at("name").is_string() ? std::string(params.at("name").as_string()) : "";
        auto arguments = params.contains("arguments") ? params.at("arguments") : boost::json::value(boost::json::object{});

        if (name == "count" && ctx.progress) {
            auto to = arguments.is_object() && arguments.as_object().contains("to") ? arguments.at("to").to_number<std::int64_t>() : 3;
            for (std::int64_t i = 1; i <= to; ++i) {
                boost::json::object p{{"progressToken", mcp::to_json(*ctx.progress)}, {"progress", i}, {"total", to}};
                mcp::notification progress{"notifications/progress", std::move(p)};
                co_await ctx.notify(std::move(progress));
                // The SDK client handles notifications a microtask later than responses; when
                // both arrive in one read it drops the progress as "unknown token". A real tool
                // does work between its reports; so does this one, briefly.
                boost::asio::steady_timer pause(co_await boost::asio::this_coro::executor, std::chrono::milliseconds(20));
                co_await pause.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
            }
        }
        if (name == "ask") {
            auto prompt = arguments.is_object() && arguments.as_object().contains("prompt") ? arguments.at("prompt") : boost::json::value("?");
            boost::json::object q{
                {"messages", boost::json::array{boost::json::object{
                                 {"role", "user"}, {"content", boost::json::object{{"type", "text"}, {"text", prompt}}}}}},
                {"maxTokens", 50}};
            std::string method = "sampling/createMessage";
            auto answer = co_await ctx.ask_client(std::move(method), std::move(q));
            if (!answer)
                co_return text_result("the client refused: " + answer.error().message, true);
            auto const* content = answer->if_contains("content");
            std::string text = content && content->is_object() && content->as_object().contains("text")
                                   ? std::string(content->at("text").as_string())
                                   : boost::json::serialize(*answer);
            if (!prompt.is_string() || prompt.get_string() != "then wait") co_return text_result("the model said: " + text, false);
            // Asked to go on until cancelled once the answer is in: a call cancelled after its
            // round of questions.
            name = "wait";
        }
        if (name == "wait") {
            ++waits_started_;
            boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, std::chrono::seconds(60));
            auto [ec] = co_await t.async_wait(
                boost::asio::bind_cancellation_slot(ctx.cancelled, boost::asio::as_tuple(boost::asio::use_awaitable)));
            if (ec) {
                ++waits_cancelled_;
                co_return mcp::error_object{-32800, "Request cancelled", std::nullopt};
            }
            co_return text_result("waited", false);
        }

        auto id = core::tool_id::make("test", name);
        if (!id) co_return text_result("unknown tool " + name, true);
        auto r = co_await box_.async_call(*id, arguments, std::nullopt);
        if (!r) co_return text_result(r.error().detail, true);
        co_return text_result(r->is_string() ? std::string(r->as_string()) : boost::json::serialize(*r), false);
    }

    boost::asio::awaitable<void> async_notification(mcp::notification n, mcp::request_context&) override {
        std::lock_guard lock(mutex_);
        notifications_.push_back(n.method);
        co_return;
    }

    void session_closed(std::string const& session_id) override {
        std::lock_guard lock(mutex_);
        closed_.push_back(session_id);
    }

    std::uint64_t add_listener(std::string const& principal, notification_sink sink) override {
        std::lock_guard lock(mutex_);
        auto id = ++next_listener_;
        listeners_[id] = {principal, std::move(sink)};
        return id;
    }

    void remove_listener(std::uint64_t id) override {
        std::lock_guard lock(mutex_);
        listeners_.erase(id);
    }

    // What a real backend does when an upstream's tools change.
    void emit_tools_changed() {
        std::vector<notification_sink> sinks;
        {
            std::lock_guard lock(mutex_);
            for (auto& [id, l] : listeners_) sinks.push_back(l.second);
        }
        for (auto& s : sinks) s(mcp::notification{"notifications/tools/list_changed", std::nullopt});
    }

    std::size_t listener_count() const {
        std::lock_guard lock(mutex_);
        return listeners_.size();
    }
    std::vector<std::string> closed_sessions() const {
        std::lock_guard lock(mutex_);
        return closed_;
    }
    std::vector<std::string> notifications() const {
        std::lock_guard lock(mutex_);
        return notifications_;
    }
    std::vector<std::string> principals() const {
        std::lock_guard lock(mutex_);
        return principals_;
    }
    int waits_started() const { return waits_started_; }
    int waits_cancelled() const { return waits_cancelled_; }

private:
    static mcp::handler_result text_result(std::string text, bool is_error) {
        boost::json::object r{{"content", boost::json::array{boost::json::object{{"type", "text"}, {"text", text}}}}};
        if (is_error) r["isError"] = true;
        return r;
    }

    core::toolbox box_{"test"};
    mutable std::mutex mutex_;
    std::map<std::uint64_t, std::pair<std::string, notification_sink>> listeners_;
    std::uint64_t next_listener_ = 0;
    std::vector<std::string> closed_;
    std::vector<std::string> notifications_;
    std::vector<std::string> principals_;
    std::vector<mcp::era> eras_;
    std::atomic<int> waits_started_{0};
    std::atomic<int> waits_cancelled_{0};
};

}  // namespace airlock::testing
