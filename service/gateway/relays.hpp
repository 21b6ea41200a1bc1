#pragma once
// What goes between the upstreams and the downstream clients other than replies: the notification
// streams clients hold open, and the downstream requests in flight on each upstream, which is where
// an upstream's questions (sampling, elicitation, roots) and log messages go. Its own lock.
//
// An upstream shared by several downstream sessions cannot say which of them a server→client
// request or a log message belongs to, so both go to the downstream request most recently
// forwarded to that upstream and still in flight. With one downstream request per upstream at a
// time this is exact; with several, a question may reach the wrong client of the same principal or
// of another, so it is only relayed when one principal sees the upstream and every request in
// flight there has the same caller. Log messages outside any request, and resources' and prompts'
// list_changed, go to the notification streams of principals who see that upstream.

#include "mcp/protocol/messages.hpp"
#include "mcp/server/backend.hpp"
#include "service/gateway/roster.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace airlock::service {

class relays final : public std::enable_shared_from_this<relays> {
public:
    using notification_sink = mcp::server_backend::notification_sink;

    explicit relays(std::shared_ptr<roster const> who);

    // ---- notification streams
    std::uint64_t add_listener(std::string const& principal, std::string const& session_id, notification_sink sink);
    void remove_listener(std::uint64_t id);
    // Whether any open stream's principal sees `server`.
    bool heard(std::string const& server) const;
    // The streams of principals who see `server` and for whom `changed` holds (asked once per principal).
    std::vector<notification_sink> sinks_where(std::string const& server,
                                               std::function<bool(gateway_principal const&)> const& changed) const;
    // Sends `n` to every stream whose principal sees `server`.
    void broadcast(std::string const& server, mcp::notification const& n) const;
    // Sends `n` to the streams of the sessions (session_runs::key_of keys) in `keys` that see `server`.
    void to_sessions(std::string const& server, mcp::notification const& n, std::set<std::string> const& keys) const;

    // ---- requests in flight
    // Registers a downstream request as in flight on an upstream for as long as it is forwarded there.
    class inflight_guard;
    // Passes what an upstream sends on a forwarded request's own stream on to its caller.
    static std::function<void(mcp::notification const&)> relay_to(mcp::request_context const& ctx,
                                                                  boost::asio::any_io_executor exec);
    // A server→client request on a forwarded request's own stream goes to that request's client.
    static mcp::server_request_handler ask_caller(std::string server, mcp::request_context const& ctx);

    // A message an upstream sends outside any request's stream (a log line, a list_changed of
    // resources or prompts); tools/list_changed and resources/updated are the gateway's to route.
    void upstream_notification(std::string const& server, mcp::notification const& n);
    // A question an upstream asks outside any request's stream.
    static boost::asio::awaitable<mcp::handler_result> async_upstream_request(std::weak_ptr<relays> weak,
                                                                             std::string server, mcp::request r);

private:
    struct inflight {
        boost::asio::any_io_executor executor;
        std::function<boost::asio::awaitable<void>(mcp::notification)> notify;
        std::function<boost::asio::awaitable<mcp::handler_result>(std::string, boost::json::object)> ask_client;
        std::string caller;  // the principal and session the request came from
    };
    struct listener {
        std::string principal;
        std::string session_key;  // session_runs::key_of
        notification_sink sink;
    };
    // Why a message a stdio upstream sends unasked (a question, a log line) goes to nobody.
    enum class unattributed { nobody_in_flight, several_callers, shared_upstream };
    // The request a message from `server` that names none belongs to, or nothing, and `why`.
    std::shared_ptr<inflight> attributable(std::string const& server, unattributed& why) const;

    std::shared_ptr<roster const> roster_;
    mutable std::mutex mutex_;
    std::map<std::uint64_t, listener> listeners_;
    std::uint64_t next_listener_ = 0;
    std::map<std::string, std::vector<std::shared_ptr<inflight>>> inflight_;  // by upstream, oldest first
};

class relays::inflight_guard {
public:
    inflight_guard(relays& r, std::string server, mcp::request_context const& ctx, boost::asio::any_io_executor exec);
    ~inflight_guard();
    inflight_guard(inflight_guard const&) = delete;
    inflight_guard& operator=(inflight_guard const&) = delete;

private:
    relays& r_;
    std::string server_;
    std::shared_ptr<inflight> f_;
};

}  // namespace airlock::service
