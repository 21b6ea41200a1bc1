#pragma once
// The server side of a request, apart from how its messages travel: the one request engine both
// MCP endpoints (Streamable HTTP and stdio) serve their clients' requests through. It binds a
// request's context to the backend, puts the backend's questions to the client — as JSON-RPC
// requests in a legacy session, as the input requests of an InputRequiredResult (MRTR) in a modern
// request — routes the answers back, parks a modern request between rounds and continues it with
// its retry, cancels, and turns the backend's result into the request's reply.
//
// What an endpoint keeps to itself: the framing (JSON or SSE replies, newline-delimited lines),
// its sessions, its notification streams, and when a reply is written. It derives its requests
// from served_request, which says how a message reaches the client.
//
// Thread safety: the exchange guards what it keeps (question tables, MRTR state, parked requests)
// with a mutex of its own, never held across a suspension; a request's cancellation is emitted on
// the request's own strand.

#include "mcp/protocol/era.hpp"
#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/messages.hpp"
#include "mcp/protocol/mrtr.hpp"
#include "mcp/server/backend.hpp"
#include "mcp/server/mrtr_rounds.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/json/object.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::mcp {

struct served_request;

// The questions put to a legacy client and not answered yet, by the JSON-RPC id the server gave
// them: one table per legacy session (over stdio, one for the process). Guarded by the exchange.
struct ask_table {
    struct pending {
        std::shared_ptr<mrtr_rounds::answer_channel> answer;
        std::weak_ptr<served_request> asker;
    };
    std::map<std::int64_t, pending> asks;
    std::int64_t next = 1;
};

// One client request being served. An endpoint derives its own, with the way back to its client.
struct served_request : std::enable_shared_from_this<served_request> {
    explicit served_request(boost::asio::any_io_executor ex) : exec(std::move(ex)) {}
    virtual ~served_request() = default;

    // Sends `m` (a notification or a question) to the client on this request's way; false when it
    // cannot get there any more.
    virtual boost::asio::awaitable<bool> async_send(message m) = 0;
    // The first question of a round was filed: the endpoint ends the round (exchange::async_end_round).
    virtual boost::asio::awaitable<void> async_round_due() = 0;
    // Why nothing can be asked of the client at all now (nullopt when something can).
    virtual std::optional<std::string> cannot_ask() const { return std::nullopt; }
    // What a legacy question whose answer never came fails with.
    virtual std::string unanswered() const = 0;

    boost::asio::any_io_executor exec;  // the strand the backend serves it on
    boost::asio::cancellation_signal cancel;
    bool cancel_emitted = false;  // on exec
    request_context ctx;
    std::string method;
    std::string key;                     // the request id's text
    std::atomic<bool> gone{false};       // the client can no longer receive what it emits
    std::atomic<bool> cancelled{false};  // cancelled (by its client, or by airlock)
    std::atomic<bool> parked{false};     // an InputRequiredResult went out; the retry has not come
    std::weak_ptr<ask_table> asks;       // legacy: where its questions wait (its session's table)

    // Guarded by the exchange. Modern: a capability the request turned out to need that the client
    // did not declare; the request then ends with -32021 whatever the backend makes of the refusal.
    std::optional<std::string> missing_capability;
    // Modern requests that may end in an InputRequiredResult: the request's id and params (the
    // requestState is bound to them), answers sent ahead, and the MRTR state once the backend asks.
    request_id id;
    std::optional<boost::json::object> mrtr_params;
    std::optional<boost::json::object> mrtr_prefill;
    std::unique_ptr<mrtr_rounds::input_state> input;
};

class exchange : public std::enable_shared_from_this<exchange> {
public:
    struct options {
        mrtr_rounds::limits limits;
        std::chrono::milliseconds gather{25};  // after a first question, how long to wait for more in the same round
        mrtr_rounds::random_source random;     // CSPRNG for pending ids and the sealing key; RAND_bytes when empty
        char const* log_name = "mcp";          // what its log lines start with
    };
    explicit exchange(options o);

    // Who serves a request, in which era, with what the client declared.
    struct caller {
        std::string principal;
        boost::json::object authentication;  // request_context::authentication
        std::string session_id;  // legacy; "" for modern
        era client_era = era::legacy;
        std::string version;
        boost::json::object capabilities;
        std::optional<boost::json::object> prefill;  // modern: inputResponses sent with a first attempt
    };
    // Makes `rq` the request `r` of `who`: its context, and the hooks through which the backend
    // notifies and asks the client and hears of its cancellation.
    void bind(std::shared_ptr<served_request> const& rq, request const& r, caller who);

    // Runs the backend on the request and returns the reply as its era writes it: the id of the
    // latest attempt, a modern error modernized, -32021 for a capability it turned out to need.
    // Nullopt while the request is parked: its retry gets the result.
    struct reply {
        request_id id;
        handler_result result;
    };
    boost::asio::awaitable<std::optional<reply>> async_run(server_backend& backend, std::shared_ptr<served_request> rq,
                                                           request r);

    // Cancels the request (once on its strand) and fails its questions.
    void cancel(std::shared_ptr<served_request> const& rq);
    // Fails the questions the request is waiting on; it goes on.
    void fail_asks(std::shared_ptr<served_request> const& rq, std::string_view why);
    // Fails every question of the table (its session ended).
    void fail_all(ask_table& t);
    // Hands a client's answer (a response or an error response) to the question with its id; false
    // when none waits for it.
    bool route_answer(ask_table& t, message const& m);
    // A question with this id waits for its answer.
    bool asking(ask_table const& t, std::int64_t id) const;

    // Ends a round of a modern request after the gather time: `issued` — the InputRequiredResult
    // to send, the request parked until its retry; `refused` — too many requests are parked, and
    // this one is cancelled (its reply is an error); `none` — nothing is left to ask.
    struct round {
        enum class outcome { none, issued, refused };
        outcome what = outcome::none;
        request_id reply_id;
        boost::json::object result;  // issued: the InputRequiredResult
    };
    boost::asio::awaitable<round> async_end_round(std::shared_ptr<served_request> rq);

    // A retry carrying a requestState, checked and applied: the parked request and what its answers
    // came to, or the refusal (-32602) naming the field. The caller hands the answers over.
    struct resumption {
        std::shared_ptr<served_request> rq;
        mrtr_rounds::resumed step;
        std::optional<std::string> refused;
    };
    resumption resume(request const& r, std::string_view principal, std::optional<boost::json::object> const& responses);

    // Cancels every parked request (and its expiry): its retry can no longer come.
    void end_parked();
    // From now on nothing more is asked of the client and no round is issued (stdio: input ended).
    void stop_asking() { closing_ = true; }
    bool closing() const { return closing_; }

    // The response that ends a request, as its era writes it.
    static message reply_of(era e, std::string const& method, request_id const& id, handler_result result);
    // A context for a client notification: no request, nothing to notify or ask.
    static request_context notification_context(std::string principal, std::string session_id, era e,
                                                std::string version, boost::json::object caps);

private:
    static boost::asio::awaitable<void> async_notify(std::weak_ptr<served_request> w, notification n);
    static boost::asio::awaitable<handler_result> async_ask(std::shared_ptr<exchange> self, std::weak_ptr<served_request> w,
                                                            std::string method, boost::json::object params);
    boost::asio::awaitable<handler_result> async_ask_legacy(std::shared_ptr<served_request> rq, std::string method,
                                                            boost::json::object params);
    boost::asio::awaitable<handler_result> async_ask_modern(std::shared_ptr<served_request> rq, std::string method,
                                                            boost::json::object params);
    static boost::asio::awaitable<void> async_expire(std::shared_ptr<exchange> self, std::shared_ptr<served_request> rq,
                                                     std::shared_ptr<boost::asio::steady_timer> timer, std::uint64_t round);

    options options_;
    mutable std::mutex mutex_;
    mrtr::state_sealer sealer_;  // a fresh key per process: a requestState is good only here
    std::map<std::string, std::shared_ptr<served_request>> pending_;  // parked requests by pending id
    std::atomic<bool> closing_{false};
};

}  // namespace airlock::mcp
