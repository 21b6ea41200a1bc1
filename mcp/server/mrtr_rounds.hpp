#pragma once
// Multi round-trip requests (2026-07-28 InputRequiredResult) as both MCP endpoints keep them,
// apart from how messages travel: the questions a running request has put to its client, the
// rounds it has answered with an InputRequiredResult, and the checks a retry passes before its
// answers reach the questions. mcp/mrtr.* holds the protocol's rules; this holds the state. The
// request itself stays running (parked) between rounds: a retry continues it, it does not start over.
//
// Nothing here locks: mcp::exchange (mcp/server/exchange.hpp) calls it under its mutex.

#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/mrtr.hpp"
#include "mcp/server/backend.hpp"

#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::mcp::mrtr_rounds {

// Where a question's answer goes: the question's coroutine waits on it.
using answer_channel =
    boost::asio::experimental::concurrent_channel<void(boost::system::error_code, std::shared_ptr<mcp::handler_result>)>;
// A CSPRNG; RAND_bytes when empty.
using random_source = std::function<void(std::uint8_t*, std::size_t)>;

struct limits {
    std::chrono::milliseconds ttl{300'000};  // how long a requestState stays good
    std::size_t max_pending = 1024;          // requests parked waiting for answers, over all clients
    std::size_t max_questions = 16;          // open questions per request
};

// A modern request's MRTR fields. `retry`: it carries a requestState and continues a parked
// request. Otherwise a first attempt, whose inputResponses (taken out of its params) answer the
// questions they name ahead of time. The error (for -32602) names the field.
struct attempt {
    std::optional<boost::json::object> responses;
    bool retry = false;
};
core::result<attempt> read_attempt(mcp::request& r);

// Why a question cannot be put to a modern client during `during` (nullopt when it can).
std::optional<std::string> cannot_ask(std::string_view method, std::string_view during);

// One modern request's questions and rounds.
struct input_state {
    struct question {
        std::string method;
        boost::json::object params;
        std::shared_ptr<answer_channel> answer;
    };
    std::map<std::string, question> open;      // key → a question the client has not answered yet
    std::optional<boost::json::object> prefill;  // inputResponses sent with the first attempt (no requestState)
    std::uint64_t next_key = 1;
    std::uint64_t round = 0;                   // InputRequiredResults issued so far
    std::string pending_id;                    // the endpoint's key for the parked request, from the first round on
    std::string digest;                        // mrtr::request_digest of the original request
    mcp::request_id reply_id;                  // the id the next reply carries: the latest attempt's
    bool round_due = false;                    // a round is scheduled and has not been issued yet
    bool parked = false;                       // an InputRequiredResult went out; the retry has not come
    bool final_sent = false;                   // the backend's result went (or goes) to the client
    std::optional<mcp::handler_result> parked_final;  // the result, when it came while parked
    std::shared_ptr<boost::asio::steady_timer> expiry;
};

// What putting a question to the client came to.
struct filed {
    std::string key;                             // the input request's key
    std::optional<boost::json::object> ahead;    // the client answered it ahead of time: here is the answer
    std::optional<std::string> refused;          // too many questions are open
    bool schedule_round = false;                 // no round was due: the caller schedules one
};

// Files the question `method`/`params` (whose key hint is taken out) under a key; `answer` gets the
// client's answer when a retry brings it.
filed file_question(input_state& in, std::string const& method, boost::json::object params,
                    std::shared_ptr<answer_channel> answer, limits const& l);
// Forgets the question `key` when `answer` still waits on it (it was answered or abandoned).
void forget_question(input_state& in, std::string const& key, std::shared_ptr<answer_channel> const& answer);

// Fills `n` bytes from `random` (RAND_bytes when empty); throws when the system's CSPRNG fails.
void fill_random(random_source const& random, std::uint8_t* out, std::size_t n);
// A sealer under a fresh key: requestStates are good only in the process that issued them.
mcp::mrtr::state_sealer fresh_sealer(random_source const& random);

// Ends a round: on the first, gives the request its pending id and binds the state to the
// request's `params` (the original attempt's). Returns the InputRequiredResult, and parks the
// request; nullopt when `pending` requests are parked already and this one would be one more.
std::optional<boost::json::object> issue_round(input_state& in, mcp::mrtr::state_sealer const& sealer,
                                               std::string_view principal, std::string_view method,
                                               boost::json::object const& params, std::size_t pending,
                                               limits const& l, random_source const& random);

// A retry's requestState, opened: the error (for -32602) names the field.
core::result<mcp::mrtr::request_state> open_retry(mcp::mrtr::state_sealer const& sealer, mcp::request const& r,
                                                  std::string_view principal);

// The refusal of a retry whose requestState is genuine but whose request is gone.
inline constexpr std::string_view no_longer_pending =
    "params.requestState refers to a request that is no longer pending (it ended, was cancelled or lapsed); "
    "send the request again without it";

// What a retry came to.
struct resumed {
    std::vector<std::pair<std::shared_ptr<answer_channel>, boost::json::object>> answers;  // to hand over
    std::optional<mcp::handler_result> done;  // the request finished while parked: its result
    bool schedule_round = false;              // questions are left (or new): the caller schedules a round
};

// Continues the parked request `in` with the retry `r` for `round`: every answer is checked before
// any is given, so a bad one leaves the round as it was (the error names the field). On success
// the request is no longer parked, and its next reply carries the retry's id.
core::result<resumed> resume(input_state& in, std::uint64_t round, std::optional<boost::json::object> const& responses,
                             mcp::request_id const& retry_id);
// Hands the answers to the questions waiting on them.
void hand_over(resumed& r);

// The expiry timer of `round` fired: true (and the parked result dropped) when the request is still
// parked in that round, so the caller forgets and cancels it.
bool lapse(input_state& in, std::uint64_t round);

}  // namespace airlock::mcp::mrtr_rounds
