// make crash-test: airlock's durability promises under kill -9. Each round puts a mixed load on the
// real `airlock serve` (gateway calls in both MCP eras, agent runs, runs awaiting approval and an
// operator approving them), kills it with SIGKILL at a moment drawn from the seed, restarts it on
// the same durable journal and checks, from outside, that every chain verifies, that every call a
// client was told the answer of is journaled with that outcome or noted in doubt, that the upstream
// performed no mutating call twice, and that every mutating call in doubt quarantined its run. Then the
// scenarios: a stopped upstream, a full map, a full disk, a read-only journal directory.
//
//   crash_rounds [--rounds N] [--seed N]      (exit 1 when a promise broke)

#include "tests/crash/deployment.hpp"
#include "tests/crash/journal_check.hpp"
#include "tests/crash/load.hpp"
#include "tests/crash/scenarios.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>

using namespace airlock::crash;
using namespace std::chrono_literals;

namespace {

struct options {
    int rounds = 20;
    std::uint64_t seed = std::random_device{}();
};

std::optional<options> parse_options(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if ((a != "--rounds" && a != "--seed") || i + 1 == argc) {
            std::cerr << "usage: crash_rounds [--rounds N] [--seed N]\n";
            return std::nullopt;
        }
        std::string value = argv[++i];
        if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || value.size() > 19) {
            std::cerr << "crash_rounds: " << a << " must be a whole number, not '" << value << "'\n";
            return std::nullopt;
        }
        if (a == "--rounds") o.rounds = static_cast<int>(std::min<std::uint64_t>(std::stoull(value), 10000));
        else o.seed = std::stoull(value);
    }
    return o;
}

struct round_row {
    int round = 0;
    int kill_ms = 0;
    std::size_t calls = 0, runs = 0, approvals = 0;
    int in_doubt = 0;
    int duplicates = 0;
    int broken = 0;
    std::size_t problems = 0;
};

// Agent runs the restarted airlock resumed are driven to an end (or to an approval) before the
// journal is read, so what is checked is what recovery decided. Bounded: 60 s.
bool settle(deployment const& d) {
    for (int i = 0; i < 600; ++i) {
        auto r = rest(d.port(), operator_token, "GET", "/v1/runs?status=running&limit=1");
        if (r.status == 200 && boost::json::parse(r.body).at("runs").as_array().empty()) return true;
        std::this_thread::sleep_for(100ms);
    }
    return false;
}

void merge(told& all, told const& more) {
    all.calls.insert(all.calls.end(), more.calls.begin(), more.calls.end());
    all.runs.insert(all.runs.end(), more.runs.begin(), more.runs.end());
    all.approvals.insert(all.approvals.end(), more.approvals.begin(), more.approvals.end());
}

// The checks after a restart, over everything every client was told so far.
promise_check check_now(deployment const& d, told const& all, int& broken, std::vector<std::string>& problems) {
    std::string verified;
    broken = broken_chains(d.journal(), verified);
    auto check = check_promises(read_journal(d.journal(), d.dir() / "export"), performed_adds(d.counter_log()), all);
    if (broken != 0) check.problems.push_back("journal verify --all: " + verified);
    problems.insert(problems.end(), check.problems.begin(), check.problems.end());
    return check;
}

// One round: load, SIGKILL at `kill_ms`, restart on the same journal, resume, check.
round_row one_round(deployment& d, int round, int kill_ms, told& all, int& in_doubt_before, std::vector<std::string>& problems) {
    round_row row{round, kill_ms};
    told round_told;
    {
        load clients(d.port(), "r" + std::to_string(round));
        std::this_thread::sleep_for(std::chrono::milliseconds(kill_ms));
        d.kill9();
        round_told = clients.stop();
    }
    merge(all, round_told);
    std::printf("round %d: killed at %d ms; %d refused, %d unanswered%s%s\n", round, kill_ms, round_told.refused,
                round_told.unanswered, round_told.first_refusal.empty() ? "" : "; first refusal: ",
                round_told.first_refusal.substr(0, 200).c_str());
    std::fflush(stdout);
    row.calls = round_told.calls.size();
    row.runs = round_told.runs.size();
    row.approvals = round_told.approvals.size();
    if (auto failed = d.start()) {
        problems.push_back("round " + std::to_string(round) + ": airlock did not restart: " + *failed);
        row.problems = 1;
        return row;
    }
    auto before = problems.size();
    if (!settle(d)) problems.push_back("round " + std::to_string(round) + ": resumed runs still running after 60 s");
    auto check = check_now(d, all, row.broken, problems);
    row.in_doubt = check.in_doubt - in_doubt_before;
    in_doubt_before = check.in_doubt;
    row.duplicates = check.duplicates;
    row.problems = problems.size() - before;
    return row;
}

// How the journal's runs ended, agent runs and gateway sessions together.
void print_statuses(journal_view const& j) {
    std::map<std::string, int> statuses;
    for (auto const& [id, run] : j.runs)
        if (!run.effects.empty()) ++statuses[run.status.empty() ? "unsealed" : run.status];
    std::printf("runs with calls in the journal after the rounds:");
    for (auto const& [status, n] : statuses) std::printf(" %d %s", n, status.c_str());
    std::printf("\n");
}

void print_table(std::vector<round_row> const& rows, std::vector<scenario_result> const& scenarios) {
    std::printf("\n%5s | %7s | %21s | %8s | %10s | %13s | %s\n", "round", "kill at", "acknowledged", "in doubt",
                "duplicates", "chains broken", "promises broken");
    std::printf("%5s | %7s | %21s | %8s | %10s | %13s |\n", "", "(ms)", "calls / runs / approvals", "", "(must be 0)",
                "(must be 0)");
    std::size_t calls = 0, runs = 0, approvals = 0;
    int in_doubt = 0;
    for (auto const& r : rows) {
        std::printf("%5d | %7d | %6zu / %5zu / %5zu | %8d | %10d | %13d | %zu\n", r.round, r.kill_ms, r.calls, r.runs,
                    r.approvals, r.in_doubt, r.duplicates, r.broken, r.problems);
        calls += r.calls, runs += r.runs, approvals += r.approvals, in_doubt += r.in_doubt;
    }
    std::printf("%5s | %7s | %6zu / %5zu / %5zu | %8d |\n\n", "all", "", calls, runs, approvals, in_doubt);
    for (auto const& s : scenarios) {
        char const* verdict = s.verdict == scenario_result::passed ? "passed" : s.verdict == scenario_result::skipped ? "SKIPPED" : "FAILED";
        std::printf("%-36s %-8s %s\n", s.name.c_str(), verdict, s.detail.c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
    auto opts = parse_options(argc, argv);
    if (!opts) return 2;
    std::printf("crash rounds: %d rounds, seed %llu (replay with --seed %llu)\n", opts->rounds,
                static_cast<unsigned long long>(opts->seed), static_cast<unsigned long long>(opts->seed));
    std::fflush(stdout);
    auto started = std::chrono::steady_clock::now();
    std::mt19937_64 gen(opts->seed);
    std::uniform_int_distribution<int> kill_at(200, 3000);
    std::vector<std::string> problems;
    std::vector<round_row> rows;
    std::vector<scenario_result> scenarios;
    {
        deployment d("rounds");
        if (auto failed = d.start()) {
            std::fprintf(stderr, "airlock did not start:\n%s\n", failed->c_str());
            return 1;
        }
        told all;
        int in_doubt = 0;
        for (int round = 1; round <= opts->rounds; ++round) {
            rows.push_back(one_round(d, round, kill_at(gen), all, in_doubt, problems));
            if (!d.running()) break;
        }
        if (d.running()) scenarios.push_back(stopped_upstream(d));
        if (d.running() && d.stop() != 0) problems.push_back("airlock did not stop cleanly after the rounds");
        int broken = 0;
        check_now(d, all, broken, problems);
        print_statuses(read_journal(d.journal(), d.dir() / "export"));
    }
    scenarios.push_back(full_map());
    scenarios.push_back(full_disk());
    scenarios.push_back(read_only_journal());
    print_table(rows, scenarios);
    for (auto const& s : scenarios)
        if (s.verdict == scenario_result::failed) problems.push_back(s.name + ": " + s.detail);
    for (auto const& p : problems) std::printf("BROKEN: %s\n", p.c_str());
    auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count();
    std::printf("%s in %lld s (seed %llu)\n", problems.empty() ? "every promise kept" : "PROMISES BROKEN",
                static_cast<long long>(seconds), static_cast<unsigned long long>(opts->seed));
    return problems.empty() ? 0 : 1;
}
