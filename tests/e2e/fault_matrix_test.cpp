// The fault matrix: `airlock serve` in front of an upstream that misbehaves in one way at a time
// (tests/fixtures/faults/faulty_server.mjs, over stdio and over HTTP) beside a healthy one. For
// each fault: what the client of airlock gets, in words a user understands; that the healthy
// upstream answers while the fault is in progress (its latency is printed); what the journal keeps
// of the failed call; and that once the fault is over the same upstream answers again. A stdio
// upstream flooding its stderr is here too: it must cost airlock's log a bounded number of lines.
//
// Covered elsewhere and not repeated here: a handshake that never completes (stdio and HTTP) and an
// HTTP upstream that resets every connection from the start (upstream_faults_test.cpp), the egress
// refusal of an upstream's own address (same file), and a notification flood reaching an SSE reply
// stream (flood_test.cpp).
#include "tests/support/child_process.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/mute_listener.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr char const* token = "alice-matrix-0123456789abcdef";
// The faulty upstream's deadline: short, so that silence costs seconds, and long beside what a
// healthy call takes on a busy machine.
constexpr auto faulty_deadline = 6s;

std::string faulty_server() { return std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/faults/faulty_server.mjs"; }

// The HTTP flavour of the faulty server, on the port it is given (0: any), stopped when it goes.
struct http_faulty {
    std::unique_ptr<child_process> child;
    std::uint16_t port = 0;

    http_faulty(std::string const& fault, std::filesystem::path const& heal, std::string const& redirect_to,
                std::uint16_t at = 0) {
        child = std::make_unique<child_process>(
            std::vector<std::string>{peers::node(), faulty_server(), "http", fault},
            std::vector<std::string>{"PORT=" + std::to_string(at), "HEAL_FILE=" + heal.string(),
                                     "REDIRECT_TO=" + redirect_to});
        auto line = child->wait_for_stderr_line("airlock-test-listening", 30s);
        REQUIRE(line.has_value());
        port = static_cast<std::uint16_t>(std::stoi(line->substr(line->rfind(' ') + 1)));
    }
    ~http_faulty() {
        child->signal(SIGTERM);
        child->wait(10s);
    }
    std::string origin() const { return "http://127.0.0.1:" + std::to_string(port); }
};

// airlock with two upstreams, `faulty` (the fault under test) and `healthy` (the same server with no
// fault), and alice granted work on both.
struct matrix_deployment {
    temp_dir dir{"airlock-fault-matrix"};
    std::filesystem::path config = dir.path() / "airlock.yaml";

    // `faulty` is the YAML of the faulty upstream's transport (its `stdio:` or `url:` line); `egress`
    // the egress entries beside the one for node.
    matrix_deployment(std::string const& faulty, std::string const& egress) {
        std::ofstream(dir.path() / "alice.token") << token << "\n";
        ::chmod((dir.path() / "alice.token").c_str(), 0600);
        std::ofstream(dir.path() / "alice.yaml")
            << "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: alice-desk, version: \"1\" }\nspec:\n  tools:\n"
            << "    - { ref: tool://faulty/work, mutates: false }\n    - { ref: tool://healthy/work, mutates: false }\n"
            << "  budgets: {}\n";
        std::ofstream(config)
            << "journal: { dir: journal }\nupstreams:\n"
            << "  - name: faulty\n    deadline: " << faulty_deadline.count() << "s\n    " << faulty
            << "\n  - name: healthy\n    stdio: { argv: [\"" << peers::node() << "\", \"" << faulty_server()
            << "\", stdio, none] }\n"
            << "egress:\n  - process: \"" << peers::node() << "\"\n"
            << egress << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n";
    }

    // Every record of the journal (airlock stopped), as JSON lines.
    std::string journal_records() const {
        auto const to = dir.path() / "export";
        auto exported = run_command({AIRLOCK_BINARY, "journal", "export", "--all", "--to", to.string(), "--journal",
                                     (dir.path() / "journal").string()});
        INFO(exported.out << exported.err);
        REQUIRE(exported.exit_code == 0);
        std::string all;
        for (auto const& f : std::filesystem::directory_iterator(to)) {
            std::ifstream in(f.path());
            all += std::string(std::istreambuf_iterator<char>(in), {});
        }
        return all;
    }
};

struct timed_call {
    raw_response reply;
    std::chrono::milliseconds took{};
};

timed_call call_work(std::uint16_t port, std::string const& upstream) {
    auto const name = upstream + "__work";
    auto start = std::chrono::steady_clock::now();
    auto r = modern_post(port, token, "tools/call", name, R"("name":")" + name + R"(","arguments":{},)");
    return {r, std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)};
}

// What a tools/call's reply says: the result's text (isError or not), or a JSON-RPC error's message.
struct call_outcome {
    bool is_error = false;
    bool rpc_error = false;
    std::string text;
};

call_outcome outcome_of(raw_response const& r) {
    INFO(r.head << r.body);
    REQUIRE(r.status == 200);
    // A JSON body, or the last event of an SSE one (the reply, after the notifications relayed).
    auto body = r.body;
    if (auto at = body.rfind("data: ");
        r.head.find("text/event-stream") != std::string::npos && at != std::string::npos)
        body = body.substr(at + 6, body.find('\n', at) - at - 6);
    auto v = json::parse(body).as_object();
    if (v.contains("error")) return {true, true, std::string(v.at("error").at("message").as_string())};
    auto const& result = v.at("result").as_object();
    bool err = result.contains("isError") && result.at("isError") == true;
    return {err, false, std::string(result.at("content").at(0).at("text").as_string())};
}

bool answered_worked(std::uint16_t port, std::string const& upstream) {
    auto c = call_work(port, upstream);
    if (c.reply.status != 200) return false;
    auto o = outcome_of(c.reply);
    return !o.is_error && o.text == "worked";
}

// Waits until both upstreams answer `work` (their tools read, their sessions open).
void wait_both_up(std::uint16_t port) {
    for (auto until = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < until;) {
        auto ready = http_get(port, "/readyz");
        if (ready.status == 200) return;
        std::this_thread::sleep_for(200ms);
    }
    FAIL("the upstreams did not come up");
}

// The effect_failed record of the faulty upstream's call, as journal export writes it.
std::string failed_record(std::string const& records) {
    std::istringstream in(records);
    for (std::string line; std::getline(in, line);)
        if (line.find("effect_failed") != std::string::npos) return line;
    return {};
}

// One fault. `fault_text` are the words the client's error must hold; `journal_text` those of the
// journal's effect_failed record (none: the call succeeds, as under a flood).
struct fault_case {
    std::string transport;  // stdio or http
    std::string fault;
    std::vector<std::string> fault_text;
    std::vector<std::string> journal_text;
    std::function<void(std::string const&)> check_log = {};  // more checks of airlock's log, once it stopped
};

// Starts the faulty call, and while it is in flight times `n` calls to the healthy upstream.
std::vector<std::chrono::milliseconds> healthy_during(std::uint16_t port, std::future<timed_call>& faulty, int n) {
    std::vector<std::chrono::milliseconds> took;
    std::this_thread::sleep_for(300ms);  // let the faulty call reach its upstream
    for (int i = 0; i < n; ++i) {
        auto c = call_work(port, "healthy");
        auto o = outcome_of(c.reply);
        CHECK_FALSE(o.is_error);
        CHECK(o.text == "worked");
        took.push_back(c.took);
        // A fault that lasts (silence, a drip, a flood) is still in progress: the healthy upstream
        // answered while it was, and before the faulty call's deadline.
        CHECK(c.took < faulty_deadline);
        if (faulty.wait_for(0s) == std::future_status::ready) break;
    }
    return took;
}

void print_latencies(fault_case const& f, std::vector<std::chrono::milliseconds> const& took, bool still_in_flight) {
    std::ostringstream line;
    line << "fault matrix: " << f.transport << " " << f.fault << ": the healthy upstream answered in";
    for (auto t : took) line << " " << t.count() << " ms";
    line << (still_in_flight ? " while the faulty call was in flight\n" : " (the faulty call had already ended)\n");
    std::cout << line.str() << std::flush;
}

// Until `deadline`, whether the faulty upstream answers "worked" again.
bool recovers(std::uint16_t port, std::chrono::seconds deadline) {
    for (auto until = std::chrono::steady_clock::now() + deadline; std::chrono::steady_clock::now() < until;) {
        if (answered_worked(port, "faulty")) return true;
        std::this_thread::sleep_for(500ms);
    }
    return false;
}

void run_fault(fault_case const& f) {
    INFO(f.transport << " " << f.fault);
    mute_listener elsewhere;  // where a redirect points: not in egress, and never to be contacted
    temp_dir scratch{"airlock-fault-heal"};
    auto const heal = scratch.path() / "healed";
    std::unique_ptr<http_faulty> server;
    std::string faulty = "stdio: { argv: [\"" + peers::node() + "\", \"" + faulty_server() + "\", stdio, " + f.fault +
                         "], env: { HEAL_FILE: \"" + heal.string() + "\" } }";
    std::string egress;
    if (f.transport == "http") {
        server = std::make_unique<http_faulty>(f.fault, heal,
                                               "http://127.0.0.1:" + std::to_string(elsewhere.port()) + "/mcp");
        faulty = "url: " + server->origin() + "/mcp";
        egress = "  - " + server->origin() + "\n";
    }
    matrix_deployment d(faulty, egress);
    child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
    auto port = wait_listening(airlock);
    wait_both_up(port);

    auto faulty_call = std::async(std::launch::async, [port] { return call_work(port, "faulty"); });
    auto took = healthy_during(port, faulty_call, 3);
    bool const in_flight = faulty_call.wait_for(0s) != std::future_status::ready;
    print_latencies(f, took, in_flight);
    auto failed = faulty_call.get();
    auto seen = outcome_of(failed.reply);
    INFO("the client saw: " << seen.text);
    std::cout << "fault matrix: " << f.transport << " " << f.fault << ": the client saw "
              << (seen.rpc_error  ? "JSON-RPC error: "
                  : seen.is_error ? "isError: "
                                  : "a result: ")
              << seen.text << " (after " << failed.took.count() << " ms)\n";
    CHECK(seen.is_error == !f.journal_text.empty());
    for (auto const& words : f.fault_text) CHECK_THAT(seen.text, Catch::Contains(words));
    CHECK(failed.took < faulty_deadline + 5s);

    // The fault ends: the server is healed (or, for one that exited over HTTP, started again where it was).
    std::ofstream(heal) << "healed\n";
    if (f.transport == "http" && f.fault == "exit") {
        auto const at = server->port;
        server = nullptr;
        server = std::make_unique<http_faulty>("none", heal, "", at);
    }
    CHECK(recovers(port, 30s));
    CHECK(answered_worked(port, "healthy"));
    CHECK(elsewhere.connections() == 0);
    airlock.signal(SIGTERM);
    CHECK(airlock.wait(30s) == 0);
    if (f.check_log) f.check_log(airlock.stderr_text());

    auto record = failed_record(d.journal_records());
    std::cout << "fault matrix: " << f.transport << " " << f.fault << ": the journal says "
              << (record.empty() ? std::string("effect_done")
                                 : "effect_failed " + json::serialize(json::parse(record).at("body")))
              << "\n"
              << std::flush;
    for (auto const& words : f.journal_text) CHECK_THAT(record, Catch::Contains(words));
}

// What airlock calls the faults it meets, as the client and the journal read them.
std::vector<std::string> const in_doubt{R"("disposition":"in_doubt")", R"("error_kind":"timed_out")"};
std::vector<std::string> const malformed{R"("disposition":"landed")", R"("error_kind":"malformed")"};
std::string const may_or_may_not = "timed_out (the call may or may not have taken effect): faulty: ";

}  // namespace

TEST_CASE("fault matrix, stdio: bytes that are not JSON in place of a reply are skipped, and the call times out") {
    run_fault({"stdio",
               "garbage",
               {may_or_may_not + "deadline: upstream faulty: tools/call: no reply within 6000 ms"},
               in_doubt});
}

TEST_CASE("fault matrix, stdio: a reply longer than max_message_bytes fails its call at once, naming the limit") {
    run_fault({"stdio",
               "oversized",
               {"malformed: faulty: protocol: upstream faulty: the server sent a message of more than 4194304 bytes",
                "in reply to request", "the limit is the upstream's max_message_bytes"},
               malformed});
}

TEST_CASE("fault matrix, stdio: an upstream that never answers a call fails it at its deadline, in doubt") {
    run_fault({"stdio",
               "silence",
               {may_or_may_not + "deadline: upstream faulty: tools/call: no reply within 6000 ms"},
               in_doubt});
}

TEST_CASE("fault matrix, stdio: a reply under an id nobody asked with is not taken for the call's") {
    run_fault({"stdio",
               "wrong_id",
               {may_or_may_not + "deadline: upstream faulty: tools/call: no reply within 6000 ms"},
               in_doubt});
}

TEST_CASE(
    "fault matrix, stdio: an upstream that exits mid-call fails the call at once, and is started again by the next") {
    run_fault(
        {"stdio",
         "exit",
         {may_or_may_not + "no_reply: upstream faulty: the server exited with status 3 after the request was sent"},
         {R"("disposition":"in_doubt")", "no_reply"}});
}

TEST_CASE("fault matrix, stdio: 20,000 notifications before a reply reach the caller, then the reply") {
    run_fault({"stdio", "flood", {"worked"}, {}});
}

TEST_CASE("fault matrix, stdio: 100,000 lines on stderr cost airlock's log about a hundred lines, not one each") {
    auto bounded = [](std::string const& log) {
        std::size_t lines = 0;
        for (auto at = log.find("upstream faulty stderr: "); at != std::string::npos;
             at = log.find("upstream faulty stderr: ", at + 1))
            ++lines;
        std::cout << "fault matrix: stdio stderr_flood: airlock logged " << lines << " of the 100000 stderr lines\n";
        CHECK(lines <= 300);  // 100 every 10 s and the last 20 held back, and the flood takes seconds
        CHECK(lines >= 120);
        CHECK_THAT(
            log, Catch::Contains("upstream faulty: its stderr wrote more than 100 lines within 10 s; further lines are "
                                 "counted, not logged"));
        CHECK_THAT(log,
                   Catch::Contains("lines of its stderr were not logged (at most 100 are, every 10 s); the last 20 "
                                   "follow"));
        // The server's last line, as the last words of one that dies would be.
        CHECK_THAT(log, Catch::Contains("upstream faulty stderr: diagnostic line 999 of a noisy server"));
    };
    run_fault({"stdio", "stderr_flood", {"worked"}, {}, bounded});
}

TEST_CASE("fault matrix, HTTP: a body that is not JSON fails the call at once as not JSON-RPC") {
    run_fault(
        {"http", "garbage", {"malformed: faulty: protocol: the response is not JSON-RPC: Parse error"}, malformed});
}

TEST_CASE("fault matrix, HTTP: a body over 16 MiB fails the call at once, naming the limit") {
    run_fault({"http",
               "oversized",
               {"malformed: faulty: protocol: the response from http://127.0.0.1:", "is larger than 16777216 bytes"},
               malformed});
}

TEST_CASE("fault matrix, HTTP: an upstream that never answers a call fails it at its deadline, in doubt") {
    run_fault({"http",
               "silence",
               {may_or_may_not + "deadline: tools/call got no response from http://127.0.0.1:", "within the deadline"},
               in_doubt});
}

TEST_CASE("fault matrix, HTTP: a reply under another id fails the call at once, naming both ids") {
    run_fault({"http",
               "wrong_id",
               {R"(malformed: faulty: protocol: the response carries id 424242, not "airlock-)"},
               malformed});
}

TEST_CASE(
    "fault matrix, HTTP: an upstream that exits mid-call fails the call at once, and is used again once it is back") {
    run_fault({"http",
               "exit",
               {may_or_may_not + "no_reply: the connection to http://127.0.0.1:", "failed after the request was sent"},
               {R"("disposition":"in_doubt")", "no_reply"}});
}

TEST_CASE("fault matrix, HTTP: 20,000 notifications on an SSE reply reach the caller, then the reply") {
    run_fault({"http", "flood", {"worked"}, {}});
}

TEST_CASE("fault matrix, HTTP: a 500 fails the call at once, in doubt, naming the status") {
    run_fault({"http",
               "http500",
               {may_or_may_not + "http_status: HTTP 500 Internal Server Error from http://127.0.0.1:"},
               in_doubt});
}

TEST_CASE("fault matrix, HTTP: a connection reset mid-call fails the call at once, saying so") {
    run_fault({"http",
               "reset",
               {may_or_may_not + "no_reply: the connection to http://127.0.0.1:", "Connection reset by peer"},
               {R"("disposition":"in_doubt")", "no_reply"}});
}

TEST_CASE("fault matrix, HTTP: an SSE reply dripped a byte at a time fails at the deadline, though bytes keep coming") {
    run_fault({"http",
               "drip",
               {may_or_may_not + "deadline: tools/call got no response from http://127.0.0.1:", "within the deadline"},
               in_doubt});
}

TEST_CASE("fault matrix, HTTP: a reply of another Content-Type fails the call at once, naming it") {
    run_fault({"http",
               "content_type",
               {"malformed: faulty: protocol: the response to tools/call has Content-Type 'text/html', neither "
                "application/json "
                "nor text/event-stream"},
               malformed});
}

TEST_CASE(
    "fault matrix, HTTP: a redirect is not followed, so the address it names, outside egress, is never contacted") {
    run_fault({"http",
               "redirect",
               {may_or_may_not + "http_status: HTTP 307 Temporary Redirect from http://127.0.0.1:"},
               in_doubt});
}
