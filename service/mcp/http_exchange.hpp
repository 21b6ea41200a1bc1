#pragma once
// One client request being served at /mcp: the request engine's served_request (mcp/server/exchange),
// with the channel its reply - JSON or SSE - is read from. Modern (2026-07-28) requests reach their
// client only through InputRequiredResults (MRTR); the engine keeps them between rounds.

#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/server/exchange.hpp"
#include "service/mcp/http_sessions.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <memory>
#include <string>

namespace airlock::service::detail {

// One item on the way to a request's response stream.
struct outgoing {
    std::string json;       // a serialized JSON-RPC message
    bool final = false;     // the response to the request: nothing follows
    bool suppress = false;  // final, but the request was cancelled: the client gets no response
    unsigned status = 200;  // the HTTP status when the final message is the whole reply
    bool input_required = false;  // modern: questions wait for the client; the reader ends the round
};

using event_channel = boost::asio::experimental::concurrent_channel<void(boost::system::error_code, outgoing)>;

// One client request being served: the exchange's request, with the channel its reply (JSON or
// SSE) is read from. Modern (2026-07-28) requests reach their client only through
// InputRequiredResults (MRTR); mcp/server/exchange.hpp keeps them between rounds.
struct http_exchange : mcp::served_request {
    explicit http_exchange(boost::asio::any_io_executor ex) : served_request(ex), events(ex, 64) {}

    boost::asio::awaitable<bool> async_send(mcp::message m) override {
        outgoing o;
        o.json = mcp::serialize(m);
        auto [ec] = co_await events.async_send(boost::system::error_code{}, std::move(o), boost::asio::as_tuple(boost::asio::use_awaitable));
        co_return !ec;
    }
    // The reader ends the round (async_next): it is the one that answers with the round's result.
    boost::asio::awaitable<void> async_round_due() override {
        outgoing o;
        o.input_required = true;
        co_await events.async_send(boost::system::error_code{}, std::move(o), boost::asio::as_tuple(boost::asio::use_awaitable));
    }
    std::string unanswered() const override {
        return "the client did not answer: the request was cancelled or its stream closed";
    }

    event_channel events;          // backend → the reply (JSON or SSE)
    std::weak_ptr<http_session> owner;  // legacy only
    // running → answered (the backend returned) or → cut_off (airlock ended it while running: the
    // client is told so, unless the backend finished it all the same); whichever comes first holds,
    // so a finished result is never replaced.
    enum class stage { running, answered, cut_off, deleted };
    std::atomic<stage> ended{stage::running};
};

}  // namespace airlock::service::detail
