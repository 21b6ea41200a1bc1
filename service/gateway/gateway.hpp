#pragma once
// The MCP tool gateway: one governed endpoint over many upstream MCP servers. Every call is resolved
// among the caller's grants, checked by the policy gates, journaled before it leaves, signed, routed,
// and its outcome journaled; every listing shows only what the caller is granted.

#include "core/journal.hpp"
#include "core/manifest.hpp"
#include "core/pins.hpp"
#include "core/policy.hpp"
#include "core/provenance.hpp"
#include "core/run_id.hpp"
#include "mcp/client/client.hpp"
#include "mcp/protocol/list_cursor.hpp"
#include "mcp/server/backend.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace airlock::service {

class airlock_metrics;

struct gateway_upstream {
    std::string name;                          // the server part of tool://server/name
    std::shared_ptr<mcp::mcp_client> client;
    bool prefixed = true;                      // false ("prefix: none"): tools keep their upstream names
};

struct gateway_principal {
    std::string name;
    core::manifest grants;  // the gateway manifest: tool grants, ceilings, protected fields
    bool trusted = false;   // arguments from a trusted principal carry a trusted label
    bool anonymous = false; // also serves requests that carry no credentials (the endpoint's principal "")
};

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
};

// Resources and prompts are governed per server: a principal sees the resources, resource templates
// and prompts of an upstream only when its manifest grants at least one tool of that upstream.
// Every resources/read and prompts/get is journaled (a note record: who read or got what).
//
// Relays: an upstream shared by several downstream sessions cannot say which of them a
// server→client request (sampling, elicitation, roots) or a log message belongs to, so both go to
// the downstream request most recently forwarded to that upstream and still in flight. With one
// downstream request per upstream at a time this is exact; with several, a question may reach
// the wrong client of the same principal or of another. Log messages outside any request, and
// resources' and prompts' list_changed, go to the notification streams of principals who see that
// upstream; tools/list_changed only to those whose principal's tools from it changed (after a
// re-read); resources/updated to the streams of the sessions subscribed to that URI, and no others.

// The text every refusal carries to the caller: it must not teach how to get around the policy.
inline constexpr std::string_view not_permitted_text = "not permitted";

class gateway final : public mcp::server_backend, public std::enable_shared_from_this<gateway> {
public:
    // Refuses two upstreams exposing the same unprefixed name only when it happens (at listing).
    static core::result<std::shared_ptr<gateway>> make(gateway_options options);

    mcp::implementation server_info() const override;
    boost::json::object server_capabilities(std::string const& principal) const override;
    std::optional<std::string> instructions(std::string const& principal) const override;
    boost::asio::awaitable<mcp::handler_result> async_handle(mcp::request req, mcp::request_context& ctx) override;
    boost::asio::awaitable<void> async_notification(mcp::notification n, mcp::request_context& ctx) override;
    void session_closed(std::string const& session_id) override;
    // Stopping: every run this gateway admitted (sessions' and principals') is sealed once the
    // calls still in it have journaled their outcomes. From then on no run is admitted: a request
    // that would need one is refused with -32603, saying airlock is stopping.
    void close_all_runs();
    // Waits until every run being closed is sealed, or `limit` has passed.
    boost::asio::awaitable<void> async_runs_closed(std::chrono::milliseconds limit);
    std::uint64_t add_listener(std::string const& principal, notification_sink sink) override;
    std::uint64_t add_session_listener(std::string const& principal, std::string const& session_id,
                                       notification_sink sink) override;
    void remove_listener(std::uint64_t id) override;

    // The exposed tool list of a principal (what tools/list returns, unpaginated).
    boost::asio::awaitable<std::vector<boost::json::object>> async_tools_for(std::string principal);
    // The same, per upstream in configuration order (the order pages follow).
    using tools_of_upstream = std::pair<std::string, std::vector<boost::json::object>>;
    boost::asio::awaitable<std::vector<tools_of_upstream>> async_tools_by_upstream(std::string principal);

    // The journal run of a session or principal, if one was admitted.
    std::optional<std::string> run_of(std::string const& session_id, std::string const& principal) const;

    // Connects every upstream and reads its tool catalogue, all at once, so capabilities and pins
    // are known before the first client asks. Returns once each has answered or upstream_wait has
    // passed; the reads go on. Failures are logged; the upstream is retried on demand.
    boost::asio::awaitable<void> async_connect_upstreams();

    // What the gateway knows of each upstream, in configuration order: up when its last catalogue
    // read succeeded, down when it failed, unknown before the first read ends, refused when egress
    // does not allow its destination.
    // refused: its destination is not in egress, so it is never contacted.
    enum class upstream_state { unknown, up, down, refused };
    std::vector<std::pair<std::string, upstream_state>> upstream_states() const;
    // Re-reads the catalogues whose TTL (or failure backoff) has passed, so upstream_states()
    // follows upstreams that come and go even when no call touches them.
    boost::asio::awaitable<void> async_probe_upstreams();

private:
    explicit gateway(gateway_options options);

    struct catalogue_entry {
        core::tool_id id;
        std::string exposed_name;  // wire name, or the upstream's own name when unprefixed
        mcp::tool spec;
        std::string withheld;      // why it is withheld (definition changed since pinned, ...); empty: served
        bool param_headers = false;  // declares x-mcp-header parameters (a modern HTTP call must mirror them)
    };
    struct catalogue {
        std::shared_ptr<std::vector<catalogue_entry> const> entries = std::make_shared<std::vector<catalogue_entry> const>();
        std::chrono::steady_clock::time_point retry_after{};
        bool failed = false;    // the last read failed: the upstream is down
        bool answered = false;  // a read has succeeded at least once
        // The tools the notification streams were last brought up to date with (null until the
        // first read): what a re-read after the upstream's list_changed is compared with.
        std::shared_ptr<std::vector<catalogue_entry> const> announced;
        bool announce_pending = false;  // a re-read after list_changed failed: the next good read compares
        std::uint64_t connection = 0;  // the upstream connection it was read on (mcp_client::connection)
        std::chrono::steady_clock::time_point next_ping{};  // readiness probes ping no sooner
        int missed_pings = 0;                                // in a row, by deadline
        // One read at a time, run apart from the callers who wait for it: a caller that gives up
        // does not cut it off, and a hung upstream costs one read, not one per caller.
        bool reading = false;
        std::chrono::steady_clock::time_point read_started{};
        bool late_reported = false;  // this read's passing upstream_wait was logged
        // Bumped when the tools are known to have changed (list_changed): a read begun before is outdated.
        std::uint64_t generation = 0;
        std::uint64_t listed_generation = 0;  // the generation `entries` were read in
        bool refused_by_egress = false;  // its destination is not in egress: it is never contacted
    };

    // A downstream request being served by an upstream: where that upstream's questions and log
    // messages go while it runs.
    struct inflight {
        boost::asio::any_io_executor executor;
        std::function<boost::asio::awaitable<void>(mcp::notification)> notify;
        std::function<boost::asio::awaitable<mcp::handler_result>(std::string, boost::json::object)> ask_client;
        std::string caller;  // the principal and session the request came from
    };
    class inflight_guard;
    struct list_kind;

    gateway_principal const* principal(std::string const& name) const;
    // Whether upstream `a` comes before upstream `b` in the configuration.
    bool first_configured(std::string const& a, std::string const& b) const;
    gateway_upstream const* upstream(std::string const& name) const;
    static bool sees(gateway_principal const& p, std::string const& server);
    std::vector<gateway_upstream const*> visible_upstreams(gateway_principal const& p) const;

    boost::asio::awaitable<mcp::handler_result> async_passthrough(mcp::request const& req, mcp::request_context& ctx);
    boost::asio::awaitable<mcp::handler_result> async_list_passthrough(list_kind const& kind, mcp::request const& req,
                                                                      gateway_principal const& p);
    boost::asio::awaitable<mcp::handler_result> async_list_page(gateway_upstream const& up, list_kind const& kind,
                                                                boost::json::object params);
    boost::asio::awaitable<boost::json::array> async_list_all(gateway_upstream const& up, list_kind const& kind);
    boost::asio::awaitable<void> async_refresh(gateway_principal const& p, list_kind const& kind);
    boost::asio::awaitable<gateway_upstream const*> async_resource_owner(gateway_principal const& p, std::string const& uri);
    boost::asio::awaitable<std::optional<std::pair<gateway_upstream const*, std::string>>> async_prompt_owner(
        gateway_principal const& p, std::string const& exposed);
    boost::asio::awaitable<mcp::handler_result> async_forward(gateway_upstream const& up, std::string method,
                                                              boost::json::object params, mcp::request_context& ctx);
    boost::asio::awaitable<mcp::handler_result> async_subscribe(gateway_principal const& p, std::string const& uri,
                                                                bool subscribe, mcp::request_context& ctx);
    boost::asio::awaitable<mcp::handler_result> async_set_level(gateway_principal const& p, boost::json::object params,
                                                                mcp::request_context& ctx);
    boost::asio::awaitable<core::result<void>> async_note(mcp::request_context const& ctx, gateway_principal const& p,
                                                          boost::json::object body);
    std::function<void(mcp::notification const&)> relay_to(mcp::request_context const& ctx,
                                                           boost::asio::any_io_executor exec) const;
    // Why a message a stdio upstream sends unasked (a question, a log line) goes to nobody.
    enum class unattributed { nobody_in_flight, several_callers, shared_upstream };
    // The request a message from `server` that names none belongs to: the latest in flight there,
    // when exactly one principal sees that upstream and every request in flight there has the same
    // caller. Otherwise nothing, and `why`.
    std::shared_ptr<inflight> attributable_inflight(std::string const& server, unattributed& why) const;
    void upstream_notification(std::string const& server, mcp::notification const& n);
    static boost::asio::awaitable<mcp::handler_result> async_upstream_request(std::weak_ptr<gateway> weak,
                                                                             std::string server, mcp::request r);
    void broadcast(std::string const& server, mcp::notification const& n);
    std::string session_key(mcp::request_context const& ctx, gateway_principal const& p) const;
    // Shared, immutable snapshots: a call resolves its tool without copying every schema.
    using catalogue_snapshot = std::shared_ptr<std::vector<catalogue_entry> const>;
    // own: the caller needs this upstream's tools (a call of one of them) and waits for its read,
    // however long it takes. merged: the caller merges several upstreams' tools and waits no longer
    // than upstream_wait after the read began; an upstream that is down, or only due for its TTL
    // re-read, answers from what is known at once.
    enum class catalogue_wait { own, merged };
    boost::asio::awaitable<catalogue_snapshot> async_catalogue(gateway_upstream const& up,
                                                               catalogue_wait wait = catalogue_wait::own);
    // With mutex_ held: whether `c` can be served as it is, without a read.
    bool catalogue_fresh(catalogue const& c, gateway_upstream const& up, std::chrono::steady_clock::time_point now) const;
    // With mutex_ held: starts a read of `up`'s tools on `exec` unless one is under way.
    void start_read(gateway_upstream const& up, catalogue& c, boost::asio::any_io_executor const& exec);
    // Starts a read of every stale catalogue, so the waits of a merged list overlap.
    void start_stale_reads(boost::asio::any_io_executor const& exec);
    static boost::asio::awaitable<void> async_read_catalogue(std::shared_ptr<gateway> self, gateway_upstream const* up);
    boost::asio::awaitable<void> async_read_tools(gateway_upstream const& up, std::chrono::steady_clock::time_point now,
                                                  std::uint64_t generation);
    // Whether a merged list passes over `up` without asking it: refused by egress, or not connected
    // while its tools read failed or has been under way longer than upstream_wait.
    bool passed_over(gateway_upstream const& up) const;
    // One upstream's part of async_probe_upstreams; `pending` counts the parts not yet ended.
    static boost::asio::awaitable<void> async_probe_one(std::shared_ptr<gateway> self, gateway_upstream const* up,
                                                        std::shared_ptr<std::atomic<std::size_t>> pending);
    // The entry shares the catalogue it was found in (no copy of the tool's schema per call);
    // nullptr when no granted tool has that name, and an error when two upstreams serve it.
    boost::asio::awaitable<core::result<std::shared_ptr<catalogue_entry const>>> async_resolve(gateway_principal const& p,
                                                                                               std::string const& name);
    // Logs, once per name and pair of servers, that a name two upstreams expose is withheld.
    // Whether `key` is reported for the first time (under mutex_): each problem is logged once.
    bool report_once(std::string key);
    void report_ambiguous(std::string const& name, std::string const& first, std::string const& second);
    boost::asio::awaitable<mcp::handler_result> async_list(mcp::request const& req, mcp::request_context& ctx);
    // The position params.cursor names (nullopt: the first page), or why the cursor is refused.
    core::result<std::optional<mcp::list_position>> cursor_of(mcp::request const& req, std::string_view list,
                                                              std::string const& principal) const;
    boost::asio::awaitable<mcp::handler_result> async_call(mcp::request const& req, mcp::request_context& ctx);
    boost::asio::awaitable<core::result<std::string>> async_run_for(mcp::request_context const& ctx,
                                                                    gateway_principal const& p);
    boost::asio::awaitable<void> async_journal(std::string run, core::new_record rec);
    // Admits (once) and returns the run that `key` writes to; concurrent callers share it.
    boost::asio::awaitable<core::result<std::string>> async_admitted_run(std::string key, boost::json::object admitted_body);
    // The gateway's own run, for events no caller owns (an upstream tool's definition changing).
    boost::asio::awaitable<core::result<std::string>> async_gateway_run();
    // An upstream's tools/list_changed: its tools are read again, and only streams whose principal
    // sees a difference are told. Notices during a re-read make one more re-read, not one each.
    void upstream_list_changed(std::string const& server);
    static boost::asio::awaitable<void> async_reread_tools(std::shared_ptr<gateway> self, std::string server);
    // With mutex_ held: tells the streams whose principal sees `was` and `now` differ.
    std::vector<notification_sink> sinks_seeing_change(std::string const& server, std::vector<catalogue_entry> const& was,
                                                       std::vector<catalogue_entry> const& now) const;
    bool upstream_available(std::string const& server) const;
    std::string nonce();

    gateway_options options_;
    mutable std::mutex mutex_;
    std::map<std::string, catalogue> catalogues_;  // by upstream name
    std::map<std::string, bool> rereads_;          // upstreams whose tools are being re-read → asked again meanwhile
    struct run_slot {
        std::string run;
        bool admitted = false;  // run_admitted is durable; until then other callers wait
    };
    std::map<std::string, run_slot> runs_;          // session key → its run
    bool stopping_ = false;                         // close_all_runs has begun: no run is admitted
    std::set<std::string> reported_definitions_;    // tool definitions already reported once: a changed pin ("server/tool digest", journaled) or a bad x-mcp-header (logged)
    std::map<std::string, std::uint32_t> steps_;   // run id → effects started
    std::map<std::string, std::size_t> open_calls_;  // run id → calls in it whose outcome is not yet journaled
    std::map<std::string, std::string> closing_;   // runs to seal once their open calls end → why
    std::size_t sealing_ = 0;                      // seals under way
    // Counts a call in `run` until the returned token is released (after its outcome is journaled).
    std::shared_ptr<void> hold_run(std::string const& run);
    void call_ended(std::string const& run);
    // Seals `run` now, or once its open calls end.
    void close_run(std::string const& run, std::string reason);
    void seal(std::string run, std::string reason);  // with mutex_ held
    struct listener {
        std::string principal;
        std::string session_key;  // "session:ID" for a session's stream, "principal:NAME" otherwise
        notification_sink sink;
    };
    std::map<std::uint64_t, listener> listeners_;
    std::uint64_t next_listener_ = 0;
    std::map<std::string, std::vector<std::shared_ptr<inflight>>> inflight_;  // by upstream, oldest first
    // Who owns what, learnt from listings (URIs are never renamed; prompt names are when prefixed).
    std::map<std::string, std::string> resource_owner_;                        // uri → upstream
    std::vector<std::pair<std::string, std::string>> template_owner_;           // (uriTemplate, upstream)
    std::map<std::string, std::pair<std::string, std::string>> prompt_owner_;  // exposed → (upstream, name)
    // An upstream's instructions as sent → as shown (hidden characters removed, cut to size): every
    // server/discover and initialize hands them out, and they change only with a new handshake.
    mutable std::mutex instructions_mutex_;
    mutable std::map<std::string, std::pair<std::string, std::string>> shown_instructions_;  // by upstream
    // Resource subscriptions: uri → (session key → principal); the upstream is subscribed while any remain.
    std::map<std::string, std::map<std::string, std::string>> subscribers_;
    std::map<std::string, std::string> subscribed_upstream_;  // uri → upstream
    core::run_id_generator ids_;
    std::optional<mcp::list_cursor_sealer> cursors_;
};

// SHA-256 of the canonical {name, description, inputSchema} of a tool: what a pin covers.
std::string tool_definition_digest(mcp::tool const& t);

}  // namespace airlock::service
