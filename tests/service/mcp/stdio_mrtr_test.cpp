// Multi round-trip requests (2026-07-28 InputRequiredResult) over `airlock stdio`: the real binary
// on a pair of pipes, fronting the project's conformance fixture as a stdio upstream with
// `prefix: none`, driven as a 2026-07-28 client. An upstream's question reaches the client as an
// input_required result; the retry with the answer and the requestState completes the call.
#include "tests/support/json_lines.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr char const* fixture_tools[] = {
    "test_input_required_result_elicitation", "test_input_required_result_sampling",
    "test_input_required_result_multi_round",  "test_input_required_result_tampered_state",
};

// `airlock stdio` serving principal "public" (granted the fixture's MRTR tools) on pipes; stderr
// goes to a file in the deployment's directory. The process is always stopped: end of input
// first, SIGKILL when it does not exit.
struct stdio_airlock {
    temp_dir dir{"airlock-stdio-mrtr"};
    int to_child = -1;
    int from_child = -1;
    pid_t pid = -1;
    std::optional<int> exit_code;
    std::string pending;

    explicit stdio_airlock(std::string const& server_section = "") {
        std::ofstream m(dir.path() / "public.yaml");
        m << "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: mrtr-client, version: \"1\" }\nspec:\n  tools:\n";
        for (auto const* t : fixture_tools) m << "    - ref: tool://fixture/" << t << "\n      mutates: false\n";
        m << "  budgets: {}\n";
        m.close();
        auto fixture = std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/conformance_server.mjs";
        auto config = dir.path() / "airlock.yaml";
        std::ofstream(config) << "journal: { dir: journal }\n"
                              << server_section << "upstreams:\n  - name: fixture\n    prefix: none\n"
                              << "    stdio: { argv: [\"" << peers::node() << "\", \"" << fixture
                              << "\", --transport, stdio] }\n"
                              << "egress:\n  - process: \"" << peers::node() << "\"\n"
                              << "principals:\n  - name: public\n    anonymous: true\n    manifest: public.yaml\n";

        int in[2], out[2];
        REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
        REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
        auto log = (dir.path() / "stderr.log").string();
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        std::vector<std::string> args{AIRLOCK_BINARY, "stdio", "--config", config.string()};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        ::close(in[0]);
        ::close(out[1]);
        to_child = in[1];
        from_child = out[0];
        REQUIRE(rc == 0);
    }

    ~stdio_airlock() {
        close_input();
        wait(20s);
        if (!exit_code && pid > 0) {
            ::kill(pid, SIGKILL);
            int status = 0;
            ::waitpid(pid, &status, 0);
        }
        if (from_child >= 0) ::close(from_child);
    }

    void close_input() {
        if (to_child >= 0) ::close(to_child);
        to_child = -1;
    }

    // Waits for exit up to `deadline`; the exit code, or nullopt while it still runs.
    std::optional<int> wait(std::chrono::milliseconds deadline) {
        auto until = std::chrono::steady_clock::now() + deadline;
        while (!exit_code && pid > 0) {
            int status = 0;
            auto r = ::waitpid(pid, &status, WNOHANG);
            if (r == pid) {
                exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                break;
            }
            if (std::chrono::steady_clock::now() >= until) break;
            std::this_thread::sleep_for(20ms);
        }
        return exit_code;
    }

    std::string stderr_text() const {
        std::ifstream f(dir.path() / "stderr.log");
        return std::string(std::istreambuf_iterator<char>(f), {});
    }

    void send(std::string const& line) {
        auto text = line + "\n";
        REQUIRE(::write(to_child, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    }

    // The next message airlock writes, or nullopt after the deadline.
    std::optional<json::object> next(std::chrono::milliseconds deadline = 30s) {
        return next_json_line(from_child, pending, deadline);
    }

    // A 2026-07-28 tools/call of `tool` with id `id`; `extra` adds params (inputResponses, requestState).
    json::object call(std::string const& id, std::string const& tool, std::string const& extra = "") {
        send(R"({"jsonrpc":"2.0","id":")" + id + R"(","method":"tools/call","params":{"name":")" + tool +
             R"(","arguments":{},)" + extra +
             R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
             R"("io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"sampling":{}},)"
             R"("io.modelcontextprotocol/clientInfo":{"name":"stdio-mrtr","version":"1"}}}})");
        auto m = next();
        INFO(stderr_text());
        REQUIRE(m.has_value());
        return *m;
    }
};

// The params a retry adds: the answers and the state, as the client echoes it.
std::string retry_params(std::string const& answers, json::value const& state) {
    return R"("inputResponses":)" + answers + R"(,"requestState":)" + json::serialize(state) + ",";
}

std::string text_of(json::object const& reply) {
    INFO(json::serialize(reply));
    REQUIRE(reply.contains("result"));
    auto const& r = reply.at("result");
    REQUIRE(r.at("resultType") == "complete");
    return std::string(r.at("content").at(0).at("text").as_string());
}

json::object const& input_required(json::object const& reply) {
    INFO(json::serialize(reply));
    REQUIRE(reply.contains("result"));
    REQUIRE(reply.at("result").at("resultType") == "input_required");
    return reply.at("result").as_object();
}

}  // namespace

TEST_CASE("airlock stdio relays an upstream's elicitation to a 2026-07-28 client as input_required, and the retry completes the call") {
    stdio_airlock a;
    auto first = a.call("c1", "test_input_required_result_elicitation");
    CHECK(first.at("id") == "c1");
    auto const& ir = input_required(first);
    auto const& requests = ir.at("inputRequests").as_object();
    REQUIRE(requests.size() == 1);
    REQUIRE(requests.contains("user_name"));
    CHECK(requests.at("user_name").at("method") == "elicitation/create");
    CHECK(requests.at("user_name").at("params").at("message") == "What is your name?");
    // The key hint is airlock's business, not the client's.
    CHECK_FALSE(requests.at("user_name").at("params").as_object().contains("_meta"));

    auto done = a.call("c2", "test_input_required_result_elicitation",
                       retry_params(R"({"user_name":{"action":"accept","content":{"name":"Ada"}}})", ir.at("requestState")));
    CHECK(done.at("id") == "c2");
    CHECK(text_of(done) == "Hello, Ada!");

    // The state is spent: its request has ended.
    auto again = a.call("c3", "test_input_required_result_elicitation",
                        retry_params(R"({"user_name":{"action":"accept","content":{"name":"Ada"}}})", ir.at("requestState")));
    CHECK(again.at("error").at("code") == -32602);
    CHECK_THAT(std::string(again.at("error").at("message").as_string()), Catch::Contains("no longer pending"));
}

TEST_CASE("airlock stdio relays an upstream's sampling request to a 2026-07-28 client through input_required") {
    stdio_airlock a;
    auto first = a.call("s1", "test_input_required_result_sampling");
    auto const& ir = input_required(first);
    auto const& q = ir.at("inputRequests").at("capital_question");
    CHECK(q.at("method") == "sampling/createMessage");
    CHECK(q.at("params").at("messages").at(0).at("content").at("text") == "What is the capital of France?");
    auto done = a.call(
        "s2", "test_input_required_result_sampling",
        retry_params(R"({"capital_question":{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m","stopReason":"endTurn"}})",
                     ir.at("requestState")));
    CHECK_THAT(text_of(done), Catch::Contains("Paris"));
}

TEST_CASE("airlock stdio takes a 2026-07-28 call through two rounds of questions") {
    stdio_airlock a;
    auto first = a.call("m1", "test_input_required_result_multi_round");
    auto const& r1 = input_required(first);
    REQUIRE(r1.at("inputRequests").as_object().contains("step1"));
    auto second = a.call("m2", "test_input_required_result_multi_round",
                         retry_params(R"({"step1":{"action":"accept","content":{"name":"Ada"}}})", r1.at("requestState")));
    CHECK(second.at("id") == "m2");
    auto const& r2 = input_required(second);
    auto const& requests = r2.at("inputRequests").as_object();
    REQUIRE(requests.size() == 1);
    REQUIRE(requests.contains("step2"));
    CHECK(r2.at("requestState") != r1.at("requestState"));
    // The first round's state cannot be played again once the second is issued.
    auto stale = a.call("m3", "test_input_required_result_multi_round",
                        retry_params(R"({"step1":{"action":"accept","content":{"name":"Eve"}}})", r1.at("requestState")));
    CHECK(stale.at("error").at("code") == -32602);
    CHECK_THAT(std::string(stale.at("error").at("message").as_string()), Catch::Contains("stale"));
    auto done = a.call("m4", "test_input_required_result_multi_round",
                       retry_params(R"({"step2":{"action":"accept","content":{"color":"green"}}})", r2.at("requestState")));
    CHECK(done.at("id") == "m4");
    CHECK(text_of(done) == "Ada likes green");
}

TEST_CASE("airlock stdio refuses a tampered requestState and a wrong-shaped answer, and the genuine retry still completes") {
    stdio_airlock a;
    auto first = a.call("t1", "test_input_required_result_tampered_state");
    auto const& ir = input_required(first);
    std::string state(ir.at("requestState").as_string());
    std::string answer = R"({"confirm":{"action":"accept","content":{"ok":true}}})";

    auto tampered = state;
    tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'a' ? 'b' : 'a';
    auto refused = a.call("t2", "test_input_required_result_tampered_state", retry_params(answer, json::value(tampered)));
    CHECK(refused.at("id") == "t2");
    CHECK(refused.at("error").at("code") == -32602);
    CHECK_THAT(std::string(refused.at("error").at("message").as_string()), Catch::Contains("params.requestState"));

    // The state belongs to the request it was issued for: another tool's call cannot use it.
    auto elsewhere = a.call("t3", "test_input_required_result_elicitation", retry_params(answer, ir.at("requestState")));
    CHECK(elsewhere.at("error").at("code") == -32602);

    auto wrong = a.call("t4", "test_input_required_result_tampered_state",
                        retry_params(R"({"confirm":{"action":"maybe"}})", ir.at("requestState")));
    CHECK(wrong.at("error").at("code") == -32602);
    CHECK_THAT(std::string(wrong.at("error").at("message").as_string()), Catch::Contains("params.inputResponses.confirm.action"));

    auto not_object = a.call("t5", "test_input_required_result_tampered_state",
                             R"("inputResponses":{"confirm":true},"requestState":)" + json::serialize(ir.at("requestState")) + ",");
    CHECK(not_object.at("error").at("code") == -32602);
    CHECK_THAT(std::string(not_object.at("error").at("message").as_string()), Catch::Contains("params.inputResponses.confirm"));

    auto done = a.call("t6", "test_input_required_result_tampered_state", retry_params(answer, ir.at("requestState")));
    CHECK(text_of(done) == "state-ok: action=accept, ok=true");
}

TEST_CASE("a requestState lapses after server.input_request_ttl over airlock stdio") {
    stdio_airlock a("server: { input_request_ttl: 1s }\n");
    auto first = a.call("e1", "test_input_required_result_elicitation");
    auto const& ir = input_required(first);
    // A whole second past the state's expiry, whatever the rounding.
    std::this_thread::sleep_for(2500ms);
    auto late = a.call("e2", "test_input_required_result_elicitation",
                       retry_params(R"({"user_name":{"action":"accept","content":{"name":"Ada"}}})", ir.at("requestState")));
    CHECK(late.at("error").at("code") == -32602);
    CHECK_THAT(std::string(late.at("error").at("message").as_string()), Catch::Contains("expired"));
    // The parked call was cancelled when its state lapsed.
    auto until = std::chrono::steady_clock::now() + 20s;
    while (a.stderr_text().find("no retry came with the answers in time") == std::string::npos &&
           std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(50ms);
    CHECK_THAT(a.stderr_text(), Catch::Contains("no retry came with the answers in time"));
}

TEST_CASE("end of input ends airlock stdio while a 2026-07-28 call waits for its retry") {
    stdio_airlock a;
    auto first = a.call("p1", "test_input_required_result_elicitation");
    input_required(first);
    a.close_input();
    // The parked call is cancelled with the session; its requestState's lifetime (5 minutes) does
    // not hold the process.
    auto rc = a.wait(30s);
    INFO(a.stderr_text());
    REQUIRE(rc.has_value());
    CHECK(*rc == 0);
}
