#pragma once
// The MCP tool gateway: one governed endpoint over many upstream MCP servers. Every call is resolved
// among the caller's grants, checked by the policy gates, journaled before it leaves, signed, routed,
// and its outcome journaled; every listing shows only what the caller is granted.
//
// The gateway is a thin facade over collaborators, each with its own state and lock:
//   roster        the principals and upstreams as configured, which upstreams egress refuses
//   catalogue     upstream tools, pins, readiness probes, list_changed re-reads
//   call_plan     (pure) a tools/call's grants, gates and destination → plan or refusal; the reply
//                 and record of its outcome
//   call          a tools/call performed: journal, sign, send
//   passthrough   resources, prompts, completion, logging
//   relays        notification streams, requests in flight, upstream notifications and questions
//   session_runs  the journal runs: admitted once (others wait), held by open calls, sealed

#include "core/journal.hpp"
#include "core/pins.hpp"
#include "core/policy.hpp"
#include "core/provenance.hpp"
#include "mcp/client/client.hpp"
#include "mcp/protocol/list_cursor.hpp"
#include "mcp/server/backend.hpp"
#include "service/gateway/call_plan.hpp"
#include "service/gateway/catalogue.hpp"
#include "service/gateway/principal.hpp"
#include "service/gateway/roster.hpp"
#include "service/gateway/session_runs.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace airlock::service {

class airlock_metrics;
class call;
class passthrough;
class relays;
class session_runs;

struct gateway_options {
    boost::asio::any_io_executor executor;  // for work nobody awaits (sealing ended sessions' runs)
    std::vector<gateway_upstream> upstreams;
    core::egress_allowlist egress;
    std::vector<gateway_principal> principals;
    std::shared_ptr<core::journal_store> journal;
    // The id of this process's instance_lock, written into each session run it admits so that another
    // airlock on the journal can tell whether the run's process is still alive.
    std::string instance;
    std::shared_ptr<core::pin_store> pins;
    std::shared_ptr<core::provenance_signer const> signer;  // absent: calls carry an unsigned block
    std::chrono::seconds provenance_lifetime{300};
    // Every forwarded request's deadline; when absent, each upstream client's own (its `deadline`).
    std::optional<std::chrono::milliseconds> call_deadline;
    // Items per page of tools/list, resources/list, resources/templates/list and prompts/list, whose
    // cursors (mcp/protocol/list_cursor.hpp) say where in the merged list of the upstreams the next page starts.
    std::size_t list_page_size = 100;
    // How long a merged list (tools/list, the other lists, a call resolving a name another upstream
    // could also expose) waits for an upstream whose tools are being read, counted from when that
    // read began: one that has not answered by then is left out, so it never holds up the others.
    std::chrono::milliseconds upstream_wait{5'000};
    std::function<std::chrono::system_clock::time_point()> clock = [] { return std::chrono::system_clock::now(); };
    std::function<void(std::uint8_t*, std::size_t)> random;  // CSPRNG; RAND_bytes when empty
    mcp::implementation server_info{"airlock", "0", std::nullopt, std::nullopt};
    std::shared_ptr<airlock_metrics> metrics;  // tool calls and denials are counted here when set
    // auth.oauth.upstream_scopes: upstream -> the scope an OAuth caller's token needs to see it.
    std::map<std::string, std::string> upstream_scopes;
    // When its runs are sealed and continued by new ones (session_runs.hpp).
    gateway_run_limits run_limits;
};

// Resources and prompts are governed per server (passthrough.hpp); messages an upstream sends
// outside a request are relayed as relays.hpp says: tools/list_changed only to the streams whose
// principal's tools from it changed (after a re-read), resources/updated to the streams of the
// sessions subscribed to that URI, and no others.
class gateway final : public mcp::server_backend, public std::enable_shared_from_this<gateway> {
public:
    // Refuses two upstreams exposing the same unprefixed name only when it happens (at listing).
    static core::result<std::shared_ptr<gateway>> make(gateway_options options);
    ~gateway() override;

    mcp::implementation server_info() const override;
    boost::json::object server_capabilities(std::string const& principal) const override;
    std::optional<std::string> instructions(std::string const& principal) const override;
    boost::asio::awaitable<mcp::handler_result> async_handle(mcp::request req, mcp::request_context& ctx) override;
    boost::asio::awaitable<void> async_notification(mcp::notification n, mcp::request_context& ctx) override;
    void session_closed(std::string const& session_id) override;
    // Stopping: every run this gateway admitted (sessions' and principals') is sealed once the
    // calls still in it have journaled their outcomes. From then on no run is admitted: a request
    // that would need one is refused with -32603, saying why (`reason`: airlock stopped, or the
    // configuration was reloaded and another gateway admits the runs now).
    void close_all_runs(std::string reason = "airlock stopped", std::string refusal = "stopping");
    // close_all_runs has run and every run it closed is sealed.
    bool runs_settled() const;
    // From now on, runs past their limits or idle are sealed on a timer (until close_all_runs).
    void start_run_upkeep();
    // Waits until every run being closed is sealed, or `limit` has passed.
    boost::asio::awaitable<void> async_runs_closed(std::chrono::milliseconds limit);
    std::uint64_t add_listener(std::string const& principal, notification_sink sink) override;
    std::uint64_t add_session_listener(std::string const& principal, std::string const& session_id,
                                       notification_sink sink) override;
    void remove_listener(std::uint64_t id) override;

    // The exposed tool list of a principal (what tools/list returns, unpaginated).
    boost::asio::awaitable<std::vector<boost::json::object>> async_tools_for(std::string principal);
    // The same, per upstream in configuration order (the order pages follow).
    using tools_of_upstream = catalogue::tools_of_upstream;
    boost::asio::awaitable<std::vector<tools_of_upstream>> async_tools_by_upstream(std::string principal);

    // The journal run of a session or principal, if one was admitted.
    std::optional<std::string> run_of(std::string const& session_id, std::string const& principal) const;

    // Connects every upstream and reads its tool catalogue, all at once, so capabilities and pins
    // are known before the first client asks. Returns once each has answered or upstream_wait has
    // passed; the reads go on. Failures are logged; the upstream is retried on demand.
    boost::asio::awaitable<void> async_connect_upstreams();

    // What the gateway knows of each upstream, in configuration order (catalogue.hpp).
    using upstream_state = service::upstream_state;
    std::vector<std::pair<std::string, upstream_state>> upstream_states() const;
    // A pin of `server`'s tools changed outside a catalogue read (an operator accepted one): its
    // tools are read again at once, and the streams whose principal's list changed are told, as
    // after the upstream's own list_changed.
    void pins_changed(std::string const& server);
    // Re-reads the catalogues whose TTL (or failure backoff) has passed, so upstream_states()
    // follows upstreams that come and go even when no call touches them.
    boost::asio::awaitable<void> async_probe_upstreams();

private:
    explicit gateway(gateway_options options);

    boost::asio::awaitable<mcp::handler_result> async_list(mcp::request const& req, mcp::request_context& ctx);
    void upstream_notification(std::string const& server, mcp::notification const& n);

    gateway_options options_;
    std::shared_ptr<roster const> roster_;
    std::shared_ptr<mcp::list_cursor_sealer const> cursors_;
    std::shared_ptr<session_runs> runs_;
    std::shared_ptr<relays> relays_;
    std::shared_ptr<catalogue> catalogue_;
    std::unique_ptr<passthrough> passthrough_;
    std::unique_ptr<call> call_;
    // An upstream's instructions as sent → as shown (hidden characters removed, cut to size): every
    // server/discover and initialize hands them out, and they change only with a new handshake.
    mutable std::mutex instructions_mutex_;
    mutable std::map<std::string, std::pair<std::string, std::string>> shown_instructions_;  // by upstream
};

}  // namespace airlock::service
