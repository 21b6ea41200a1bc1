#pragma once
// The REST API under /v1: start, list, inspect, cancel, replay and verify agent runs, answer their
// approval requests, and list agents and tools. JSON in and out; every error is an RFC 9457
// `application/problem+json` document whose `errors` name the field at fault. Reads come straight
// from the journal (so they work for every run, the gateway's included); actions go to the agent
// runtime through `run_control`.

#include "core/error.hpp"
#include "core/journal.hpp"
#include "core/pins.hpp"
#include "mcp/protocol/log_throttle.hpp"
#include "service/http/door.hpp"
#include "service/http/http_server.hpp"
#include "service/rest/problem.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace airlock::service {

// What POST /v1/runs asks the runtime to start.
struct run_start_request {
    std::string agent;       // exactly one of agent and capability is set
    std::string capability;  // an entry of some agent's `provides`
    boost::json::value input;
    std::optional<std::string> idempotency_key;
    std::string principal;  // who asked ("" when anonymous)
};

struct run_started {
    std::string run_id;
    bool fresh = true;  // false: the idempotency key was used before and this is that run
};

struct agent_info {
    std::string name;
    std::string version;
    std::string digest;
    std::vector<std::string> provides;
    boost::json::array grants;  // [{tool, mutates, requires_approval, idempotent, description}]
};

// The agent runtime, as the REST API needs it. Error codes the API maps to statuses (in one place,
// `http_status` in service/rest/problem.cpp): unknown_agent / unknown_capability → 422 naming the field, unknown_run → 404,
// at_capacity → 429 with Retry-After, not_running / sealed / not_pending → 409, divergence → 409,
// invalid_input → 422, unavailable (stopping) → 503, a start's with Retry-After; anything else → 500.
class run_control {
public:
    virtual ~run_control() = default;
    virtual std::vector<agent_info> agents() const = 0;
    virtual boost::asio::awaitable<core::result<run_started>> async_start(run_start_request request) = 0;
    virtual boost::asio::awaitable<core::result<void>> async_cancel(std::string run_id) = 0;
    // Strict replay from the journal alone; the object says what the replay produced.
    virtual boost::asio::awaitable<core::result<boost::json::object>> async_replay(std::string run_id) = 0;
    virtual boost::asio::awaitable<core::result<void>> async_decide(std::string run_id, std::string effect_key,
                                                                    bool approve, std::string reason,
                                                                    std::string reviewer) = 0;
    // How long a client refused with at_capacity should wait before trying again.
    virtual std::chrono::seconds retry_after() const { return std::chrono::seconds(1); }
    // Returns once the run is no longer running (ended, or awaiting approval) or after `up_to`, and
    // true; false when this control cannot tell, and `?wait=` then watches the journal itself.
    virtual boost::asio::awaitable<bool> async_wait(std::string run_id, std::chrono::milliseconds up_to) {
        (void)run_id;
        (void)up_to;
        co_return false;
    }
};

struct rest_api_options {
    std::shared_ptr<core::journal_store> journal;  // required
    std::shared_ptr<run_control> runs;             // null: run actions answer 503 "no agent runtime"
    // The tools a principal may call, as MCP tool objects (name, description, inputSchema).
    std::function<boost::asio::awaitable<std::vector<boost::json::object>>(std::string principal)> tools;

    // The door (service/http/door, the one /mcp passes too): a token → principal, anonymous access,
    // Host and Origin allowlists (empty lists admit any Host / refuse any Origin-bearing request).
    std::function<std::optional<std::string>(std::string_view token)> authenticate;
    bool allow_anonymous = false;
    door_oauth oauth;  // OAuth access tokens beside the static ones (auth.oauth); empty: none
    // The principal a request without a token is served as (principals[].anonymous), so the runs it
    // starts are its own; null or "": such a request owns no run and sees none.
    std::function<std::string()> anonymous_principal;
    // Whether a principal is an operator (principals[].operator): it sees and acts on every run and
    // decides approvals. Null: nobody is. Everyone else sees only the runs they own.
    std::function<bool(std::string_view principal)> is_operator;
    std::vector<std::string> allowed_hosts;
    std::vector<std::string> allowed_origins;

    // The pinned tool definitions (GET /v1/pins..., POST .../accept; operators only). Null: those
    // routes answer 503.
    std::shared_ptr<core::pin_store> pins;
    // Told which upstream's pin was accepted, so the gateway in force serves it at once.
    std::function<void(std::string const& server)> pin_accepted;

    std::chrono::seconds max_wait{60};  // the largest ?wait= honoured
    std::size_t max_page = 500;         // the largest ?limit= honoured
};

class rest_api {
public:
    explicit rest_api(rest_api_options options);

    // True when `path` (the target before '?') belongs to the API: "/v1" or below it.
    static bool owns(std::string_view path) noexcept;
    // Answers one request under /v1. Runs on the connection's strand.
    boost::asio::awaitable<http_response> async_handle(http_request& req);

    // Allowlists derived once the listening address is known (when none were configured).
    void set_door(std::vector<std::string> allowed_hosts, std::vector<std::string> allowed_origins);

    // (method, path template) of every route, e.g. {"GET", "/v1/runs/{id}"}: what the OpenAPI
    // document must describe.
    static std::vector<std::pair<std::string, std::string>> routes();
    // The same for the routes served without a token (the document says `security: []` for them).
    static std::vector<std::pair<std::string, std::string>> open_routes();
    // The OpenAPI 3.1 document served at /v1/openapi.json, to anyone the door's Host and Origin
    // checks admit. Its server is "/", relative to wherever the document was fetched from.
    static boost::json::object openapi();

private:
    // Answers the request, the door first; async_handle adds what every reply carries.
    boost::asio::awaitable<http_response> async_route(http_request& req);
    // The principal the request is served as, or the problem to answer.
    boost::asio::awaitable<std::variant<std::string, http_response>> async_pass_door(http_request& req);
    // The same for a route served without a token: "" (nobody), or the problem to answer.
    std::variant<std::string, http_response> pass_open_door(http_request const& req);
    // The problem answering a refusal at the door, logged when the refusal asks to be.
    http_response refuse(door_refusal const& r, unsigned version);

    rest_api_options options_;
    door_policy door_;
    mcp::log_throttle door_log_;  // refusals at the door, per client address
};

// What GET /v1/runs/{id} shows of a run: its summary joined with what its records say (agent,
// input, principal, output, the seal's reason, pending approvals).
boost::json::object describe_run(core::run_summary const& summary, std::vector<core::record> const& records);
// Every approval request of a run, with its decision when there is one.
boost::json::array approvals_of(std::vector<core::record> const& records);

}  // namespace airlock::service
