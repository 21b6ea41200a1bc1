#include "service/ops/metrics.hpp"

#include "core/policy.hpp"
#include "core/sha256.hpp"
#include "core/tool.hpp"

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

#include <set>

namespace airlock::service {

namespace {

// Request latencies from half a millisecond (a health probe) to half a minute (a slow tool).
std::vector<double> latency_bounds() {
    return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

// Appends per commit: powers of two up to the largest batch lmdb_options allows by default.
std::vector<double> batch_bounds() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}; }

// An fsync pair takes from tens of microseconds (page cache, fast mode) to tens of milliseconds.
std::vector<double> commit_bounds() {
    return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};
}

// Bounds on label sets: routes and statuses are few; tools are what the catalogues hold.
constexpr std::size_t max_http_series = 500;
constexpr std::size_t max_tool_series = 10'000;

}  // namespace

double seconds(std::chrono::steady_clock::duration d) noexcept { return std::chrono::duration<double>(d).count(); }

airlock_metrics::airlock_metrics(std::string version)
    : http_requests(registry.add_counter("airlock_http_requests_total", "HTTP requests answered, by route, method and status.",
                                         {"route", "method", "status"}, max_http_series)),
      http_duration(registry.add_histogram("airlock_http_request_duration_seconds",
                                           "Time from a request read whole to its response written (streams: to their end).",
                                           {"route"}, latency_bounds(), max_http_series)),
      tool_calls(registry.add_counter("airlock_tool_calls_total",
                                      "Gateway tool calls sent upstream, by outcome: ok or the ToolError kind.",
                                      {"server", "tool", "outcome"}, max_tool_series)),
      tool_duration(registry.add_histogram("airlock_tool_call_duration_seconds",
                                           "Time an upstream took to answer a tool call (or to fail).",
                                           {"server", "tool"}, latency_bounds(), max_tool_series)),
      policy_denials(registry.add_counter("airlock_policy_denials_total", "Tool calls refused by policy, by reason.",
                                          {"reason"})),
      oauth_authentications(registry.add_counter(
          "airlock_oauth_authentications_total",
          "OAuth access tokens checked at the door, by result: ok, or why the token was refused.", {"result"})),
      journal_batch_size(registry.add_histogram("airlock_journal_batch_size", "Appends made durable by one journal commit.",
                                                {}, batch_bounds())),
      journal_commit_duration(registry.add_histogram("airlock_journal_commit_duration_seconds",
                                                     "Time one journal group commit takes, fsyncs included.", {},
                                                     commit_bounds())),
      runs(registry.add_gauge("airlock_runs", "Agent runs by status.", {"status"})),
      active_connections(registry.add_gauge("airlock_active_connections", "Open HTTP connections.")),
      active_sessions(registry.add_gauge("airlock_active_sessions", "Open MCP sessions (legacy era).")),
      upstream_up(registry.add_gauge("airlock_upstream_up",
                                     "1 when the upstream answered its last catalogue read, 0 when it failed or was not met yet.",
                                     {"upstream"})),
      journal_map_used(registry.add_gauge("airlock_journal_map_used_bytes",
                                          "Bytes of its map the journal has used; appends fail once it reaches the map size.")),
      journal_map_size(registry.add_gauge("airlock_journal_map_size_bytes", "The journal's map size (journal.map_size), in bytes.")),
      journal_file_bytes(registry.add_gauge("airlock_journal_file_bytes",
                                            "The size of the journal's data file on disk, in bytes.")),
      build_info(registry.add_gauge("airlock_build_info", "Always 1; the version of this airlock.", {"version"})),
      process_cpu_seconds(registry.add_sampled_counter("process_cpu_seconds_total",
                                                       "CPU time this process has used, in user mode and in the kernel, in seconds.")),
      process_start_time(registry.add_sampled_gauge("process_start_time_seconds",
                                                    "When this process started, in seconds since the Unix epoch.")),
      process_resident_memory(registry.add_gauge("process_resident_memory_bytes", "Memory of this process resident in RAM, in bytes.")),
      process_virtual_memory(registry.add_gauge("process_virtual_memory_bytes", "The size of this process's virtual address space, in bytes.")),
      process_open_fds(registry.add_gauge("process_open_fds", "File descriptors this process holds open.")),
      process_max_fds(registry.add_gauge("process_max_fds", "The most file descriptors this process may hold open (its soft limit).")) {
    build_info.with({version}).set(1);
    // Registered here rather than by the composition root, so no airlock that serves /metrics lacks
    // them. A /proc file that fails is told once per file: scrapes come every few seconds, and a
    // file that cannot be read or parsed once will not be the next time either.
    on_scrape([told = std::set<std::string>()](airlock_metrics& m) mutable {
        auto sample = sample_process();
        for (auto const& p : sample.problems)
            if (told.insert(p.source).second)
                spdlog::warn("metrics: {} {}; the process_* metrics it gives keep their last reading", p.source,
                             p.message);
        m.record_process(sample);
    });
    // Every reason present from the start: a dashboard shows 0, not "no data", before the first refusal.
    for (auto r : {core::deny_reason::not_granted, core::deny_reason::egress_ceiling, core::deny_reason::tainted_mutation,
                   core::deny_reason::protected_field_missing, core::deny_reason::protected_field_untrusted,
                   core::deny_reason::protected_field_source, core::deny_reason::protected_field_sensitivity,
                   core::deny_reason::destination_not_allowed})
        policy_denials.with({core::to_string(r)});
}

void airlock_metrics::tool_call(std::string_view server, std::string_view tool, std::string_view outcome,
                                std::chrono::steady_clock::duration took) {
    tool_calls.with({server, tool, outcome}).inc();
    tool_duration.with({server, tool}).observe(seconds(took));
}

void airlock_metrics::journal_commit(std::size_t appends, std::chrono::steady_clock::duration took) {
    journal_batch_size.with({}).observe(static_cast<double>(appends));
    journal_commit_duration.with({}).observe(seconds(took));
}

void airlock_metrics::record_process(process_sample const& sample) {
    auto set = [](core::metrics::family<core::metrics::gauge>& f, std::optional<std::uint64_t> v) {
        if (v) f.with({}).set(static_cast<std::int64_t>(*v));
    };
    if (sample.cpu_seconds) process_cpu_seconds.with({}).set(*sample.cpu_seconds);
    if (sample.start_time_seconds) process_start_time.with({}).set(*sample.start_time_seconds);
    set(process_resident_memory, sample.resident_bytes);
    set(process_virtual_memory, sample.virtual_bytes);
    set(process_open_fds, sample.open_fds);
    set(process_max_fds, sample.max_fds);
}

void airlock_metrics::on_scrape(std::function<void(airlock_metrics&)> sampler) {
    std::lock_guard lock(samplers_mutex_);
    samplers_.push_back(std::move(sampler));
}

std::string airlock_metrics::scrape() {
    {
        std::lock_guard lock(samplers_mutex_);
        for (auto const& s : samplers_) s(*this);
    }
    return registry.render();
}

namespace {

bool bearer_matches(http_request const& req, std::string_view token) {
    auto it = req.find(http::field::authorization);
    if (it == req.end()) return false;
    auto value = it->value();
    constexpr std::string_view scheme = "Bearer ";
    if (value.size() < scheme.size()) return false;
    for (std::size_t i = 0; i < scheme.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(value[i])) != std::tolower(static_cast<unsigned char>(scheme[i])))
            return false;
    auto presented = core::sha256(value.substr(scheme.size()));
    auto expected = core::sha256(token);
    // Digests of equal length: neither the content nor the length of the token leaks through timing.
    return CRYPTO_memcmp(presented.data(), expected.data(), expected.size()) == 0;
}

}  // namespace

http_response metrics_response(http_request const& req, airlock_metrics& metrics, std::string_view token) {
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
        auto res = json_error(http::status::method_not_allowed, "method_not_allowed", "use GET or HEAD", req.version());
        res.set(http::field::allow, "GET, HEAD");
        return res;
    }
    if (!token.empty() && !bearer_matches(req, token)) {
        auto res = json_error(http::status::unauthorized, "unauthorized", "/metrics needs the metrics bearer token",
                              req.version());
        res.set(http::field::www_authenticate, "Bearer realm=\"airlock-metrics\"");
        return res;
    }
    http_response res{http::status::ok, req.version()};
    res.set(http::field::content_type, metrics_content_type);
    res.set(http::field::cache_control, "no-store");
    res.body() = metrics.scrape();
    res.prepare_payload();
    if (req.method() == http::verb::head) {
        auto length = res.body().size();
        res.body().clear();
        res.content_length(length);
    }
    return res;
}

}  // namespace airlock::service
