#pragma once
// The upstreams' tools as the gateway knows them: one catalogue per upstream, read on demand and
// again after a TTL, a failure's backoff, a reconnection or a list_changed; checked against their
// pins; probed for readiness; and, on list_changed, re-read so that only the streams whose
// principal sees a difference are told. Its own lock; reads run apart from the callers who wait.

#include "core/pins.hpp"
#include "service/gateway/catalogue_entry.hpp"
#include "service/gateway/relays.hpp"
#include "service/gateway/roster.hpp"
#include "service/gateway/session_runs.hpp"
#include "service/gateway/waiter.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace airlock::service {

// SHA-256 of the canonical {name, description, inputSchema} of a tool: what a pin covers.
std::string tool_definition_digest(mcp::tool const& t);
// The whole definition (title and annotations too) as canonical JSON text: what a pin keeps for review.
std::string tool_definition_text(mcp::tool const& t);

// What the gateway knows of an upstream: up when its last catalogue read succeeded, down when it
// failed, unknown before the first read ends, refused when egress does not allow its destination
// (it is never contacted).
enum class upstream_state { unknown, up, down, refused };

struct catalogue_options {
    boost::asio::any_io_executor executor;  // reads run here when set: they outlive the caller who began them
    std::shared_ptr<core::pin_store> pins;
    std::chrono::milliseconds upstream_wait{5'000};  // gateway_options::upstream_wait
    std::string version;                             // the gateway's, for its own run
};

class catalogue final : public std::enable_shared_from_this<catalogue> {
public:
    catalogue(catalogue_options options, std::shared_ptr<roster const> who, std::shared_ptr<session_runs> runs,
              std::shared_ptr<relays> streams);

    // Shared, immutable snapshots: a call resolves its tool without copying every schema.
    using snapshot = std::shared_ptr<std::vector<catalogue_entry> const>;
    // own: the caller needs this upstream's tools (a call of one of them) and waits for its read,
    // however long it takes. merged: the caller merges several upstreams' tools and waits no longer
    // than upstream_wait after the read began; an upstream that is down, or only due for its TTL
    // re-read, answers from what is known at once.
    enum class wait { own, merged };
    boost::asio::awaitable<snapshot> async_entries(gateway_upstream const& up, wait how = wait::own);
    // Starts a read of every stale catalogue, so the waits of a merged list overlap.
    void start_stale_reads(boost::asio::any_io_executor const& exec);

    // The exposed tools of a principal per upstream in configuration order (what tools/list pages).
    using tools_of_upstream = std::pair<std::string, std::vector<boost::json::object>>;
    boost::asio::awaitable<std::vector<tools_of_upstream>> async_tools_by_upstream(gateway_principal const& p);
    // The entry shares the catalogue it was found in (no copy of the tool's schema per call);
    // nullptr when no granted tool has that name, and an error when two upstreams serve it.
    boost::asio::awaitable<core::result<std::shared_ptr<catalogue_entry const>>> async_resolve(gateway_principal const& p,
                                                                                               std::string const& name);

    // Whether a merged list passes over `up` without asking it: refused by egress, or not connected
    // while its tools read failed or has been under way longer than upstream_wait.
    bool passed_over(gateway_upstream const& up) const;
    // Unknown yet counts as available: the call path reads the catalogue before deciding.
    bool available(std::string const& server) const;
    std::vector<std::pair<std::string, upstream_state>> states() const;

    // Connects every upstream and reads its tools, all at once; returns once each has answered or
    // upstream_wait has passed.
    boost::asio::awaitable<void> async_connect();
    // Re-reads stale catalogues and pings upstreams that were up (at most every few seconds).
    boost::asio::awaitable<void> async_probe();
    // An upstream's tools/list_changed: its tools are read again, and only streams whose principal
    // sees a difference are told. Notices during a re-read make one more re-read, not one each.
    void list_changed(std::string const& server);

private:
    struct state {
        snapshot entries = std::make_shared<std::vector<catalogue_entry> const>();
        std::chrono::steady_clock::time_point retry_after{};
        bool failed = false;    // the last read failed: the upstream is down
        bool answered = false;  // a read has succeeded at least once
        // The tools the notification streams were last brought up to date with (null until the
        // first read): what a re-read after the upstream's list_changed is compared with.
        snapshot announced;
        bool announce_pending = false;  // a re-read after list_changed failed: the next good read compares
        std::uint64_t connection = 0;   // the upstream connection it was read on (mcp_client::connection)
        std::chrono::steady_clock::time_point next_ping{};  // readiness probes ping no sooner
        int missed_pings = 0;                                // in a row, by deadline
        // One read at a time, run apart from the callers who wait for it: a caller that gives up
        // does not cut it off, and a hung upstream costs one read, not one per caller.
        bool reading = false;
        std::chrono::steady_clock::time_point read_started{};
        bool late_reported = false;  // this read's passing upstream_wait was logged
        std::vector<std::shared_ptr<waiter>> waiting;  // callers of async_entries, woken when the read ends
        // Bumped when the tools are known to have changed (list_changed): a read begun before is outdated.
        std::uint64_t generation = 0;
        std::uint64_t listed_generation = 0;  // the generation `entries` were read in
        bool refused_by_egress = false;       // its destination is not in egress: it is never contacted
    };

    // With mutex_ held: whether `c` can be served as it is, without a read.
    bool fresh(state const& c, gateway_upstream const& up, std::chrono::steady_clock::time_point now) const;
    // With mutex_ held: starts a read of `up`'s tools on `exec` unless one is under way.
    void start_read(gateway_upstream const& up, state& c, boost::asio::any_io_executor const& exec);
    static boost::asio::awaitable<void> async_read(std::shared_ptr<catalogue> self, gateway_upstream const* up);
    boost::asio::awaitable<void> async_read_tools(gateway_upstream const& up, std::chrono::steady_clock::time_point now,
                                                  std::uint64_t generation);
    // One listed tool as served: withheld when it can only be a task, breaks the x-mcp-header rules
    // or its pin; hidden characters removed. Counts first pins in `first_pins`.
    boost::asio::awaitable<catalogue_entry> async_entry_of(gateway_upstream const& up, mcp::upstream_tool const& t,
                                                           std::size_t& first_pins);
    // Logs, once each, the grants on `up` that name a tool its list lacks, with the names it offers.
    void report_unoffered_grants(gateway_upstream const& up, std::vector<mcp::upstream_tool> const& listed);
    // Journals, once per new definition, that a pinned tool's definition changed.
    boost::asio::awaitable<void> async_report_pin_change(gateway_upstream const& up, mcp::upstream_tool const& t,
                                                         std::string const& digest);
    // With mutex_ held: the tools were read; the state takes them.
    void take_read(gateway_upstream const& up, state& c, std::vector<catalogue_entry> entries,
                   std::chrono::steady_clock::time_point now, std::uint64_t generation);
    // With mutex_ held: the upstream is down until `retry_after`.
    static void mark_down(state& c, std::chrono::steady_clock::time_point retry_after);
    static boost::asio::awaitable<void> async_reread(std::shared_ptr<catalogue> self, std::string server);
    static boost::asio::awaitable<void> async_probe_one(std::shared_ptr<catalogue> self, gateway_upstream const* up,
                                                        std::shared_ptr<std::atomic<std::size_t>> pending,
                                                        std::shared_ptr<waiter> all_done);
    // Whether `key` is reported for the first time: each problem is logged once.
    bool report_once(std::string key);
    void report_ambiguous(std::string const& name, std::string const& first, std::string const& second);
    boost::asio::any_io_executor executor_or(boost::asio::any_io_executor const& here) const;

    catalogue_options options_;
    std::shared_ptr<roster const> roster_;
    std::shared_ptr<session_runs> runs_;
    std::shared_ptr<relays> streams_;
    mutable std::mutex mutex_;
    std::map<std::string, state> states_;  // by upstream name
    std::map<std::string, bool> rereads_;  // upstreams whose tools are being re-read → asked again meanwhile
    std::set<std::string> reported_;       // problems already logged (or journaled) once
};

}  // namespace airlock::service
