// `airlock serve` and its signals, run as the real binary: SIGTERM drains (in-flight calls finish,
// new connections are refused, exit 0, the journal verifies), a second signal stops at once, and
// SIGHUP reloads the configuration without dropping sessions or accepting a broken file.
#include "tests/e2e/sidecar_deployment.hpp"
#include "tests/support/http_get.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <sys/stat.h>

#include <csignal>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {

std::string mcp_url(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port) + "/mcp"; }

// True once a TCP connection to the port is refused (the listener is gone), polling a while for it.
bool eventually_refused(std::uint16_t port) {
    for (int i = 0; i < 100; ++i) {
        if (http_get(port, "/healthz").status == 0) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

boost::json::object outcome(child_process& client) {
    INFO(client.stderr_text());
    REQUIRE(client.wait(60s) == 0);
    return boost::json::parse(client.stdout_text()).as_object();
}

// airlock serving a deployment, with a slow call of `steps` progress steps in flight when SIGTERM arrives.
struct drain_under_way {
    child_process airlock;
    std::uint16_t port = 0;
    std::unique_ptr<child_process> client;

    drain_under_way(sidecar_deployment const& d, int steps)
        : airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"}) {
        port = airlock_port(airlock);
        client = d.client("slow", mcp_url(port), {std::to_string(steps)});
        REQUIRE(client->wait_for_stderr_line("progress 1", 60s));
        airlock.signal(SIGTERM);
        REQUIRE(airlock.wait_for_stderr_line("draining", 20s));
    }
};

// airlock serving a deployment, where `call` makes one call to hold__release on the given port and
// leaves what it opened open; then SIGTERM. The caller's run must end sealed as stopped by airlock.
void check_sealed_as_stopped(std::function<void(std::uint16_t port)> const& call) {
    sidecar_deployment d;
    {
        child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
        call(airlock_port(airlock));
        airlock.signal(SIGTERM);
        INFO(airlock.stderr_text());
        CHECK(airlock.wait(30s) == 0);
    }
    d.check_outcome_then_seal("effect_done");
    auto shown = d.only_run_shown();
    CHECK_THAT(shown.substr(shown.find("run_sealed")), Catch::Contains("airlock stopped"));
}

}  // namespace

TEST_CASE("SIGTERM drains: a slow call in flight completes, new connections are refused, exit 0, the journal verifies") {
    sidecar_deployment d;
    {
        drain_under_way run(d, 8);
        auto& airlock = run.airlock;
        CHECK(eventually_refused(run.port));
        auto out = outcome(*run.client);
        CHECK(out.at("text") == "slow done after 8 steps");
        CHECK(out.at("progress") == 8);
        INFO(airlock.stderr_text());
        CHECK(airlock.wait(30s) == 0);
        CHECK_THAT(airlock.stderr_text(), Catch::Contains("airlock stopped"));
    }
    auto verified = d.verify_journal();
    INFO(verified.out << verified.err);
    CHECK(verified.exit_code == 0);
    CHECK_THAT(verified.out, Catch::Contains("runs verified"));
}

TEST_CASE("after SIGTERM, calls that finish within the drain grace get their results, the rest are cut off, as the journal says") {
    sidecar_deployment d({"slow"}, "    drain_grace: 1500ms\n");
    std::vector<raw_response> answers(8);
    {
        child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
        auto port = airlock_port(airlock);
        auto session = open_legacy_session(port);
        // Calls of 1 to 8 steps (0.3 to 2.4 s) at once; the grace ends in the middle of them.
        std::vector<std::thread> clients;
        for (std::size_t i = 0; i < answers.size(); ++i)
            clients.emplace_back([&, i] {
                auto body = R"({"jsonrpc":"2.0","id":)" + std::to_string(10 + i) +
                            R"(,"method":"tools/call","params":{"name":"hold__slow","arguments":{"steps":)" +
                            std::to_string(i + 1) + "}}}";
                answers[i] = raw_http(port, legacy_request(port, session, body), 60s);
            });
        std::this_thread::sleep_for(500ms);
        airlock.signal(SIGTERM);
        for (auto& c : clients) c.join();
        INFO(airlock.stderr_text());
        CHECK(airlock.wait(30s) == 0);
    }
    int results = 0, cut_off = 0;
    for (auto const& a : answers) {
        INFO(a.head << "\n" << a.body);
        REQUIRE(a.status == 200);
        auto m = boost::json::parse(a.body).as_object();
        if (m.contains("result")) {
            CHECK_THAT(std::string(m.at("result").at("content").at(0).at("text").as_string()), Catch::StartsWith("slow done"));
            ++results;
        } else {
            CHECK_THAT(std::string(m.at("error").at("message").as_string()), Catch::Contains("this request was cut off"));
            ++cut_off;
        }
    }
    CHECK(results >= 1);
    CHECK(cut_off >= 1);
    // Every result is a call the journal records as done; no call it records as done was cut off.
    CHECK(d.records_of("effect_done") == results);
    CHECK(d.records_of("effect_started") == 8);
}

TEST_CASE("a second SIGTERM during the drain stops airlock at once, and the journal still verifies") {
    sidecar_deployment d;
    {
        // 100 steps of 300 ms: far longer than this test waits for anything.
        drain_under_way run(d, 100);
        auto& airlock = run.airlock;
        airlock.signal(SIGTERM);
        INFO(airlock.stderr_text());
        CHECK(airlock.wait(20s) == 0);
        CHECK_THAT(airlock.stderr_text(), Catch::Contains("stopping now"));
        // The call was cut off: the client fails with an error that says so, instead of waiting
        // out its 100 steps.
        CHECK(run.client->wait(30s) != 0);
        CHECK_THAT(run.client->stderr_text(), Catch::Contains("airlock is stopping: this request was cut off"));
        CHECK_THAT(airlock.stderr_text(), !Catch::Contains("is sealed"));
    }
    // The session's run: the cut-off call's outcome is journaled, and then the run is sealed.
    d.check_outcome_then_seal("effect_failed");
}

TEST_CASE("a client that deletes its session while a call runs gets that call answered with an error saying so") {
    sidecar_deployment d;
    {
        child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
        auto port = airlock_port(airlock);
        // 100 steps of 300 ms: without an answer the client would wait out its own 60 s timeout.
        auto client = d.client("delete", mcp_url(port), {"100"});
        auto out = outcome(*client);
        INFO(client->stderr_text());
        CHECK_THAT(std::string(out.at("error").as_string()), Catch::Contains("the session was deleted"));
        airlock.signal(SIGTERM);
        INFO(airlock.stderr_text());
        CHECK(airlock.wait(30s) == 0);
    }
    d.check_outcome_then_seal("effect_failed");
}

TEST_CASE("SIGHUP adding a grant shows the tool to an open session with notifications/tools/list_changed") {
    sidecar_deployment d({"slow"});
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = airlock_port(airlock);
    auto client = d.client("watch", mcp_url(port));
    REQUIRE(client->wait_for_stderr_line("tools: hold__slow", 60s));
    d.grant({"slow", "release"});
    airlock.signal(SIGHUP);
    REQUIRE(airlock.wait_for_stderr_line("reload: done", 30s));
    auto out = outcome(*client);
    CHECK(boost::json::serialize(out.at("before")) == R"(["hold__slow"])");
    CHECK(boost::json::serialize(out.at("after")) == R"(["hold__release","hold__slow"])");
    // The unchanged upstream kept its child: no second start of the hold server.
    CHECK_THAT(airlock.stderr_text(), Catch::Contains("1 upstreams, 0 new or changed, 0 removed"));
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
}

TEST_CASE("an invalid configuration on SIGHUP is refused with a log line naming the field, and everything keeps working") {
    sidecar_deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = airlock_port(airlock);
    d.write_config("    drain_grase: 5s\n");
    d.write_token("a-new-token-that-must-not-be-used-0123");
    airlock.signal(SIGHUP);
    auto refused = airlock.wait_for_stderr_line("reload refused", 30s);
    REQUIRE(refused);
    CHECK_THAT(*refused, Catch::Contains("server.drain_grase"));
    // The old configuration, token included, still serves.
    auto client = d.client("slow", mcp_url(port), {"2"});
    CHECK(outcome(*client).at("text") == "slow done after 2 steps");
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
}

TEST_CASE("SIGHUP replaces bearer tokens: the old one is refused, the new one admitted, without a restart") {
    sidecar_deployment d;
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = airlock_port(airlock);
    auto tools = [&](std::string const& t) {
        return run_command({AIRLOCK_BINARY, "tools", "--server", mcp_url(port), "--header", "Authorization: Bearer " + t});
    };
    REQUIRE(tools(sidecar_deployment::token).exit_code == 0);
    std::string fresh = "bob-sidecar-fedcba9876543210";
    d.write_token(fresh);
    airlock.signal(SIGHUP);
    REQUIRE(airlock.wait_for_stderr_line("reload: done", 30s));
    auto old_one = tools(sidecar_deployment::token);
    CHECK(old_one.exit_code != 0);
    auto new_one = tools(fresh);
    INFO(new_one.err);
    CHECK(new_one.exit_code == 0);
    // airlock's tools as `airlock tools` reports them (names, out or err, whichever it uses).
    CHECK_THAT(new_one.out + new_one.err, Catch::Contains("slow"));
    CHECK(airlock.stderr_text().find(fresh) == std::string::npos);
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
}

namespace {

// The TELLER example with its ledger opening at `balance`, journal and token in `dir`.
void write_teller_config(std::filesystem::path const& dir, int balance) {
    auto src = std::string(AIRLOCK_SOURCE_DIR);
    std::ofstream(dir / "airlock.yaml")
        << "server:\n    drain_grace: 60s\njournal: { dir: journal }\n"
        << "upstreams:\n  - name: ledger\n    stdio:\n      argv: [\"" << peers::node() << "\", \"" << src
        << "/examples/ledger/server.mjs\"]\n      env: { LEDGER_OPENING: '{\"AC-1\": " << balance << "}' }\n"
        << "egress:\n  - process: \"" << peers::node() << "\"\n  - local\n"
        << "principals:\n  - { name: alice, token_file: alice.token, manifest: \"" << src << "/examples/teller.yaml\" }\n"
        << "agents:\n  - { manifest: \"" << src << "/examples/teller.yaml\", script: \"" << src
        << "/examples/teller.script.yaml\" }\n";
}

// A directory holding the TELLER configuration (ledger opening 42) and alice's token, and
// `airlock serve` on it.
struct teller_deployment {
    temp_dir dir{"airlock-teller"};
    teller_deployment() {
        std::ofstream(dir.path() / "alice.token") << sidecar_deployment::token << "\n";
        ::chmod((dir.path() / "alice.token").c_str(), 0600);
        write_teller_config(dir.path(), 42);
    }
    std::unique_ptr<child_process> serve() const {
        return std::make_unique<child_process>(std::vector<std::string>{
            AIRLOCK_BINARY, "serve", "--config", (dir.path() / "airlock.yaml").string(), "--listen", "127.0.0.1:0"});
    }
};

// What the run's ledger__read returned, from its journal over REST.
std::string balance_read_by_a_run(std::uint16_t port) {
    auto done = run_over_rest(port, "127.0.0.1:" + std::to_string(port), R"({"agent":"teller","input":{"question":"AC-1?"}})");
    std::istringstream lines(done.journal);
    for (std::string line; std::getline(lines, line);) {
        auto rec = boost::json::parse(line).as_object();
        if (rec.at("kind") != "effect_done") continue;
        auto const& out = rec.at("body").at("output");
        if (out.is_object() && out.as_object().contains("balance")) return boost::json::serialize(out.at("balance"));
    }
    return "";
}

}  // namespace

TEST_CASE("SIGHUP changing an upstream reaches agent runs: the next run calls the new upstream, not the retired one") {
    teller_deployment d;
    auto airlock = d.serve();
    auto port = airlock_port(*airlock);
    CHECK(balance_read_by_a_run(port) == "42");
    // The ledger's environment changes, so the reload starts a new child; the old one is retired
    // only after the 60 s grace, so a run still routed to it would read 42.
    write_teller_config(d.dir.path(), 7);
    airlock->signal(SIGHUP);
    REQUIRE(airlock->wait_for_stderr_line("reload: done", 30s));
    CHECK(balance_read_by_a_run(port) == "7");
    airlock->signal(SIGTERM);
    CHECK(airlock->wait(30s) == 0);
}

namespace {

// The value of one series in a scrape, e.g. `airlock_runs{status="running"}`; -1 when absent.
long series(std::uint16_t port, std::string const& name) {
    auto text = http_get(port, "/metrics").body;
    auto at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::stol(text.substr(at + name.size() + 2));
}

long runs_gauge(std::uint16_t port, std::string const& status) {
    return series(port, "airlock_runs{status=\"" + status + "\"}");
}

}  // namespace

TEST_CASE("airlock_runs counts agent runs by status, a restart counts them again from the journal, and their calls and refusals are counted") {
    teller_deployment d;
    auto airlock = d.serve();
    auto port = airlock_port(*airlock);
    CHECK(runs_gauge(port, "succeeded") == -1);
    REQUIRE(balance_read_by_a_run(port) == "42");
    CHECK(runs_gauge(port, "succeeded") == 1);
    CHECK(runs_gauge(port, "running") == 0);
    // The run's read and its refused post count beside the gateway's calls and refusals.
    CHECK(series(port, R"(airlock_tool_calls_total{server="ledger",tool="read",outcome="ok"})") == 1);
    CHECK(series(port, R"(airlock_policy_denials_total{reason="protected_field_untrusted"})") == 1);
    airlock->signal(SIGTERM);
    REQUIRE(airlock->wait(30s) == 0);

    airlock = d.serve();
    port = airlock_port(*airlock);
    CHECK(runs_gauge(port, "succeeded") == 1);
    REQUIRE(balance_read_by_a_run(port) == "42");
    CHECK(runs_gauge(port, "succeeded") == 2);
    airlock->signal(SIGTERM);
    CHECK(airlock->wait(30s) == 0);
}

TEST_CASE("stopping seals the runs of callers without a session: a 2026-07-28 principal's run ends sealed") {
    check_sealed_as_stopped([](std::uint16_t port) {
        auto called = modern_post(port, sidecar_deployment::token, "tools/call", "hold__release",
                                  R"("name":"hold__release","arguments":{},)");
        INFO(called.body);
        REQUIRE(called.status == 200);
    });
}

TEST_CASE("stopping seals an open 2025-11-25 session's run as stopped by airlock, not as ended by its client") {
    check_sealed_as_stopped([](std::uint16_t port) {
        auto session = open_legacy_session(port);
        // The session stays open after the call: the client neither deletes it nor lets it idle out.
        auto called = raw_http(port, legacy_request(port, session,
                                                    R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold__release","arguments":{}}})"));
        INFO(called.body);
        REQUIRE(called.status == 200);
    });
}
