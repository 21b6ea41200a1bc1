#pragma once
// The mixed load of one crash round: bounded client loops, each on its own thread, speaking to
// airlock the way its users do, and each writing down only what it was told. Gateway tools/calls
// to the counting upstream in both MCP eras (a 2025-11-25 session and 2026-07-28 stateless
// requests), agent runs started over REST, runs that park awaiting approval, and an operator
// approving them.

#include <boost/json/object.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace airlock::crash {

// A gateway tools/call whose answer reached its client: the unique counter key it carried, and
// whether the answer was a result (ok) or a tool error.
struct told_call {
    std::string key;
    std::string era;  // "2025-11-25" or "2026-07-28"
    bool ok = false;
};

// What the clients were told in one round.
struct told {
    std::vector<told_call> calls;
    std::vector<std::string> runs;       // admitted (202 with a run id)
    std::vector<std::string> approvals;  // effect keys an operator's approval was accepted for (200)
    int refused = 0;                     // answers that refused a call (a JSON-RPC error, 429, 503)
    int unanswered = 0;                  // requests that got no answer (the kill, or a restart)
    std::string first_refusal;           // what the first refusal said
};

class load {
public:
    // Starts the loops against airlock on `port`; `tag` makes this round's counter keys unique.
    load(std::uint16_t port, std::string tag);
    ~load();
    load(load const&) = delete;
    load& operator=(load const&) = delete;
    // Tells every loop to end and waits for them; what they were told.
    told stop();

private:
    void legacy_loop(int n);
    void modern_loop(int n);
    void run_loop(std::string agent, int n);
    void operator_loop();
    void record(told_call c);
    void count(int told::*field, std::string const& said = {});
    bool go(int i) const { return !stopping_ && i < max_iterations; }
    static constexpr int max_iterations = 400;

    std::uint16_t port_;
    std::string tag_;
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    told told_;
    std::vector<std::thread> threads_;
};

// One 2026-07-28 tools/call as the gateway principal: what its answer said, and its text (the
// result's first content text, or the error's message).
struct call_outcome {
    enum kind_t { ok, tool_error, refused, none } kind = none;
    std::string text;
};
call_outcome gateway_call(std::uint16_t port, std::string const& tool, std::string const& arguments);
// The arguments of counter__add with this key.
std::string add_arguments(std::string const& key);

// The JSON-RPC message of an MCP answer sent as JSON or as an SSE stream (its last data: line).
std::optional<boost::json::object> rpc_message(std::string const& body);

// A REST request with a bearer token; status 0 when no answer came.
struct rest_answer {
    int status = 0;
    std::string body;
};
rest_answer rest(std::uint16_t port, std::string const& token, std::string const& method, std::string const& target,
                 std::string const& body = {});

// The counter key a gateway call carries: unique across rounds and loops.
std::string call_key(std::string const& tag, std::string const& loop, int i);

}  // namespace airlock::crash
