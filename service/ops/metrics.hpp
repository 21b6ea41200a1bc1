#pragma once
// airlock's metrics: every family /metrics exposes (docs/operations.md lists them with their
// labels), recorded with atomics on the paths that serve requests, rendered on a scrape.

#include "core/metrics.hpp"
#include "service/http/http_server.hpp"
#include "service/ops/process_stats.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

class airlock_metrics {
public:
    explicit airlock_metrics(std::string version = AIRLOCK_VERSION);

    core::metrics::registry registry;

    // HTTP, recorded by the request observer (request_observer.hpp) for every request.
    core::metrics::family<core::metrics::counter>& http_requests;        // route, method, status
    core::metrics::family<core::metrics::histogram>& http_duration;      // route
    // The gateway's tools/call: outcome is "ok" or a ToolError kind.
    core::metrics::family<core::metrics::counter>& tool_calls;           // server, tool, outcome
    core::metrics::family<core::metrics::histogram>& tool_duration;      // server, tool
    core::metrics::family<core::metrics::counter>& policy_denials;       // reason
    core::metrics::family<core::metrics::counter>& oauth_authentications;  // result: ok or why not (bounded)
    // The journal's writer: appends per group commit and the time one commit takes.
    core::metrics::family<core::metrics::histogram>& journal_batch_size;
    core::metrics::family<core::metrics::histogram>& journal_commit_duration;
    // Agent runs by status; the runner sets these (add on entering a status, sub on leaving it).
    core::metrics::family<core::metrics::gauge>& runs;                   // status
    // Sampled at each scrape (see on_scrape).
    core::metrics::family<core::metrics::gauge>& active_connections;
    core::metrics::family<core::metrics::gauge>& active_sessions;
    core::metrics::family<core::metrics::gauge>& upstream_up;            // upstream
    core::metrics::family<core::metrics::gauge>& journal_map_used;       // bytes of the map the journal has used
    core::metrics::family<core::metrics::gauge>& journal_map_size;       // the map's size in bytes (journal.map_size)
    core::metrics::family<core::metrics::gauge>& journal_file_bytes;     // the size of the journal's data file
    core::metrics::family<core::metrics::gauge>& build_info;             // version
    // The standard process_* metrics of every Prometheus client, read from /proc at each scrape.
    core::metrics::family<core::metrics::sampled_counter>& process_cpu_seconds;
    core::metrics::family<core::metrics::sampled_gauge>& process_start_time;
    core::metrics::family<core::metrics::gauge>& process_resident_memory;
    core::metrics::family<core::metrics::gauge>& process_virtual_memory;
    core::metrics::family<core::metrics::gauge>& process_open_fds;
    core::metrics::family<core::metrics::gauge>& process_max_fds;

    // Records one tools/call: `outcome` is "ok" or core::to_string(tool_error_kind).
    void tool_call(std::string_view server, std::string_view tool, std::string_view outcome,
                   std::chrono::steady_clock::duration took);
    // Records one group commit of the journal writer.
    void journal_commit(std::size_t appends, std::chrono::steady_clock::duration took);
    // Sets the process_* metrics to what a sample read; what it lacks keeps its last reading.
    void record_process(process_sample const& sample);

    // Runs before each scrape renders, to sample gauges whose truth lives elsewhere (connections,
    // sessions, upstream state). Register them before serving.
    void on_scrape(std::function<void(airlock_metrics&)> sampler);
    // The exposition text, after running the samplers.
    std::string scrape();

private:
    std::mutex samplers_mutex_;
    std::vector<std::function<void(airlock_metrics&)>> samplers_;
};

// The Content-Type of a text exposition.
inline constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";

double seconds(std::chrono::steady_clock::duration d) noexcept;

// GET (or HEAD) /metrics: the scrape. With a non-empty `token`, only a request carrying
// `Authorization: Bearer <token>` gets it (compared in constant time); others get 401.
http_response metrics_response(http_request const& req, airlock_metrics& metrics, std::string_view token);

}  // namespace airlock::service
