#include "tests/crash/scenarios.hpp"

#include "tests/crash/journal_check.hpp"
#include "tests/crash/load.hpp"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <algorithm>
#include <cstring>
#include <functional>
#include <future>

namespace airlock::crash {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

long long ms_since(clock_type::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t).count();
}

// A stopped process is continued whatever happens, so it can see its stdin close and leave.
struct continued_at_exit {
    int pid;
    ~continued_at_exit() {
        if (pid > 0) ::kill(pid, SIGCONT);
    }
};

scenario_result fail(scenario_result r, std::string detail) {
    r.verdict = scenario_result::failed;
    r.detail = std::move(detail);
    return r;
}

}  // namespace

// The counter upstream is frozen mid-call: that call must end at its deadline with an error that
// says so, while the other upstream keeps answering; once continued, the counter serves again.
scenario_result stopped_upstream(deployment& d) {
    scenario_result r{"SIGSTOP of the upstream mid-call", scenario_result::failed, ""};
    int pid = child_pid(d.pid(), "counting_server.mjs");
    if (pid <= 0) return fail(r, "cannot find the counting upstream's process");
    continued_at_exit guard{pid};
    ::kill(pid, SIGSTOP);
    auto started = clock_type::now();
    auto hung = std::async(std::launch::async, [&] { return gateway_call(d.port(), "counter__add", add_arguments("stopped-1")); });
    std::this_thread::sleep_for(300ms);
    auto echo_at = clock_type::now();
    auto echo = gateway_call(d.port(), "everything__echo", R"({"message":"still serving"})");
    auto echo_ms = ms_since(echo_at);
    auto stopped = hung.get();
    auto hung_ms = ms_since(started);
    ::kill(pid, SIGCONT);
    if (echo.kind != call_outcome::ok || echo.text.find("still serving") == std::string::npos)
        return fail(r, "the other upstream did not answer while the counter was stopped: " + echo.text);
    if (stopped.kind == call_outcome::ok || stopped.kind == call_outcome::none)
        return fail(r, "the call to the stopped upstream got no error in " + std::to_string(hung_ms) + " ms: " + stopped.text);
    if (stopped.text.find("time") == std::string::npos && stopped.text.find("deadline") == std::string::npos)
        return fail(r, "the error does not say the call timed out: " + stopped.text);
    call_outcome again;
    for (int i = 0; i < 50 && again.kind != call_outcome::ok; ++i) {
        again = gateway_call(d.port(), "counter__add", add_arguments("continued-" + std::to_string(i)));
        if (again.kind != call_outcome::ok) std::this_thread::sleep_for(200ms);
    }
    if (again.kind != call_outcome::ok) return fail(r, "the counter did not serve again after SIGCONT: " + again.text);
    r.verdict = scenario_result::passed;
    r.detail = "stopped call ended after " + std::to_string(hung_ms) + " ms: \"" + stopped.text +
               "\"; the other upstream answered in " + std::to_string(echo_ms) + " ms meanwhile";
    return r;
}

namespace {

// Calls with large arguments until the journal refuses one; what the clients were told, and the refusal.
told fill(deployment& d, std::string& refusal) {
    told clients;
    auto filler = std::string(60000, 'x');
    for (int i = 0; i < 400 && refusal.empty(); ++i) {
        auto key = "fill-" + std::to_string(i) + "-" + filler;
        auto a = gateway_call(d.port(), "counter__add", add_arguments(key));
        if (a.kind == call_outcome::ok || a.kind == call_outcome::tool_error)
            clients.calls.push_back({key, "2026-07-28", a.kind == call_outcome::ok});
        else refusal = a.text.empty() ? "(no answer)" : a.text;
    }
    return clients;
}

// Fills the journal: the refusal must name the journal, reads must still work and /readyz say one
// of `states`. Once there is room again (`make_room`: a larger map, a larger disk), a restart must
// find every call that was answered in the journal, with its outcome or noted in doubt.
scenario_result fill_journal(scenario_result r, deployment& d, std::vector<std::string> const& states,
                             std::function<std::string()> const& make_room) {
    if (auto failed = d.start()) return fail(r, "airlock did not start: " + *failed);
    std::string refusal;
    auto clients = fill(d, refusal);
    if (refusal.empty()) return fail(r, "400 large calls and the journal never refused one");
    if (refusal.find("journal") == std::string::npos) return fail(r, "the refusal does not name the journal: " + refusal);
    auto runs = rest(d.port(), operator_token, "GET", "/v1/runs?kind=all");
    auto ready = rest(d.port(), operator_token, "GET", "/readyz");
    d.stop();
    if (runs.status != 200) return fail(r, "reads stopped working: GET /v1/runs answered " + std::to_string(runs.status));
    auto named = [&](std::string const& s) { return ready.body.find("\"state\":\"" + s + "\"") != std::string::npos; };
    auto which = std::find_if(states.begin(), states.end(), named);
    if (ready.status != 503 || which == states.end())
        return fail(r, "/readyz answered " + std::to_string(ready.status) + " " + ready.body + ", not 503 with " + states.front());
    if (auto why = make_room(); !why.empty()) return fail(r, "cannot make room again: " + why);
    if (auto failed = d.start()) return fail(r, "airlock did not start once there was room: " + *failed);
    d.stop();
    auto journal = read_journal(d.journal(), d.dir() / "export");
    auto check = check_promises(journal, performed_adds(d.counter_log()), clients);
    if (!check.problems.empty()) return fail(r, check.problems.front());
    std::string verified;
    if (broken_chains(d.journal(), verified) != 0) return fail(r, "the journal does not verify: " + verified);
    r.verdict = scenario_result::passed;
    r.detail = std::to_string(clients.calls.size()) + " calls answered, then refused: \"" + refusal +
               "\"; reads served, /readyz 503 " + *which + "; with room again all " + std::to_string(clients.calls.size()) +
               " are journaled (" + std::to_string(check.in_doubt) + " in doubt)";
    return r;
}

}  // namespace

scenario_result full_map() {
    deployment d("map", {.map_size = "1MiB"});
    auto larger = [&] {
        d.write_files({.map_size = "64MiB"});
        return std::string();
    };
    return fill_journal({"journal.map_size full (1 MiB)", scenario_result::failed, ""}, d, {"map_full"}, larger);
}

// A tmpfs of 4 MiB under the journal: LMDB's file cannot grow past it long before a 1 GiB map is full.
scenario_result full_disk() {
    scenario_result r{"full disk (4 MiB tmpfs)", scenario_result::failed, ""};
    deployment d("disk");
    fs::create_directories(d.journal());
    if (::mount("tmpfs", d.journal().c_str(), "tmpfs", 0, "size=4m") != 0) {
        r.verdict = scenario_result::skipped;
        r.detail = std::string("mount -t tmpfs is not permitted here (") + std::strerror(errno) + ")";
        return r;
    }
    struct unmounted_at_exit {
        fs::path at;
        ~unmounted_at_exit() { ::umount2(at.c_str(), MNT_DETACH); }
    } guard{d.journal()};
    // LMDB reports a write cut short by a full disk as an I/O error, which /readyz calls write_failed.
    auto larger = [&] {
        if (::mount("tmpfs", d.journal().c_str(), "tmpfs", MS_REMOUNT, "size=64m") == 0) return std::string();
        return std::string("remount: ") + std::strerror(errno);
    };
    auto result = fill_journal(r, d, {"disk_full", "write_failed"}, larger);
    d.kill9();
    return result;
}

// A journal directory airlock may not write: the start fails, saying which directory and why.
scenario_result read_only_journal() {
    scenario_result r{"read-only journal directory", scenario_result::failed, ""};
    deployment d("readonly");
    fs::create_directories(d.journal());
    ::chmod(d.journal().c_str(), 0555);
    // root writes anywhere; without CAP_DAC_OVERRIDE it meets the permissions as anyone would.
    std::vector<std::string> prefix;
    if (::geteuid() == 0) {
        if (::access("/usr/bin/setpriv", X_OK) != 0) {
            r.verdict = scenario_result::skipped;
            r.detail = "running as root, which writes anywhere, and setpriv (util-linux) to drop that is missing";
            return r;
        }
        prefix = {"/usr/bin/setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"};
    }
    auto failed = d.start(prefix);
    ::chmod(d.journal().c_str(), 0755);
    if (!failed) return fail(r, "airlock started on a journal directory it cannot write");
    auto const& text = *failed;
    auto at = text.find(d.journal().string());
    if (at == std::string::npos) return fail(r, "the start error does not name the journal directory: " + text);
    auto line_start = text.rfind('\n', at);
    line_start = line_start == std::string::npos ? 0 : line_start + 1;
    r.verdict = scenario_result::passed;
    r.detail = "start refused: " + text.substr(line_start, text.find('\n', at) - line_start);
    return r;
}

}  // namespace airlock::crash
