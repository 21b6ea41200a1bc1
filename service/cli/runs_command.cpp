#include "service/cli/runs_command.hpp"

#include "core/journal.hpp"
#include "core/journal_rules.hpp"
#include "core/rfc3339.hpp"
#include "service/cli/support.hpp"
#include "store/lmdb_store.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iostream>

namespace airlock::service {

namespace {

constexpr char runs_usage[] =
    "usage: airlock runs [--journal DIR | --config FILE] [--kind K] [--status S] [--agent NAME]\n"
    "                    [--since TIME] [--limit N] [--cursor RUN] [--json]\n"
    "  lists journaled runs in run id order (oldest first): id, agent, status, records, admitted at\n"
    "  --journal DIR   journal directory (default: var/journal)\n"
    "  --config FILE   take the journal directory from this configuration\n"
    "  --status S      running, succeeded, failed, exhausted, awaiting_approval, quarantined, cancelled\n"
    "  --kind K        agent (the default): runs of agents; session: gateway sessions (the calls of\n"
    "                  one MCP session, or a stateless principal's for a while); airlock: its own\n"
    "                  record keeping (gateway events, prunes); all: every kind\n"
    "  --agent NAME    runs of this agent only\n"
    "  --since TIME    runs admitted at or after this RFC 3339 time (an offset is honoured)\n"
    "  --limit N       at most N runs (1 to 10000, default 100); the next page's cursor is printed last\n"
    "                  ('more: --cursor RUN', after the table; on stderr with --json)\n"
    "  --cursor RUN    the page after this run (the 'more: --cursor' of the page before)\n"
    "  --json          one JSON object per line instead of a table\n";

struct runs_args {
    std::optional<std::string> dir, config_file;
    core::run_filter filter;
    bool as_json = false;
};

// --kind K into `filter`; false (after saying why) when K is no kind.
bool read_kind(std::string const& v, core::run_filter& filter) {
    if (v == "all") {
        filter.kind.reset();
        return true;
    }
    if (std::none_of(std::begin(core::run_kinds), std::end(core::run_kinds), [&](char const* k) { return v == k; })) {
        std::cerr << "airlock runs: --kind: '" << v << "' is not a run kind (agent, session, airlock, all)\n";
        return false;
    }
    filter.kind = v;
    return true;
}

// The command line; nullopt to go on, else the exit code (after printing usage or the problem).
std::optional<int> parse_runs_args(std::vector<std::string> const& args, runs_args& out) {
    auto& dir = out.dir;
    auto& config_file = out.config_file;
    auto& filter = out.filter;
    auto& as_json = out.as_json;
    filter.kind = "agent";  // agent runs unless asked: a gateway's sessions would otherwise bury them
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << runs_usage;
            return 0;
        }
        if (a == "--json") {
            as_json = true;
            continue;
        }
        bool takes_value = a == "--journal" || a == "--config" || a == "--status" || a == "--agent" || a == "--kind" ||
                           a == "--since" || a == "--limit" || a == "--cursor";
        if (!takes_value) {
            std::cerr << "airlock runs: unknown option '" << a << "'\n" << runs_usage;
            return 2;
        }
        auto const* value = cli::flag_value(args, i, "runs");
        if (!value) return 2;
        auto const& v = *value;
        if (a == "--journal") dir = v;
        else if (a == "--config") config_file = v;
        else if (a == "--agent") filter.agent = v;
        else if (a == "--kind") {
            if (!read_kind(v, filter)) return 2;
        } else if (a == "--since") {
            // The same reading as GET /v1/runs?since=: the journal compares one spelling of a time,
            // so any other is converted, and what is not a time at all is refused.
            auto bound = core::since_bound(v);
            if (!bound) {
                std::cerr << "airlock runs: --since: '" << v
                          << "' is not an RFC 3339 time (e.g. 2026-11-30T10:00:00Z or 2026-11-30T11:00:00+01:00)\n";
                return 2;
            }
            filter.since = std::move(*bound);
        } else if (a == "--cursor") filter.cursor = v;
        else if (a == "--status") {
            if (std::find(std::begin(core::run_statuses), std::end(core::run_statuses), v) == std::end(core::run_statuses)) {
                std::cerr << "airlock runs: --status: '" << v << "' is not a run status\n";
                return 2;
            }
            filter.status = v;
        } else {  // --limit
            std::size_t n = 0;
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || p != v.data() + v.size() || n == 0 || n > 10000) {
                std::cerr << "airlock runs: --limit: '" << v << "' is not a number from 1 to 10000\n";
                return 2;
            }
            filter.limit = n;
        }
    }
    return std::nullopt;
}

}  // namespace

int run_runs(std::vector<std::string> const& args) {
    runs_args parsed;
    if (auto exit = parse_runs_args(args, parsed)) return *exit;
    auto const& [dir, config_file, filter, as_json] = parsed;
    if (dir && config_file) {
        std::cerr << "airlock runs: give --journal or --config, not both\n";
        return 2;
    }
    // Listing must not create a journal where none was.
    auto opened = cli::open_named_journal("runs", dir, config_file, true);
    if (!opened) return 1;
    // A cursor is the last run of a page printed before; any other would list from an arbitrary place.
    if (filter.cursor) {
        auto last = cli::run_sync(opened->async_head(*filter.cursor));
        if (!last) {
            std::cerr << "airlock runs: " << last.error().message << "\n";
            return 1;
        }
        if (!*last) {
            std::cerr << "airlock runs: --cursor: no run '" << *filter.cursor
                      << "' in this journal (give the run printed after 'more: --cursor')\n";
            return 2;
        }
    }
    auto page = cli::run_sync(opened->async_runs(filter));
    if (!page) {
        std::cerr << "airlock runs: " << page.error().message << "\n";
        return 1;
    }
    if (as_json) {
        for (auto const& s : page->runs) std::cout << boost::json::serialize(core::to_json(s)) << "\n";
    } else {
        std::printf("%-28s %-8s %-20s %-18s %8s  %s\n", "RUN", "KIND", "AGENT", "STATUS", "RECORDS", "ADMITTED");
        for (auto const& s : page->runs)
            std::printf("%-28s %-8s %-20s %-18s %8llu  %s\n", s.run_id.c_str(), s.kind.c_str(), s.agent.c_str(),
                        s.status.c_str(), static_cast<unsigned long long>(s.head_seq), s.admitted_at.c_str());
        std::fflush(stdout);
        if (page->runs.empty()) std::cerr << "no runs match\n";
    }
    // The table's last line, on the table's stream: written to the other one, it could land in the middle of
    // (or glued to) the rows wherever the two streams are merged. JSON lines stay pure JSON on stdout.
    if (page->next_cursor) {
        if (as_json) {
            std::cerr << "more: --cursor " << *page->next_cursor << "\n";
        } else {
            std::printf("more: --cursor %s\n", page->next_cursor->c_str());
            std::fflush(stdout);
        }
    }
    opened->close();
    return 0;
}

}  // namespace airlock::service
