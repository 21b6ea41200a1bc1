// No configured secret leaves airlock: an upstream that echoes every value it was given (in
// results, errors, notifications, stderr and garbage on stdout) is called through `airlock serve`
// and `airlock stdio`, and every output of the run is searched for every secret the
// configuration holds, in every spelling JSON gives it.
#include "store/lmdb_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/peers.hpp"

#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {

std::string const alice_token = "alice-secrets-0123456789abcdef";
std::string const env_secret = "env-secret-0a1b2c3d4e5f6789";
// Quote, backslash, slash, '&' and letters beyond ASCII: JSON writers spell it in several ways.
std::string const file_secret = "file-se\"cr\\et/\xc3\xa4&\xc3\xb6-0123456789";
std::string const from_secret = "from-secret-9f8e7d6c5b4a3210";
std::string const metrics_token = "metrics-secrets-5555aaaa6666bbbb";
std::string const openai_key = "sk-proj-secretsTest9876543210abcdef";
std::string const bearer = "upstream-bearer-77778888ccccdddd";
std::string const inline_header = "inline-header-value-1234";

std::vector<std::string> const all_secrets{alice_token, env_secret,  file_secret, from_secret,
                                           metrics_token, openai_key, bearer,      inline_header};

std::vector<std::string> const secret_env{"AIRLOCK_TEST_ENV_SECRET=" + env_secret, "AIRLOCK_TEST_FROM_SECRET=" + from_secret,
                                          "AIRLOCK_TEST_METRICS_TOKEN=" + metrics_token, "OPENAI_API_KEY=" + openai_key,
                                          "AIRLOCK_TEST_BEARER=" + bearer};

std::string json_escaped(std::string const& s) {
    auto quoted = boost::json::serialize(boost::json::value(s));
    return quoted.substr(1, quoted.size() - 2);
}

// As Python's json.dumps writes a string: beyond ASCII as \uXXXX (all of ours are in the BMP).
std::string ascii_escaped(std::string const& s) {
    std::string out;
    auto e = json_escaped(s);
    for (std::size_t i = 0; i < e.size();) {
        auto b = static_cast<unsigned char>(e[i]);
        if (b < 0x80) {
            out += e[i++];
            continue;
        }
        unsigned cp = b >= 0xe0 ? ((b & 0x0f) << 12) | ((e[i + 1] & 0x3f) << 6) | (e[i + 2] & 0x3f)
                                : ((b & 0x1f) << 6) | (e[i + 1] & 0x3f);
        i += b >= 0xe0 ? 3 : 2;
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        out += buf;
    }
    return out;
}

// Every way the secret could be written in an output: as is, inside a JSON string, inside a JSON
// string that is inside a JSON string (a tool's JSON text in a JSON-RPC reply), ASCII-escaped.
std::vector<std::string> spellings(std::string const& s) {
    return {s, json_escaped(s), json_escaped(json_escaped(s)), ascii_escaped(s), json_escaped(ascii_escaped(s))};
}

void check_no_secret_in(std::string const& what, std::string const& text) {
    for (auto const& s : all_secrets) {
        for (auto const& spelling : spellings(s)) {
            INFO(what << ": secret " << s.substr(0, 8) << "… as " << spelling.substr(0, 12) << "…");
            CHECK(text.find(spelling) == std::string::npos);
        }
    }
}

// A configuration whose every kind of secret (token, metrics token, provider key, header values
// inline and from the environment, env values from a variable, a file and env_from) is also in
// the leaky upstream's environment.
struct leaky_deployment {
    gateway_deployment base{alice_token};
    std::filesystem::path const& config = base.config;

    leaky_deployment() {
        auto dir = base.dir.path();
        base.write_secret("upstream.key", file_secret + "\n");
        std::ofstream(dir / "alice.yaml") << "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: alice-desk, version: \"1\" }\n"
                                          << "spec:\n  tools:\n    - ref: tool://leaky/leak\n      mutates: false\n"
                                          << "    - ref: tool://leaky/fail\n      mutates: false\n  budgets: {}\n";
        std::ofstream(config) << "journal: { dir: journal }\n"
                              << "upstreams:\n  - name: leaky\n    stdio:\n      argv: [\"" << peers::node() << "\", \""
                              << AIRLOCK_SOURCE_DIR << "/tests/fixtures/gateway/leaky_server.mjs\"]\n"
                              << "      env:\n        LEAK_ENV: { env: AIRLOCK_TEST_ENV_SECRET }\n"
                              << "        LEAK_FILE: { file: upstream.key }\n"
                              << "        LEAK_TOKEN: \"" << alice_token << "\"\n"
                              << "        LEAK_INLINE_HEADER: \"" << inline_header << "\"\n"
                              << "      env_from:\n        LEAK_FROM: AIRLOCK_TEST_FROM_SECRET\n"
                              << "        LEAK_METRICS: AIRLOCK_TEST_METRICS_TOKEN\n        LEAK_OPENAI: OPENAI_API_KEY\n"
                              << "        LEAK_BEARER: AIRLOCK_TEST_BEARER\n"
                              << "  - name: remote\n    url: http://127.0.0.1:9/mcp\n    optional: true\n"
                              << "    headers:\n      Authorization: { env: AIRLOCK_TEST_BEARER, prefix: \"Bearer \" }\n"
                              << "      X-Inline: \"" << inline_header << "\"\n"
                              << "egress:\n  - process: \"" << peers::node() << "\"\n  - http://127.0.0.1:9\n"
                              << "principals:\n  - name: alice\n    token_file: alice.token\n    manifest: alice.yaml\n"
                              << "metrics:\n  token_env: AIRLOCK_TEST_METRICS_TOKEN\n"
                              << "providers:\n  gpt: { kind: openai, api_key: { env: OPENAI_API_KEY }, model: gpt-4o-mini }\n";
    }

    std::filesystem::path journal() const { return base.dir.path() / "journal"; }
};

std::string call_params(std::string const& tool, std::string const& arguments) {
    return R"("name":")" + tool + R"(","arguments":)" + arguments + ",";
}

// The stdio session: initialize, then the listing and the three calls (the first with a progress
// token), each answered before input ends.
std::string stdio_requests() {
    std::string out =
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"leak-test","version":"1"}}})"
        "\n"
        R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
        "\n"
        R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"
        "\n";
    out += R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"leaky__leak","arguments":{},"_meta":{"progressToken":"p"}}})"
           "\n";
    out += R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"leaky__leak","arguments":{"isError":true}}})"
           "\n";
    out += R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"leaky__fail","arguments":{}}})"
           "\n";
    return out;
}

bool answered(child_process& p, std::vector<std::string> const& ids) {
    for (int i = 0; i < 600; ++i) {
        auto out = p.stdout_text();
        if (std::all_of(ids.begin(), ids.end(), [&](auto const& id) { return out.find("\"id\":" + id + ",") != std::string::npos; }))
            return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

}  // namespace

TEST_CASE("no configured secret an upstream echoes reaches a client, the log or the journal, over HTTP and stdio") {
    leaky_deployment d;

    // Over Streamable HTTP, logging at trace level.
    child_process serve({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0", "--log-level",
                         "trace"},
                        secret_env);
    auto port = wait_listening(serve);
    std::string replies;
    auto list = modern_post(port, alice_token, "tools/list", "", "");
    INFO(list.body);
    REQUIRE(list.status == 200);
    // The upstream really answered: its tools are listed, their descriptions redacted.
    REQUIRE_THAT(list.body, Catch::Contains("leaky__leak") && Catch::Contains("[redacted]"));
    replies += list.head + list.body;
    for (auto const& [tool, arguments] : std::vector<std::pair<std::string, std::string>>{
             {"leaky__leak", "{}"}, {"leaky__leak", R"({"isError":true})"}, {"leaky__fail", "{}"}}) {
        auto r = modern_post(port, alice_token, "tools/call", tool, call_params(tool, arguments));
        INFO(r.body);
        CHECK(r.status == 200);
        replies += r.head + r.body;
    }
    // Each result came back, with its secrets replaced (the text as written, as JSON and in
    // structured content), the isError flag kept.
    CHECK_THAT(replies, Catch::Contains("values: [redacted] [redacted]"));
    CHECK_THAT(replies, Catch::Contains(R"("isError":true)"));
    CHECK_THAT(replies, Catch::Contains("structuredContent"));
    CHECK_THAT(replies, Catch::Contains("the tool failed holding [redacted]"));
    serve.signal(SIGTERM);
    CHECK(serve.wait(30s) == 0);

    // Over stdio, on the same journal.
    child_process stdio({AIRLOCK_BINARY, "stdio", "--config", d.config.string(), "--log-level", "trace"}, secret_env,
                        child_stdin::pipe);
    REQUIRE(stdio.write_stdin(stdio_requests()));
    INFO(stdio.stdout_text());
    CHECK(answered(stdio, {"2", "3", "4", "5"}));
    stdio.close_stdin();
    CHECK(stdio.wait(30s) == 0);
    auto const& stdio_out = stdio.stdout_text();
    CHECK_THAT(stdio_out, Catch::Contains("notifications/progress") && Catch::Contains("at [redacted]"));
    CHECK_THAT(stdio_out, Catch::Contains("values: [redacted]"));

    // The journal: it verifies (secrets were hidden before hashing), and neither its file nor an
    // export holds a secret.
    auto verify = run_command({AIRLOCK_BINARY, "journal", "verify", "--all", "--journal", d.journal().string()});
    INFO(verify.out << verify.err);
    CHECK(verify.exit_code == 0);
    std::string exported;
    {
        auto store = airlock::store::lmdb_store::open({.directory = d.journal()});
        REQUIRE(store.has_value());
        auto runs = (*store)->runs({});
        REQUIRE(runs.has_value());
        REQUIRE(runs->runs.size() >= 2);
        for (auto const& run : runs->runs) {
            auto e = run_command({AIRLOCK_BINARY, "journal", "export", run.run_id, "--journal", d.journal().string()});
            CHECK(e.exit_code == 0);
            exported += e.out;
        }
    }
    CHECK_THAT(exported, Catch::Contains("effect_done") && Catch::Contains("effect_failed") &&
                             Catch::Contains("[redacted]"));

    check_no_secret_in("HTTP replies", replies);
    check_no_secret_in("stdio replies", stdio_out);
    check_no_secret_in("airlock serve log", serve.stderr_text());
    check_no_secret_in("airlock stdio log", stdio.stderr_text());
    check_no_secret_in("journal export", exported);
    check_no_secret_in("journal verify", verify.out + verify.err);
    check_no_secret_in("LMDB file", file_text(d.journal() / "data.mdb"));

    // The upstream's stderr was relayed, and so was the line cut at the 16 KiB cap and the stdout
    // garbage cut at the excerpt: a cut shows no piece of a secret either.
    auto const logs = serve.stderr_text() + stdio.stderr_text();
    CHECK_THAT(logs, Catch::Contains("stderr says [redacted]"));
    CHECK_THAT(logs, Catch::Contains("[truncated]"));
    CHECK_THAT(logs, Catch::Contains("not a JSON-RPC message"));
    for (auto const& s : all_secrets) {
        for (auto const& spelling : spellings(s.substr(0, 12))) {
            INFO("the first 12 bytes of " << s.substr(0, 8) << "… as " << spelling);
            CHECK(logs.find(spelling) == std::string::npos);
        }
    }
}
