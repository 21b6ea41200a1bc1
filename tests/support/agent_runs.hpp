#pragma once
// Driving one agent run through a service::runner in a test: the operator's question as a request,
// and the run started and waited for to its end, with its journal.

#include "service/agents/runner.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace airlock::testing {

// A question from the operator: trusted input, as a CLI or a trusted principal gives it.
inline service::run_request operator_question(std::string question, std::string agent = "teller") {
    service::run_request r;
    r.agent = std::move(agent);
    r.input = boost::json::object{{"question", std::move(question)}};
    r.input_label = core::label{{"operator"}, core::trust::trusted, core::sensitivity::public_};
    return r;
}

struct finished_run {
    std::string run_id;
    service::run_view view;
    std::vector<core::record> records;  // its whole journal
};

// Starts the run and waits (up to `wait`) until it is no longer running.
inline boost::asio::awaitable<finished_run> async_run_to_end(std::shared_ptr<service::runner> r, service::run_request req,
                                                             std::chrono::milliseconds wait = std::chrono::seconds(60)) {
    auto ticket = co_await r->async_start(std::move(req));
    REQUIRE(ticket.has_value());
    auto done = co_await r->async_wait(ticket->run_id, wait);
    REQUIRE(done.has_value());
    auto records = co_await r->async_journal(ticket->run_id, 1);
    REQUIRE(records.has_value());
    co_return finished_run{ticket->run_id, *done, *records};
}

}  // namespace airlock::testing
