#pragma once
// A deployment for the sidecar tests (signals, reload, reverse proxy): airlock in front of the
// stdio server tests/fixtures/sidecar/hold_server.mjs, one principal "alice" with a token file and
// a manifest granting some of its tools, and the SDK client tests/fixtures/sidecar/sidecar_client.mjs.

#include "tests/support/child_process.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

#include <sys/stat.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace airlock::testing {

using namespace std::chrono_literals;

struct sidecar_deployment {
    static constexpr char const* token = "alice-sidecar-0123456789abcdef";

    temp_dir dir{"airlock-sidecar"};
    std::filesystem::path config = dir.path() / "airlock.yaml";
    std::filesystem::path journal = dir.path() / "journal";

    // `server` is the YAML of the server section's fields, each line indented by four spaces.
    explicit sidecar_deployment(std::vector<std::string> const& tools = {"slow", "hold", "release"},
                                std::string const& server = "") {
        write_token(token);
        grant(tools);
        write_config(server);
    }

    void write_token(std::string const& t) const {
        std::ofstream(dir.path() / "alice.token") << t << "\n";
        ::chmod((dir.path() / "alice.token").c_str(), 0600);
    }

    // Rewrites alice's manifest to grant exactly these tools of the hold server.
    void grant(std::vector<std::string> const& tools) const {
        std::ofstream m(dir.path() / "alice.yaml");
        m << "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: alice-desk, version: \"1\" }\nspec:\n  tools:\n";
        for (auto const& t : tools) m << "    - ref: tool://hold/" << t << "\n      mutates: false\n";
        m << "  budgets: {}\n";
    }

    // The drain grace is 60 s unless `server` sets it.
    void write_config(std::string const& server, std::string const& extra = "") const {
        bool const own_grace = server.find("drain_grace:") == std::string::npos;
        std::ofstream(config) << "server:\n" << (own_grace ? "    drain_grace: 60s\n" : "")
                              << server << "journal: { dir: journal }\n"
                              << "upstreams:\n  - name: hold\n    stdio: { argv: [\"" << peers::node() << "\", \""
                              << hold_server() << "\"] }\n"
                              << "egress:\n  - process: \"" << peers::node() << "\"\n  - local\n"
                              << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n"
                              << extra;
    }

    // The agent "courier" (a scripted model: it calls hold__slow with 2 steps, then answers), for
    // REST runs; pass the returned YAML as write_config's `extra`.
    std::string courier_agent() const {
        std::ofstream(dir.path() / "courier.yaml")
            << "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: courier, version: \"1\" }\nspec:\n"
            << "  models: { privileged: { provider: scripted, model: courier-1 } }\n"
            << "  capabilities: { provides: [parcel.deliver] }\n"
            << "  tools:\n    - { ref: tool://hold/slow, mutates: false, description: \"Progress, then done.\" }\n"
            << "  execution: { kind: tool-calling, max_turns: 3 }\n  budgets: {}\n";
        std::ofstream(dir.path() / "courier.script.yaml")
            << "model: courier-1\nturns:\n  - call: { tool: hold__slow, arguments: { steps: 2 }, id: c1 }\n"
            << "  - say: \"delivered\"\n";
        return "agents:\n  - { manifest: courier.yaml, script: courier.script.yaml }\n";
    }

    static std::string hold_server() { return std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/sidecar/hold_server.mjs"; }
    static std::string client_script() {
        return std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/sidecar/sidecar_client.mjs";
    }

    // The SDK client in one of its modes (sidecar_client.mjs), against `url` with alice's token.
    static std::unique_ptr<child_process> client(std::string const& mode, std::string const& url,
                                                 std::vector<std::string> extra = {}) {
        std::vector<std::string> argv{peers::node(), client_script(), mode, url, token};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return std::make_unique<child_process>(argv);
    }

    command_result verify_journal() const {
        return run_command({AIRLOCK_BINARY, "journal", "verify", "--all", "--journal", journal.string()});
    }

    // The journal verifies, and `airlock journal show` of the first run it names.
    std::string only_run_shown() const {
        auto verified = verify_journal();
        INFO(verified.out << verified.err);
        REQUIRE(verified.exit_code == 0);
        std::smatch m;
        REQUIRE(std::regex_search(verified.out, m, std::regex(R"(([0-9A-Z]{26}): ok)")));
        auto shown = run_command({AIRLOCK_BINARY, "journal", "show", m[1].str(), "--journal", journal.string()});
        INFO(shown.err);
        REQUIRE(shown.exit_code == 0);
        return shown.out;
    }

    // How many records of `kind` (effect_done, ...) the one run's `journal show` lists.
    int records_of(std::string_view kind) const {
        auto shown = only_run_shown();
        int n = 0;
        for (auto at = shown.find("  " + std::string(kind)); at != std::string::npos;
             at = shown.find("  " + std::string(kind), at + 1))
            ++n;
        return n;
    }

    // Its one run holds a call's outcome (`outcome_kind`), and after it the run's seal.
    void check_outcome_then_seal(std::string_view outcome_kind) const {
        auto shown = only_run_shown();
        INFO(shown);
        auto outcome = shown.find(outcome_kind), sealed = shown.find("run_sealed");
        CHECK(outcome != std::string::npos);
        REQUIRE(sealed != std::string::npos);
        CHECK(outcome < sealed);
    }
};

// A REST run as alice, started with `body` and waited for (POST /v1/runs?wait=60), then its journal
// (GET /v1/runs/{id}/journal), over HTTP/1.0 so no answer comes chunked (this plain client does not
// decode that). `headers` are more header lines, each ending in CRLF.
struct rest_run {
    boost::json::object run;  // the answer to the POST
    std::string journal;      // JSON lines
};
inline rest_run run_over_rest(std::uint16_t port, std::string const& host, std::string const& body,
                              std::string const& headers = "") {
    std::string auth = "Authorization: Bearer " + std::string(sidecar_deployment::token) + "\r\n";
    auto r = raw_http(port,
                      "POST /v1/runs?wait=60 HTTP/1.0\r\nHost: " + host + "\r\n" + auth + headers +
                          "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                          body,
                      std::chrono::seconds(90));
    INFO(r.head << r.body);
    REQUIRE(r.status == 200);
    rest_run out{boost::json::parse(r.body).as_object(), ""};
    std::string id(out.run.at("run_id").as_string());
    auto j = raw_http(port, "GET /v1/runs/" + id + "/journal HTTP/1.0\r\nHost: " + host + "\r\n" + auth + "\r\n");
    INFO(j.head << j.body);
    REQUIRE(j.status == 200);
    out.journal = j.body;
    return out;
}

// A 2025-11-25 POST to /mcp as alice, in the session `session` (none when empty), asking for
// Connection: close, so that the server closes the connection once the reply is whole.
inline std::string legacy_request(std::uint16_t port, std::string const& session, std::string const& body) {
    std::string head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nAuthorization: Bearer " +
                       sidecar_deployment::token +
                       "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                       "MCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\n";
    if (!session.empty()) head += "Mcp-Session-Id: " + session + "\r\n";
    return head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Opens a 2025-11-25 session as alice (initialize, then notifications/initialized) and returns its id.
inline std::string open_legacy_session(std::uint16_t port) {
    auto init = raw_http(port, legacy_request(port, "", R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{)"
                                                        R"("protocolVersion":"2025-11-25","capabilities":{},)"
                                                        R"("clientInfo":{"name":"t","version":"1"}}})"));
    INFO(init.head << init.body);
    REQUIRE(init.status == 200);
    auto at = init.head.find("Mcp-Session-Id: ");
    REQUIRE(at != std::string::npos);
    auto session = init.head.substr(at + 16, init.head.find("\r\n", at) - at - 16);
    auto ack = raw_http(port, legacy_request(port, session, R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
    REQUIRE(ack.status == 202);
    return session;
}

// The TCP port `airlock serve` reports on its listening line.
inline std::uint16_t airlock_port(child_process& p) {
    auto line = p.wait_for_stderr_line("listening on http://", 30s);
    REQUIRE(line.has_value());
    std::smatch m;
    REQUIRE(std::regex_search(*line, m, std::regex(R"(127\.0\.0\.1:(\d+))")));
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}

}  // namespace airlock::testing
