#include "service/config/config.hpp"
#include "service/app/server_options.hpp"

#include "service/http/http_server.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

using namespace airlock;
using namespace airlock::service;
using airlock::testing::temp_dir;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view grants_yaml = R"yaml(apiVersion: airlock/v1
kind: Agent
metadata: { name: alice-grants, version: "1" }
spec:
  tools:
    - ref: tool://ledger/read
      mutates: false
    - ref: tool://ledger/post
  budgets: {}
)yaml";

constexpr std::string_view alice_token = "alice-0123456789abcdef-SECRET";
constexpr std::string_view bob_token = "bob-fedcba9876543210-SECRET";

// A directory holding one configuration file and the files it names.
struct workspace {
    temp_dir dir{"airlock-config-test"};

    fs::path write(std::string const& name, std::string_view text) const {
        auto p = dir.path() / name;
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << text;
        fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
        return p;
    }
    fs::path config(std::string_view text) const { return write("airlock.yaml", text); }
    // The usual supporting files: a grants manifest and two token files.
    void standard_files() const {
        write("grants/alice.yaml", grants_yaml);
        write("secrets/alice.token", std::string(alice_token) + "\n");
        write("secrets/bob.token", std::string(bob_token) + "\n");
    }
};

env_lookup test_env(std::map<std::string, std::string> extra = {}) {
    if (char const* path = std::getenv("PATH")) extra.emplace("PATH", path);
    return environment_from(std::move(extra));
}

// The first problem's message, or "" when the file loads.
std::string first_problem(fs::path const& file, env_lookup const& env = test_env()) {
    auto c = load_config(file, env);
    return c ? std::string() : c.error().message;
}

std::string first_code(fs::path const& file, env_lookup const& env = test_env()) {
    auto c = load_config(file, env);
    return c ? std::string() : c.error().code;
}

std::string all_messages(std::vector<core::error> const& problems) {
    std::string out;
    for (auto const& e : problems) out += e.code + ": " + e.message + "\n";
    return out;
}

// A configuration whose server.sessions mapping is `entries` (one per line, as they sit under it).
core::result<config> with_sessions(workspace const& w, std::string const& entries) {
    return load_config(w.config("server:\n  sessions:\n    " + entries + "\n"), test_env());
}

// Its first problem as "code: message"; "" when it loads.
std::string sessions_problem(workspace const& w, std::string const& entries) {
    auto c = with_sessions(w, entries);
    return c ? std::string() : c.error().code + ": " + c.error().message;
}

constexpr std::string_view one_upstream = R"yaml(
upstreams:
  - name: ledger
    stdio: { argv: [node, ledger.js] }
)yaml";

}  // namespace

// ── defaults ─────────────────────────────────────────────────────────────────────────────────

TEST_CASE("an empty mapping is a valid configuration with safe defaults") {
    workspace w;
    auto c = load_config(w.config("{}\n"), test_env());
    REQUIRE(c);
    CHECK(c->server.host == "127.0.0.1");
    CHECK(c->server.port == 8787);
    CHECK_FALSE(c->server.unix_socket);
    CHECK_FALSE(c->server.tls);
    CHECK(c->server.header_limit == 16 * 1024);
    CHECK(c->server.body_limit == 4 * 1024 * 1024);
    CHECK(c->upstreams.empty());
    CHECK(c->principals.empty());
    CHECK(c->egress.entries().empty());
    CHECK_FALSE(c->signing);
    CHECK(c->journal.directory == w.dir.path() / "var" / "journal");
    CHECK(c->journal.mode == store::durability::durable);
    CHECK(c->journal.map_size == std::size_t{1} << 30);
    CHECK(c->logging.level == log_level::info);
    CHECK(c->logging.format == log_format::json);
    CHECK(c->warnings.empty());
}

TEST_CASE("an empty file means the same as an empty mapping") {
    workspace w;
    auto c = load_config(w.config(""), test_env());
    REQUIRE(c);
    CHECK(c->server.port == 8787);
    CHECK(c->journal.directory == w.dir.path() / "var" / "journal");
}

TEST_CASE("a section with every entry commented out means its defaults") {
    workspace w;
    auto c = load_config(w.config("server:\nupstreams:\n  # - name: ledger\negress:\nprincipals:\n"), test_env());
    REQUIRE(c);
    CHECK(c->server.port == 8787);
    CHECK(c->upstreams.empty());
}

TEST_CASE("the example configuration validates") {
    fs::path example = fs::path(AIRLOCK_SOURCE_DIR) / "examples" / "airlock.yaml";
    auto problems = config_problems(example, test_env());
    INFO(all_messages(problems));
    REQUIRE(problems.empty());
    auto c = load_config(example, test_env());
    REQUIRE(c);
    CHECK(c->server.port == 8080);
    REQUIRE(c->upstreams.size() == 2);
    CHECK(c->upstreams[0].name == "everything");
    CHECK(c->upstreams[1].name == "ledger");
    // The example's upstreams are reachable: their argv[0] is in egress, resolved the same way.
    CHECK(c->egress.permits(c->upstreams[0].destination));
    CHECK(c->egress.permits(c->upstreams[1].destination));
    REQUIRE(c->agents.size() == 1);
    CHECK(c->agents[0].name == "teller");
    CHECK(c->agents[0].scripted.has_value());
    REQUIRE(c->principals.size() == 1);
    CHECK(c->principals[0].manifest.name == "demo-desk");
    CHECK(c->journal.directory == (fs::path(AIRLOCK_SOURCE_DIR) / "var" / "journal").lexically_normal());
}

TEST_CASE("a configuration that is not a mapping is refused") {
    workspace w;
    CHECK(first_code(w.config("- server\n")) == "wrong_type");
}

// yaml-cpp 0.7's LoadAll never returns on these texts (it collects empty documents until memory
// runs out): airlock used to hang at start on such a file. Each is now refused at once.
TEST_CASE("a configuration yaml-cpp reads as endless empty documents is refused, not hung on") {
    workspace w;
    for (auto text : {",", ", a", "\"a\",", "# a comment\n  ,    mutates: false\n", "server: {}\n---\n,"}) {
        INFO(text);
        auto msg = first_problem(w.config(text));
        CHECK(first_code(w.config(text)) == "invalid_yaml");
        CHECK_THAT(msg, Catch::Contains("no value at all") || Catch::Contains("one YAML document"));
    }
    CHECK(first_problem(w.config("# only a comment\n---\n")).empty());
}

TEST_CASE("a YAML syntax error names the line") {
    workspace w;
    auto msg = first_problem(w.config("server:\n  listen: [127.0.0.1\n"));
    CHECK_THAT(msg, Catch::Contains("line "));
}

TEST_CASE("a missing configuration file is refused naming the file") {
    workspace w;
    auto missing = w.dir.path() / "nope.yaml";
    CHECK(first_code(missing) == "file_missing");
    CHECK_THAT(first_problem(missing), Catch::Contains("nope.yaml"));
}

// ── structural refusals ──────────────────────────────────────────────────────────────────────

TEST_CASE("an unknown key is refused with its full path") {
    workspace w;
    auto file = w.config(R"yaml(
upstreams:
  - name: ledger
    stdio: { argv: [node, ledger.js] }
  - name: docs
    stdio:
      agrv: [node, docs.js]
)yaml");
    CHECK(first_code(file) == "unknown_key");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[1].stdio.agrv"));
}

TEST_CASE("an unknown top-level section is refused by name") {
    workspace w;
    auto msg = first_problem(w.config("sever:\n  listen: 127.0.0.1:1\n"));
    CHECK_THAT(msg, Catch::StartsWith("sever is not a known field"));
}

TEST_CASE("a key written twice is refused") {
    workspace w;
    auto file = w.config("logging:\n  level: info\n  level: debug\n");
    CHECK(first_code(file) == "duplicate_key");
    CHECK_THAT(first_problem(file), Catch::Contains("logging.level"));
}

TEST_CASE("a value of the wrong type is refused naming its path") {
    workspace w;
    auto file = w.config("server:\n  max_connections: many\n");
    CHECK(first_code(file) == "wrong_type");
    CHECK_THAT(first_problem(file), Catch::Contains("server.max_connections"));
}

TEST_CASE("a negative count is refused as out of range, naming the field and the values that fit") {
    workspace w;
    auto file = w.config("server:\n  max_connections: -1\n");
    CHECK(first_code(file) == "invalid_value");
    CHECK_THAT(first_problem(file), Catch::Contains("server.max_connections is -1; it must be between 1 and"));
    CHECK_THAT(first_problem(file), !Catch::Contains("integer"));
}

TEST_CASE("a YAML 1.1 boolean word is not a boolean") {
    workspace w;
    auto file = w.config(std::string(one_upstream) + "    optional: yes\n");
    CHECK(first_code(file) == "wrong_type");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0].optional"));
}

TEST_CASE("every problem is listed, not only the first") {
    workspace w;
    auto problems = config_problems(w.config("server:\n  threads: 0\n  read_timeout: soon\nlogging:\n  level: loud\n"),
                                    test_env());
    CHECK(problems.size() == 3);
}

// ── durations and sizes ──────────────────────────────────────────────────────────────────────

TEST_CASE("durations are whole numbers with ms, s, m or h") {
    using namespace std::chrono_literals;
    CHECK(parse_duration("250ms") == 250ms);
    CHECK(parse_duration("30s") == 30s);
    CHECK(parse_duration("5m") == 5min);
    CHECK(parse_duration("1h") == 1h);
    CHECK_FALSE(parse_duration("30"));
    CHECK_FALSE(parse_duration("1.5s"));
    CHECK_FALSE(parse_duration("-1s"));
    CHECK_FALSE(parse_duration("5 minutes"));
}

TEST_CASE("sizes take binary and decimal units") {
    CHECK(parse_size("4096") == 4096u);
    CHECK(parse_size("64KiB") == 64u * 1024);
    CHECK(parse_size("4MiB") == 4u * 1024 * 1024);
    CHECK(parse_size("1 GiB") == std::size_t{1} << 30);
    CHECK(parse_size("10MB") == 10'000'000u);
    CHECK_FALSE(parse_size("4mb"));
    CHECK_FALSE(parse_size("lots"));
    CHECK_FALSE(parse_size("99999999999TiB"));
}

TEST_CASE("a duration without a unit is refused with a hint") {
    workspace w;
    auto file = w.config("server:\n  read_timeout: 30\n");
    CHECK(first_code(file) == "invalid_duration");
    CHECK_THAT(first_problem(file), Catch::Contains("server.read_timeout") && Catch::Contains("\"30s\""));
}

TEST_CASE("a size that is not a size is refused") {
    workspace w;
    auto file = w.config("journal:\n  map_size: one gigabyte\n");
    CHECK(first_code(file) == "invalid_size");
    CHECK_THAT(first_problem(file), Catch::Contains("journal.map_size"));
}

TEST_CASE("journal settings map onto the LMDB store's options") {
    workspace w;
    auto c = load_config(w.config("journal:\n  dir: /tmp/j\n  map_size: 64MiB\n  durability: fast\n"
                                  "  sync_interval: 50ms\n"),
                         test_env());
    REQUIRE(c);
    CHECK(c->journal.directory == "/tmp/j");
    CHECK(c->journal.map_size == 64u << 20);
    CHECK(c->journal.mode == store::durability::fast);
    CHECK(c->journal.sync_interval == std::chrono::milliseconds(50));
}

TEST_CASE("journal.retention is an age in days, hours or less, at least a second; absent, runs are kept") {
    workspace w;
    auto kept = load_config(w.config("journal:\n  dir: /tmp/j\n"), test_env());
    REQUIRE(kept);
    CHECK_FALSE(kept->journal_retention.has_value());
    auto month = load_config(w.config("journal:\n  retention: 30d\n"), test_env());
    REQUIRE(month);
    CHECK(month->journal_retention == std::chrono::hours(24 * 30));
    auto bare = w.config("journal:\n  retention: 30\n");
    CHECK(first_code(bare) == "invalid_duration");
    CHECK_THAT(first_problem(bare), Catch::Contains("journal.retention"));
    auto tiny = w.config("journal:\n  retention: 500ms\n");
    CHECK_THAT(first_problem(tiny), Catch::Contains("journal.retention is 500ms; it must be at least 1s"));
}

// ── server ───────────────────────────────────────────────────────────────────────────────────

TEST_CASE("server settings are read and map onto the HTTP server's options") {
    workspace w;
    auto c = load_config(w.config("server:\n  listen: '[::1]:9000'\n  header_limit: 32KiB\n  idle_timeout: 5s\n"
                                  "  max_connections: 10\n  trusted_proxies: [127.0.0.1, '::1']\n"),
                         test_env());
    REQUIRE(c);
    auto o = to_http_server_options(c->server);
    CHECK(o.host == "::1");
    CHECK(o.port == 9000);
    CHECK(o.header_limit == 32 * 1024);
    CHECK(o.idle_timeout == std::chrono::seconds(5));
    CHECK(o.max_connections == 10);
    CHECK(c->server.trusted_proxies == std::vector<std::string>{"127.0.0.1", "::1"});
}

TEST_CASE("server.max_connections_per_client is a quarter of max_connections unless set, and not above it") {
    workspace w;
    auto defaults = load_config(w.config("server:\n  listen: 127.0.0.1:0\n"), test_env());
    REQUIRE(defaults);
    CHECK(defaults->server.max_connections_per_client == 256);
    CHECK(to_http_server_options(defaults->server).max_connections_per_client == 256);
    auto scaled = load_config(w.config("server:\n  max_connections: 100\n"), test_env());
    REQUIRE(scaled);
    CHECK(scaled->server.max_connections_per_client == 25);
    auto tiny = load_config(w.config("server:\n  max_connections: 2\n"), test_env());
    REQUIRE(tiny);
    CHECK(tiny->server.max_connections_per_client == 1);
    auto set = load_config(w.config("server:\n  max_connections: 100\n  max_connections_per_client: 100\n"), test_env());
    REQUIRE(set);
    CHECK(to_http_server_options(set->server).max_connections_per_client == 100);
    auto above = w.config("server:\n  max_connections: 100\n  max_connections_per_client: 101\n");
    CHECK(first_code(above) == "invalid_value");
    CHECK_THAT(first_problem(above), Catch::Contains("server.max_connections_per_client is 101; it must not exceed "
                                                     "server.max_connections (100)"));
    CHECK(first_code(w.config("server:\n  max_connections_per_client: 0\n")) == "invalid_value");
}

TEST_CASE("a listen address without a port is refused") {
    workspace w;
    auto file = w.config("server:\n  listen: 127.0.0.1\n");
    CHECK(first_code(file) == "invalid_value");
    CHECK_THAT(first_problem(file), Catch::Contains("server.listen"));
}

TEST_CASE("a unix socket mode is read as octal") {
    workspace w;
    auto c = load_config(w.config("server:\n  unix_socket: run/airlock.sock\n  unix_socket_mode: 0660\n"), test_env());
    REQUIRE(c);
    CHECK(c->server.unix_socket == w.dir.path() / "run" / "airlock.sock");
    CHECK(c->server.unix_socket_mode == 0660);
}

TEST_CASE("listen and unix_socket together are refused") {
    workspace w;
    CHECK(first_code(w.config("server:\n  listen: 127.0.0.1:1\n  unix_socket: a.sock\n")) == "conflicting_fields");
}

TEST_CASE("a wildcard allowed origin is refused") {
    workspace w;
    auto file = w.config("server:\n  allowed_origins: ['*']\n");
    CHECK_THAT(first_problem(file), Catch::Contains("server.allowed_origins[0]"));
}

TEST_CASE("a trusted proxy must be an IP address") {
    workspace w;
    auto file = w.config("server:\n  trusted_proxies: [nginx.local]\n");
    CHECK_THAT(first_problem(file), Catch::Contains("server.trusted_proxies[0]"));
}

TEST_CASE("trusted proxies may be CIDR networks or the unix-socket peer, and reach the HTTP server's options") {
    workspace w;
    auto c = load_config(w.config("server:\n  trusted_proxies: [10.0.0.0/8, 'fd00::/8', unix, 192.0.2.1]\n"), test_env());
    REQUIRE(c);
    CHECK(c->server.trusted_proxies == std::vector<std::string>{"10.0.0.0/8", "fd00::/8", "unix", "192.0.2.1"});
    auto o = to_http_server_options(c->server);
    CHECK(o.trusted.unix_socket);
    REQUIRE(o.trusted.networks.size() == 3);
    CHECK(to_string(o.trusted.networks[0]) == "10.0.0.0/8");
    CHECK_THAT(summary(*c), Catch::Contains("10.0.0.0/8, fd00::/8, unix, 192.0.2.1"));
}

TEST_CASE("the forwarded header is X-Forwarded-For unless set to Forwarded, and nothing else is accepted") {
    workspace w;
    auto plain = load_config(w.config("server:\n  trusted_proxies: [127.0.0.1]\n"), test_env());
    REQUIRE(plain);
    CHECK(to_http_server_options(plain->server).trusted.header == proxy_trust::x_forwarded_for);
    CHECK_THAT(summary(*plain), Catch::Contains("(client from X-Forwarded-For)"));
    auto rfc = load_config(w.config("server:\n  trusted_proxies: [127.0.0.1]\n  forwarded_header: Forwarded\n"), test_env());
    REQUIRE(rfc);
    CHECK(to_http_server_options(rfc->server).trusted.header == proxy_trust::forwarded);
    auto file = w.config("server:\n  forwarded_header: X-Real-IP\n");
    CHECK_THAT(first_problem(file), Catch::Contains("server.forwarded_header") && Catch::Contains("X-Real-IP"));
}

TEST_CASE("a trusted proxy network with host bits set is refused naming the entry") {
    workspace w;
    auto file = w.config("server:\n  trusted_proxies: [127.0.0.1, 10.1.0.0/8]\n");
    CHECK_THAT(first_problem(file), Catch::Contains("server.trusted_proxies[1]"));
    CHECK_THAT(first_problem(file), Catch::Contains("CIDR"));
}

TEST_CASE("the SSE keep-alive interval is configurable, and below 100ms is refused") {
    workspace w;
    auto c = load_config(w.config("server:\n  sse_keep_alive: 500ms\n"), test_env());
    REQUIRE(c);
    CHECK(c->server.sse_keep_alive == std::chrono::milliseconds(500));
    CHECK_THAT(first_problem(w.config("server:\n  sse_keep_alive: 10ms\n")), Catch::Contains("server.sse_keep_alive"));
}

TEST_CASE("busy polling is off by default, takes microseconds up to 10ms, and is refused beside more than one I/O thread") {
    workspace w;
    auto none = load_config(w.config("{}\n"), test_env());
    REQUIRE(none);
    CHECK(none->server.busy_poll.count() == 0);
    auto c = load_config(w.config("server:\n  threads: 1\n  busy_poll: 300us\n"), test_env());
    REQUIRE(c);
    CHECK(c->server.busy_poll == std::chrono::microseconds(300));
    auto ms = load_config(w.config("server:\n  threads: 1\n  busy_poll: 2ms\n"), test_env());
    REQUIRE(ms);
    CHECK(ms->server.busy_poll == std::chrono::microseconds(2000));
    CHECK_THAT(first_problem(w.config("server:\n  threads: 1\n  busy_poll: 300\n")), Catch::Contains("server.busy_poll"));
    CHECK_THAT(first_problem(w.config("server:\n  threads: 1\n  busy_poll: 1s\n")), Catch::Contains("10ms"));
    auto const threads = first_problem(w.config("server:\n  threads: 2\n  busy_poll: 300us\n"));
    CHECK_THAT(threads, Catch::Contains("server.busy_poll"));
    CHECK_THAT(threads, Catch::Contains("threads: 1"));
    // Left to the default, the thread count may still be made one on the command line.
    auto unset = load_config(w.config("server:\n  busy_poll: 300us\n"), test_env());
    REQUIRE(unset);
    CHECK(unset->server.busy_poll == std::chrono::microseconds(300));
}

TEST_CASE("session limits default to 1024 sessions, 64 per principal and 30 minutes idle") {
    workspace w;
    auto c = load_config(w.config("{}\n"), test_env());
    REQUIRE(c);
    CHECK(c->server.sessions.max == 1024);
    CHECK(c->server.sessions.max_per_principal == 64);
    CHECK(c->server.sessions.idle_timeout == std::chrono::minutes(30));
    CHECK_THAT(summary(*c), Catch::Contains("at most 1024 legacy MCP sessions, 64 per principal; idle ones end after 30m"));
}

TEST_CASE("session limits are read from server.sessions") {
    workspace w;
    auto c = with_sessions(w, "max: 200\n    max_per_principal: 10\n    idle_timeout: 5m");
    REQUIRE(c);
    CHECK(c->server.sessions == session_limits{.max = 200, .max_per_principal = 10, .idle_timeout = std::chrono::minutes(5)});
    CHECK_THAT(summary(*c), Catch::Contains("at most 200 legacy MCP sessions, 10 per principal; idle ones end after 5m"));
}

TEST_CASE("a session total below 64 is also the per-principal limit when none is given") {
    workspace w;
    auto c = with_sessions(w, "max: 16");
    REQUIRE(c);
    CHECK(c->server.sessions == session_limits{.max = 16, .max_per_principal = 16});
}

TEST_CASE("a sessions mapping with every entry commented out means its defaults") {
    workspace w;
    auto c = with_sessions(w, "# max: 10");
    REQUIRE(c);
    CHECK(c->server.sessions == session_limits{});
}

TEST_CASE("a session limit of zero is refused naming the field") {
    workspace w;
    CHECK_THAT(sessions_problem(w, "max: 0"), Catch::StartsWith("invalid_value: server.sessions.max is 0;"));
    CHECK_THAT(sessions_problem(w, "max_per_principal: 0"),
               Catch::StartsWith("invalid_value: server.sessions.max_per_principal is 0;"));
}

TEST_CASE("a per-principal session limit above the total is refused naming both fields") {
    workspace w;
    CHECK_THAT(sessions_problem(w, "max: 100\n    max_per_principal: 101"),
               Catch::StartsWith("invalid_value: server.sessions.max_per_principal is 101;") &&
                   Catch::Contains("server.sessions.max (100)"));
    CHECK_THAT(sessions_problem(w, "max_per_principal: 2000"), Catch::Contains("server.sessions.max (1024)"));
}

TEST_CASE("a session idle timeout that is not a duration, or under a second, is refused naming the field") {
    workspace w;
    CHECK_THAT(sessions_problem(w, "idle_timeout: 30"),
               Catch::StartsWith("invalid_duration: server.sessions.idle_timeout") && Catch::Contains("\"30s\""));
    CHECK_THAT(sessions_problem(w, "idle_timeout: half an hour"),
               Catch::StartsWith("invalid_duration: server.sessions.idle_timeout"));
    CHECK_THAT(sessions_problem(w, "idle_timeout: 500ms"), Catch::StartsWith("invalid_value: server.sessions.idle_timeout"));
}

TEST_CASE("an unknown key under server.sessions is refused with its full path") {
    workspace w;
    CHECK_THAT(sessions_problem(w, "per_principal: 5"), Catch::Contains("server.sessions.per_principal"));
}

TEST_CASE("TLS files that do not exist are refused") {
    workspace w;
    auto file = w.config("server:\n  tls: { cert_file: cert.pem, key_file: key.pem }\n");
    CHECK(first_code(file) == "file_missing");
    CHECK_THAT(first_problem(file), Catch::Contains("server.tls.cert_file"));
}

// ── upstreams ────────────────────────────────────────────────────────────────────────────────

TEST_CASE("a stdio upstream becomes stdio options with its environment resolved") {
    workspace w;
    auto c = load_config(w.config(R"yaml(
upstreams:
  - name: ledger
    stdio:
      argv: [node, ledger.js, --verbose]
      env: { MODE: test, PORT: 8080 }
      env_from: { API_KEY: LEDGER_KEY }
    prefix: none
    deadline: 5s
)yaml"),
                         test_env({{"LEDGER_KEY", "k-123"}}));
    REQUIRE(c);
    REQUIRE(c->upstreams.size() == 1);
    auto const& u = c->upstreams[0];
    CHECK(u.kind == upstream_kind::stdio);
    CHECK(u.stdio.server_name == "ledger");
    CHECK(u.stdio.argv == std::vector<std::string>{"node", "ledger.js", "--verbose"});
    CHECK(u.stdio.env == std::map<std::string, std::string>{{"API_KEY", "k-123"}, {"MODE", "test"}, {"PORT", "8080"}});
    CHECK(u.stdio.cwd == w.dir.path().string());
    CHECK(u.prefix == tool_prefix::none);
    CHECK(u.deadline == std::chrono::seconds(5));
    CHECK(u.destination == core::destination{core::process_destination{"node"}});
}

TEST_CASE("stdio written as a list is the upstream's argv") {
    workspace w;
    auto c = load_config(w.config("upstreams:\n  - name: ledger\n    stdio: [node, ledger.js]\n"), test_env());
    REQUIRE(c);
    CHECK(c->upstreams.at(0).stdio.argv == std::vector<std::string>{"node", "ledger.js"});
    CHECK(c->upstreams.at(0).destination == core::destination{core::process_destination{"node"}});
}

TEST_CASE("a stdio upstream reads messages of up to 4 MiB unless max_message_bytes says otherwise") {
    workspace w;
    auto c = load_config(w.config(R"yaml(
upstreams:
  - name: ledger
    stdio: [node, ledger.js]
  - name: big
    stdio: [node, big.js]
    max_message_bytes: 16MiB
  - name: exact
    stdio: [node, exact.js]
    max_message_bytes: 100000
)yaml"),
                         test_env());
    REQUIRE(c);
    REQUIRE(c->upstreams.size() == 3);
    CHECK(c->upstreams[0].stdio.max_message_bytes == 4 * 1024 * 1024);
    CHECK(c->upstreams[1].stdio.max_message_bytes == 16 * 1024 * 1024);
    CHECK(c->upstreams[2].stdio.max_message_bytes == 100'000);
}

TEST_CASE("a max_message_bytes that is not a size, or below 1 KiB, or on a url upstream is refused naming its path") {
    workspace w;
    struct refused {
        std::string entry;  // the upstream's entry, after `upstreams:`
        std::string code;
    };
    std::string const ledger = "\n  - name: ledger\n    stdio: [node, ledger.js]\n    max_message_bytes: ";
    std::vector<refused> cases{{ledger + "lots\n", "invalid_size"},
                               {ledger + "100\n", "invalid_value"},
                               {"\n  - name: docs\n    url: http://127.0.0.1:9/mcp\n    max_message_bytes: 8MiB\n",
                                "conflicting_fields"}};
    for (auto const& c : cases) {
        auto file = w.config("upstreams:" + c.entry);
        INFO(c.entry);
        CHECK(first_code(file) == c.code);
        CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0].max_message_bytes"));
    }
}

TEST_CASE("an empty argv is refused") {
    workspace w;
    auto file = w.config("upstreams:\n  - name: ledger\n    stdio: { argv: [] }\n");
    CHECK(first_code(file) == "empty_field");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0].stdio.argv"));
}

TEST_CASE("an env_from variable that is not set is refused naming it") {
    workspace w;
    auto file = w.config("upstreams:\n  - name: ledger\n    stdio:\n      argv: [node]\n      env_from: { API_KEY: NOPE_UNSET }\n");
    CHECK(first_code(file) == "env_unset");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0].stdio.env_from.API_KEY") && Catch::Contains("NOPE_UNSET"));
}

TEST_CASE("a url upstream becomes HTTP transport options with its headers resolved") {
    workspace w;
    w.write("secrets/docs.key", "file-secret-value\n");
    auto c = load_config(w.config(R"yaml(
upstreams:
  - name: docs
    url: https://MCP.example.com/mcp
    headers:
      Authorization: { env: DOCS_TOKEN, prefix: "Bearer " }
      X-Api-Key: { file: secrets/docs.key }
      X-Tenant: acme
    tls: { verify: true, ca_file: secrets/docs.key }
    optional: true
)yaml"),
                         test_env({{"DOCS_TOKEN", "env-secret-value"}}));
    REQUIRE(c);
    auto const& u = c->upstreams.at(0);
    CHECK(u.kind == upstream_kind::http);
    CHECK(u.http.url == "https://MCP.example.com/mcp");
    CHECK(u.http.headers == std::vector<std::pair<std::string, std::string>>{
                                {"Authorization", "Bearer env-secret-value"},
                                {"X-Api-Key", "file-secret-value"},
                                {"X-Tenant", "acme"}});
    CHECK(u.http.ca_file == (w.dir.path() / "secrets" / "docs.key").string());
    CHECK(u.optional);
    CHECK(u.destination == core::destination{core::remote_destination{"https", "mcp.example.com", 443}});
}

TEST_CASE("a header the MCP transport sets itself cannot be configured") {
    workspace w;
    auto file = w.config("upstreams:\n  - name: docs\n    url: http://127.0.0.1:9/mcp\n    headers: { Mcp-Session-Id: x }\n");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0].headers.Mcp-Session-Id"));
}

TEST_CASE("an upstream url with credentials in it is refused") {
    workspace w;
    auto file = w.config("upstreams:\n  - name: docs\n    url: https://user:pw@example.com/mcp\n");
    CHECK(first_code(file) == "invalid_url");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0].url"));
}

TEST_CASE("two upstreams with the same name are refused") {
    workspace w;
    auto file = w.config(std::string(one_upstream) + "  - name: ledger\n    url: http://127.0.0.1:9/mcp\n");
    CHECK(first_code(file) == "duplicate_name");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[1].name") && Catch::Contains("upstreams[0]"));
}

TEST_CASE("an upstream with both stdio and url is refused") {
    workspace w;
    auto file = w.config("upstreams:\n  - name: ledger\n    stdio: { argv: [node] }\n    url: http://127.0.0.1:9/mcp\n");
    CHECK(first_code(file) == "conflicting_fields");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0]") && Catch::Contains("stdio and url"));
}

TEST_CASE("an upstream with neither stdio nor url is refused") {
    workspace w;
    auto file = w.config("upstreams:\n  - name: ledger\n    optional: true\n");
    CHECK(first_code(file) == "missing_field");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0]") && Catch::Contains("stdio") &&
                                        Catch::Contains("url"));
}

TEST_CASE("an upstream name that cannot be a ToolId server component is refused") {
    workspace w;
    auto file = w.config("upstreams:\n  - name: my-ledger\n    stdio: { argv: [node] }\n");
    CHECK(first_code(file) == "invalid_name");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0].name") && Catch::Contains("'-'"));
}

TEST_CASE("headers on a stdio upstream are refused") {
    workspace w;
    auto file = w.config("upstreams:\n  - name: ledger\n    stdio: { argv: [node] }\n    headers: { X-A: b }\n");
    CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0].headers"));
}

// ── egress ───────────────────────────────────────────────────────────────────────────────────

TEST_CASE("egress entries name local, a process or a remote host and port") {
    workspace w;
    auto c = load_config(w.config("egress:\n  - local\n  - process: node\n  - https://API.example.com\n"
                                  "  - http://127.0.0.1:9000/\n  - 'https://[::1]:8443'\n"),
                         test_env());
    REQUIRE(c);
    CHECK(c->egress.entries().size() == 5);
    CHECK(c->egress.permits(core::local_destination{}));
    CHECK(c->egress.permits(core::process_destination{"node"}));
    CHECK(c->egress.permits(core::remote_destination{"https", "api.example.com", 443}));
    CHECK(c->egress.permits(core::remote_destination{"http", "127.0.0.1", 9000}));
    CHECK(c->egress.permits(core::remote_destination{"https", "::1", 8443}));
    CHECK_FALSE(c->egress.permits(core::remote_destination{"http", "api.example.com", 80}));
}

TEST_CASE("a stdio upstream is not allowed until egress names its argv[0]") {
    workspace w;
    auto denied = load_config(w.config(one_upstream), test_env());
    REQUIRE(denied);
    CHECK_FALSE(denied->egress.permits(denied->upstreams[0].destination));
    REQUIRE(denied->warnings.size() == 1);
    CHECK_THAT(denied->warnings[0], Catch::Contains("ledger") && Catch::Contains("not in egress"));

    auto allowed = load_config(w.config(std::string(one_upstream) + "egress: [{process: node}]\n"), test_env());
    REQUIRE(allowed);
    CHECK(allowed->egress.permits(allowed->upstreams[0].destination));
    CHECK(allowed->warnings.empty());
}

TEST_CASE("a malformed egress entry is refused naming its index") {
    workspace w;
    auto file = w.config("egress:\n  - local\n  - api.example.com\n");
    CHECK(first_code(file) == "invalid_destination");
    CHECK_THAT(first_problem(file), Catch::Contains("egress[1]"));
    CHECK_THAT(first_problem(w.config("egress: [ftp://files.example.com]\n")), Catch::Contains("egress[0]"));
    CHECK_THAT(first_problem(w.config("egress: ['https://example.com/api']\n")), Catch::Contains("path"));
}

TEST_CASE("a host with a trailing dot is refused in an egress entry and in an upstream url, naming it") {
    workspace w;
    for (auto const* entry : {"http://127.0.0.1.:8080", "https://api.example.com.", "http://api.example.com.:80/"}) {
        INFO(entry);
        auto file = w.config(std::string("egress:\n  - ") + entry + "\n");
        CHECK(first_code(file) == "invalid_destination");
        CHECK_THAT(first_problem(file), Catch::Contains("egress[0]") && Catch::Contains(entry) &&
                                            Catch::Contains("trailing '.'"));
    }
    for (auto const* url : {"http://127.0.0.1.:8080/mcp", "https://mcp.example.com./mcp"}) {
        INFO(url);
        auto file = w.config(std::string("upstreams:\n  - name: docs\n    url: ") + url + "\n");
        CHECK(first_code(file) == "invalid_url");
        CHECK_THAT(first_problem(file), Catch::Contains("upstreams[0].url") && Catch::Contains(url));
    }
    // Brackets and ports as written still work.
    auto c = load_config(w.config("egress:\n  - http://[::1]:9000\n  - http://127.0.0.1\n"), test_env());
    REQUIRE(c);
    CHECK(c->egress.permits(core::remote_destination{"http", "::1", 9000}));
    CHECK(c->egress.permits(core::remote_destination{"http", "127.0.0.1", 80}));
}

TEST_CASE("a wildcard egress entry is refused with the allowlist's reason") {
    workspace w;
    auto file = w.config("egress:\n  - https://*.example.com\n");
    CHECK(first_code(file) == "invalid_destination");
    CHECK_THAT(first_problem(file), Catch::StartsWith("egress[0]:") && Catch::Contains("wildcard"));
}

// ── principals ───────────────────────────────────────────────────────────────────────────────

TEST_CASE("a principal's token is read from its file and its manifest grants its tools") {
    workspace w;
    w.standard_files();
    auto c = load_config(w.config(std::string(one_upstream) + R"yaml(
principals:
  - name: alice
    token_file: secrets/alice.token
    manifest: grants/alice.yaml
    trusted: true
)yaml"),
                         test_env());
    REQUIRE(c);
    REQUIRE(c->principals.size() == 1);
    auto const& p = c->principals[0];
    CHECK(p.token == alice_token);  // the trailing newline is not part of it
    CHECK(p.manifest.tools.size() == 2);
    CHECK(p.trusted);
}

TEST_CASE("a principal's token may come from an environment variable") {
    workspace w;
    w.standard_files();
    auto c = load_config(w.config("principals:\n  - name: alice\n    token_env: ALICE_TOKEN\n"
                                  "    manifest: grants/alice.yaml\n"),
                         test_env({{"ALICE_TOKEN", std::string(alice_token)}}));
    REQUIRE(c);
    CHECK(c->principals.at(0).token == alice_token);
    CHECK_FALSE(c->principals.at(0).trusted);
}

TEST_CASE("a missing token file is refused naming the field and the file") {
    workspace w;
    w.standard_files();
    auto file = w.config("principals:\n  - name: alice\n    token_file: secrets/carol.token\n"
                         "    manifest: grants/alice.yaml\n");
    CHECK(first_code(file) == "file_missing");
    CHECK_THAT(first_problem(file), Catch::Contains("principals[0].token_file") && Catch::Contains("carol.token"));
}

TEST_CASE("a token environment variable that is not set is refused naming it") {
    workspace w;
    w.standard_files();
    auto file = w.config("principals:\n  - name: alice\n    token_env: ALICE_TOKEN\n    manifest: grants/alice.yaml\n");
    CHECK(first_code(file) == "env_unset");
    CHECK_THAT(first_problem(file), Catch::Contains("principals[0].token_env") && Catch::Contains("ALICE_TOKEN"));
}

TEST_CASE("a principal with both token_file and token_env is refused") {
    workspace w;
    w.standard_files();
    auto file = w.config("principals:\n  - name: alice\n    token_file: secrets/alice.token\n    token_env: T\n"
                         "    manifest: grants/alice.yaml\n");
    CHECK(first_code(file) == "conflicting_fields");
}

TEST_CASE("two principals with the same token are refused") {
    workspace w;
    w.standard_files();
    w.write("secrets/copy.token", alice_token);
    auto file = w.config(R"yaml(
principals:
  - name: alice
    token_file: secrets/alice.token
    manifest: grants/alice.yaml
  - name: bob
    token_file: secrets/bob.token
    manifest: grants/alice.yaml
  - name: mallory
    token_file: secrets/copy.token
    manifest: grants/alice.yaml
)yaml");
    CHECK(first_code(file) == "duplicate_token");
    CHECK_THAT(first_problem(file), Catch::Contains("principals[2]") && Catch::Contains("principals[0]"));
}

TEST_CASE("two principals with the same name are refused") {
    workspace w;
    w.standard_files();
    auto file = w.config("principals:\n"
                         "  - { name: alice, token_file: secrets/alice.token, manifest: grants/alice.yaml }\n"
                         "  - { name: alice, token_file: secrets/bob.token, manifest: grants/alice.yaml }\n");
    CHECK(first_code(file) == "duplicate_name");
}

TEST_CASE("a short token is refused") {
    workspace w;
    w.standard_files();
    w.write("secrets/short.token", "hunter2\n");
    auto file = w.config("principals:\n  - name: alice\n    token_file: secrets/short.token\n    manifest: grants/alice.yaml\n");
    CHECK(first_code(file) == "invalid_token");
    CHECK_THAT(first_problem(file), !Catch::Contains("hunter2"));
}

TEST_CASE("an anonymous principal needs no token and is named in a warning and the summary") {
    workspace w;
    w.standard_files();
    auto c = load_config(w.config(std::string(one_upstream) + R"yaml(
principals:
  - name: public
    anonymous: true
    manifest: grants/alice.yaml
  - name: alice
    token_file: secrets/alice.token
    manifest: grants/alice.yaml
)yaml"),
                         test_env());
    REQUIRE(c);
    REQUIRE(c->principals.size() == 2);
    CHECK(c->principals[0].anonymous);
    CHECK(c->principals[0].token.empty());
    CHECK_FALSE(c->principals[1].anonymous);
    bool warned = std::any_of(c->warnings.begin(), c->warnings.end(), [](auto const& w) {
        return w.find("principal public is anonymous") != std::string::npos;
    });
    CHECK(warned);
    CHECK_THAT(summary(*c), Catch::Contains("public") && Catch::Contains("anonymous"));
}

TEST_CASE("a principal marked operator: true is an operator and the summary says so, and others are not") {
    workspace w;
    w.standard_files();
    auto c = load_config(w.config(std::string(one_upstream) +
                                  "principals:\n"
                                  "  - { name: alice, token_file: secrets/alice.token, manifest: grants/alice.yaml, "
                                  "operator: true }\n"
                                  "  - { name: bob, token_file: secrets/bob.token, manifest: grants/alice.yaml }\n"),
                         test_env());
    INFO((c ? std::string() : c.error().message));
    REQUIRE(c);
    REQUIRE(c->principals.size() == 2);
    CHECK(c->principals[0].is_operator);
    CHECK_FALSE(c->principals[1].is_operator);
    auto text = summary(*c);
    auto alice_line = text.substr(text.find("  alice  "), text.find('\n', text.find("  alice  ")) - text.find("  alice  "));
    auto bob_line = text.substr(text.find("  bob  "), text.find('\n', text.find("  bob  ")) - text.find("  bob  "));
    CHECK_THAT(alice_line, Catch::Contains(", operator"));
    CHECK_THAT(bob_line, !Catch::Contains("operator"));
}

TEST_CASE("operator must be a boolean, and an anonymous principal cannot be an operator") {
    workspace w;
    w.standard_files();
    auto word = w.config("principals:\n  - name: alice\n    token_file: secrets/alice.token\n"
                         "    manifest: grants/alice.yaml\n    operator: sometimes\n");
    CHECK_THAT(first_problem(word), Catch::Contains("principals[0].operator"));
    auto anonymous = w.config("principals:\n  - { name: public, anonymous: true, operator: true, manifest: grants/alice.yaml }\n");
    CHECK(first_code(anonymous) == "conflicting_fields");
    CHECK_THAT(first_problem(anonymous), Catch::Contains("principals[0].operator"));
}

TEST_CASE("an anonymous principal with a token is refused") {
    workspace w;
    w.standard_files();
    auto file = w.config("principals:\n  - name: public\n    anonymous: true\n    token_file: secrets/alice.token\n"
                         "    manifest: grants/alice.yaml\n");
    CHECK(first_code(file) == "conflicting_fields");
    CHECK_THAT(first_problem(file), Catch::Contains("principals[0].anonymous"));
}

TEST_CASE("two anonymous principals are refused") {
    workspace w;
    w.standard_files();
    auto file = w.config("principals:\n"
                         "  - { name: public, anonymous: true, manifest: grants/alice.yaml }\n"
                         "  - { name: guest, anonymous: true, manifest: grants/alice.yaml }\n");
    CHECK(first_code(file) == "duplicate_anonymous");
    CHECK_THAT(first_problem(file), Catch::Contains("principals[1]") && Catch::Contains("principals[0]"));
}

TEST_CASE("a manifest's problems are reported prefixed by the principal's manifest path") {
    workspace w;
    w.standard_files();
    w.write("grants/bad.yaml", "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: bad, version: \"1\" }\n"
                               "spec:\n  tools:\n    - ref: tool://ledger/po-st\n  budgets: { max_steps: 0 }\n");
    auto file = w.config("principals:\n  - name: alice\n    token_file: secrets/alice.token\n    manifest: grants/bad.yaml\n");
    auto problems = config_problems(file, test_env());
    REQUIRE(problems.size() == 2);
    for (auto const& e : problems) {
        CHECK_THAT(e.message, Catch::StartsWith("principals[0].manifest (" + (w.dir.path() / "grants/bad.yaml").string() + "): spec."));
    }
    CHECK_THAT(problems[0].message, Catch::Contains("spec.tools[0].ref"));
}

TEST_CASE("a principal granted tools of a server no upstream serves gets a warning") {
    workspace w;
    w.standard_files();
    auto c = load_config(w.config("principals:\n  - name: alice\n    token_file: secrets/alice.token\n"
                                  "    manifest: grants/alice.yaml\n"),
                         test_env());
    REQUIRE(c);
    bool warned = std::any_of(c->warnings.begin(), c->warnings.end(), [](auto const& w) {
        return w.find("tool://ledger/read") != std::string::npos && w.find("no upstream") != std::string::npos;
    });
    CHECK(warned);
}

// ── logging, runs ────────────────────────────────────────────────────────────────────────────

TEST_CASE("an unknown log level is refused listing the levels") {
    workspace w;
    auto file = w.config("logging:\n  level: verbose\n");
    CHECK(first_code(file) == "invalid_value");
    CHECK_THAT(first_problem(file), Catch::Contains("logging.level") && Catch::Contains("trace, debug, info, warn, error"));
}

TEST_CASE("log level, log format and the run limit are read") {
    workspace w;
    auto c = load_config(w.config("logging: { level: debug, format: text }\nruns: { max_concurrent_runs: 8 }\n"),
                         test_env());
    REQUIRE(c);
    CHECK(c->logging.level == log_level::debug);
    CHECK(c->logging.format == log_format::text);
    CHECK(c->runs.max_concurrent_runs == 8);
}

// ── secrets ──────────────────────────────────────────────────────────────────────────────────

TEST_CASE("no token, header value or environment value appears in an error, a warning or the summary") {
    workspace w;
    w.standard_files();
    std::string const header_secret = "header-SECRET-0123456789";
    std::string const env_secret = "envvar-SECRET-0123456789";
    std::string const good = std::string(one_upstream) + R"yaml(
  - name: docs
    url: https://docs.example.com/mcp
    headers: { Authorization: { env: DOCS_TOKEN, prefix: "Bearer " } }
  - name: tool2
    stdio:
      argv: [node]
      env_from: { KEY: TOOL2_KEY }
principals:
  - name: alice
    token_file: secrets/alice.token
    manifest: grants/alice.yaml
  - name: bob
    token_env: BOB_TOKEN
    manifest: grants/alice.yaml
)yaml";
    auto env = test_env({{"DOCS_TOKEN", header_secret}, {"TOOL2_KEY", env_secret}, {"BOB_TOKEN", std::string(bob_token)}});
    auto c = load_config(w.config(good), env);
    REQUIRE(c);
    std::string text = summary(*c);
    for (auto const& w2 : c->warnings) text += w2 + "\n";

    // The same secrets, now in places that produce errors: a duplicate token, a header with a line
    // break, a value of the wrong type.
    w.write("secrets/copy.token", bob_token);
    auto bad = good + R"yaml(  - name: carol
    token_file: secrets/copy.token
    manifest: grants/alice.yaml
)yaml";
    auto bad_env = test_env({{"DOCS_TOKEN", header_secret + "\r\nX: y"}, {"TOOL2_KEY", env_secret},
                             {"BOB_TOKEN", std::string(bob_token)}});
    auto problems = config_problems(w.config(bad), bad_env);
    REQUIRE(problems.size() >= 2);
    text += all_messages(problems);
    text += all_messages(config_problems(
        w.config("upstreams:\n  - name: x\n    url: http://a/\n    headers: { A: [" + header_secret + "] }\n"), env));

    INFO(text);
    CHECK_THAT(text, Catch::Contains("alice") && Catch::Contains("duplicate_token"));
    CHECK(text.find(alice_token) == std::string::npos);
    CHECK(text.find(bob_token) == std::string::npos);
    CHECK(text.find("SECRET") == std::string::npos);
}

TEST_CASE("every header value and every value from a variable or a file is a secret to hide; an inline env value is not") {
    workspace w;
    w.write("secrets/docs.key", "file-value-0123456789\n");
    auto c = load_config(w.config(R"yaml(
upstreams:
  - name: docs
    url: https://docs.example.com/mcp
    headers: { Authorization: { env: DOCS_TOKEN, prefix: "Bearer " }, X-Tenant: acme-corp, X-Key: { file: secrets/docs.key } }
  - name: tool2
    stdio:
      argv: [node]
      env: { NODE_ENV: production, FROM_VAR: { env: TOOL2_KEY } }
      env_from: { COPIED: COPIED_KEY }
)yaml"),
                         test_env({{"DOCS_TOKEN", "header-value-0123456789"}, {"TOOL2_KEY", "envvar-value-0123456789"},
                                   {"COPIED_KEY", "copied-value-0123456789"}}));
    REQUIRE(c);
    auto const& s = c->secrets;
    for (auto const* v : {"header-value-0123456789", "acme-corp", "file-value-0123456789", "envvar-value-0123456789",
                          "copied-value-0123456789"}) {
        INFO(v);
        CHECK(std::find(s.begin(), s.end(), v) != s.end());
    }
    CHECK(std::find(s.begin(), s.end(), "production") == s.end());
    for (auto const& warning : c->warnings) CHECK_THAT(warning, !Catch::Contains("shorter than"));
}

TEST_CASE("a secret from a variable or a file too short to be hidden in outputs is warned about, never shown") {
    workspace w;
    auto c = load_config(w.config(R"yaml(
upstreams:
  - name: tool2
    stdio:
      argv: [node]
      env: { SHORT: { env: TOOL2_KEY } }
)yaml"),
                         test_env({{"TOOL2_KEY", "k3y"}}));
    REQUIRE(c);
    auto short_one = std::find_if(c->warnings.begin(), c->warnings.end(),
                                  [](auto const& warning) { return warning.find("shorter than") != std::string::npos; });
    REQUIRE(short_one != c->warnings.end());
    auto const& w0 = *short_one;
    CHECK_THAT(w0, Catch::Contains("upstreams[0].stdio.env.SHORT.env") && Catch::Contains("shorter than 6 bytes"));
    CHECK(w0.find("k3y") == std::string::npos);
}

// ── paths ────────────────────────────────────────────────────────────────────────────────────

TEST_CASE("relative paths are resolved against the configuration file's directory") {
    workspace w;
    w.standard_files();
    auto file = w.config(R"yaml(
journal: { dir: data/journal }
upstreams:
  - name: ledger
    stdio: { argv: [bin/ledger, --db, ledger.db], cwd: work }
egress:
  - process: ./bin/ledger
principals:
  - name: alice
    token_file: secrets/alice.token
    manifest: grants/alice.yaml
)yaml");
    fs::create_directories(w.dir.path() / "work");
    // Loaded by a relative name from the parent directory: nothing may be resolved against the
    // directory airlock was started from.
    auto const old = fs::current_path();
    fs::current_path(w.dir.path().parent_path());
    auto c = load_config(w.dir.path().filename() / file.filename(), test_env());
    fs::current_path(old);
    REQUIRE(c);
    auto const& base = w.dir.path();
    CHECK(c->base_dir == base);
    CHECK(c->journal.directory == base / "data" / "journal");
    CHECK(c->upstreams[0].stdio.argv[0] == (base / "bin" / "ledger").string());
    CHECK(c->upstreams[0].stdio.argv[2] == "ledger.db");  // arguments are passed as written
    CHECK(c->upstreams[0].stdio.cwd == (base / "work").string());
    CHECK(c->egress.permits(c->upstreams[0].destination));
    CHECK(c->principals[0].token_file == base / "secrets" / "alice.token");
    CHECK(c->principals[0].manifest_file == base / "grants" / "alice.yaml");
}

// ── summary and first start ──────────────────────────────────────────────────────────────────

TEST_CASE("the summary names the listen address, journal, upstreams, egress and principals") {
    workspace w;
    w.standard_files();
    auto c = load_config(w.config(std::string(one_upstream) + R"yaml(
egress: [{process: node}]
principals:
  - name: alice
    token_file: secrets/alice.token
    manifest: grants/alice.yaml
)yaml"),
                         test_env());
    REQUIRE(c);
    auto s = summary(*c);
    CHECK_THAT(s, Catch::Contains("http://127.0.0.1:8787"));
    CHECK_THAT(s, Catch::Contains((w.dir.path() / "var" / "journal").string()));
    CHECK_THAT(s, Catch::Contains("ledger  stdio  node") && Catch::Contains("egress allowed"));
    CHECK_THAT(s, Catch::Contains("process:node"));
    CHECK_THAT(s, Catch::Contains("alice  2 tools granted"));
    CHECK_THAT(s, Catch::Contains("signing     off"));
}

TEST_CASE("missing secrets marked create_if_missing are created once, private, and reused") {
    workspace w;
    w.standard_files();
    auto file = w.config(R"yaml(
signing: { key_file: var/keys/provenance.key, create_if_missing: true }
principals:
  - name: alice
    token_file: var/alice.token
    create_if_missing: true
    manifest: grants/alice.yaml
)yaml");
    auto first = load_config(file, test_env());
    REQUIRE(first);
    CHECK_FALSE(first->signing->signer);
    CHECK(first->principals[0].token.empty());
    REQUIRE(create_missing_secrets(*first));
    REQUIRE(first->signing->signer);
    CHECK(first->signing->kid.starts_with("ed25519-"));
    CHECK(first->principals[0].token.size() == 64);

    struct stat st {};
    REQUIRE(::stat((w.dir.path() / "var" / "alice.token").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat((w.dir.path() / "var" / "keys" / "provenance.key").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    std::ifstream pub(w.dir.path() / "var" / "keys" / "provenance.pub");
    std::string pub_pem((std::istreambuf_iterator<char>(pub)), std::istreambuf_iterator<char>());
    CHECK(pub_pem == first->signing->signer->public_key_pem());

    auto second = load_config(file, test_env());
    REQUIRE(second);
    CHECK(second->principals[0].token == first->principals[0].token);
    REQUIRE(second->signing->signer);
    CHECK(second->signing->kid == first->signing->kid);
    CHECK(second->signing->signer->public_key_raw() == first->signing->signer->public_key_raw());
}

TEST_CASE("a signing key file that is missing is refused unless create_if_missing is set") {
    workspace w;
    auto file = w.config("signing: { key_file: keys/none.pem }\n");
    CHECK(first_code(file) == "file_missing");
    CHECK_THAT(first_problem(file), Catch::Contains("signing.key_file"));
}

TEST_CASE("a key id with a space in it is refused") {
    workspace w;
    auto file = w.config("signing: { key_file: k.pem, kid: 'my key', create_if_missing: true }\n");
    CHECK_THAT(first_problem(file), Catch::Contains("signing.kid"));
}

TEST_CASE("a signing key file that is not an Ed25519 key is refused") {
    workspace w;
    w.write("keys/bad.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
    auto file = w.config("signing: { key_file: keys/bad.pem, kid: k1 }\n");
    CHECK(first_code(file) == "invalid_key");
    CHECK_THAT(first_problem(file), Catch::Contains("signing.key_file"));
}

// ── agents ──

namespace {
std::string agents_config(workspace const& w, std::string const& entry) {
    w.write("teller.yaml", std::string(R"yaml(apiVersion: airlock/v1
kind: Agent
metadata: { name: teller, version: "1.0.0" }
spec:
  capabilities: { provides: [ledger.ask] }
  models: { privileged: { provider: scripted, model: teller-1 } }
  tools:
    - { ref: tool://ledger/read, mutates: false, description: Read a balance. }
  execution: { kind: tool-calling, max_turns: 4 }
  budgets: {}
)yaml"));
    w.write("teller.script.yaml", "turns:\n  - say: hello\n");
    return "egress:\n  - local\nagents:\n  - " + entry + "\n";
}
}  // namespace

TEST_CASE("an agent with a script loads its manifest and its script") {
    workspace w;
    auto c = load_config(w.config(agents_config(w, "{ manifest: teller.yaml, script: teller.script.yaml }")), test_env());
    INFO((c ? std::string() : c.error().message));
    REQUIRE(c);
    REQUIRE(c->agents.size() == 1);
    CHECK(c->agents[0].name == "teller");
    CHECK(c->agents[0].scripted->turns.size() == 1);
    CHECK_THAT(summary(*c), Catch::Contains("agent       teller 1.0.0"));
}

TEST_CASE("an agent with a grant that requires approval gets a warning while no principal is an operator") {
    workspace w;
    w.standard_files();
    auto text = agents_config(w, "{ manifest: teller.yaml, script: teller.script.yaml }");
    auto yaml = airlock::testing::file_text(w.dir.path() / "teller.yaml");
    auto at = yaml.find("mutates: false,");
    REQUIRE(at != std::string::npos);
    w.write("teller.yaml", yaml.replace(at, 15, "mutates: false, requires_approval: true,"));
    auto principal = [](bool op) {
        return std::string("principals:\n  - { name: alice, token_file: secrets/alice.token, manifest: grants/alice.yaml") +
               (op ? ", operator: true" : "") + " }\n";
    };
    auto warns = [](config const& c) {
        return std::any_of(c.warnings.begin(), c.warnings.end(), [](auto const& m) {
            return m.find("agent teller") != std::string::npos && m.find("requires approval") != std::string::npos &&
                   m.find("operator") != std::string::npos;
        });
    };
    auto none = load_config(w.config(text + principal(false)), test_env());
    INFO((none ? std::string() : none.error().message));
    REQUIRE(none);
    CHECK(warns(*none));
    auto with_operator = load_config(w.config(text + principal(true)), test_env());
    REQUIRE(with_operator);
    CHECK_FALSE(warns(*with_operator));
}

TEST_CASE("an agent needs exactly one of script and provider") {
    workspace w;
    CHECK(first_problem(w.config(agents_config(w, "{ manifest: teller.yaml }"))) ==
          "agents[0] needs script (the scripted provider plays that file) or provider (a name from the providers section)");
    CHECK(first_code(w.config(agents_config(w, "{ manifest: teller.yaml, script: teller.script.yaml, provider: x }"))) ==
          "conflicting_fields");
}

TEST_CASE("an agent naming a provider the providers section lacks is refused naming it") {
    workspace w;
    CHECK(first_problem(w.config(agents_config(w, "{ manifest: teller.yaml, provider: gpt }"))) ==
          "agents[0].provider names \"gpt\", which the providers section does not define");
}

TEST_CASE("a mistake in an agent's script is reported with the agent's field and the script's") {
    workspace w;
    auto text = agents_config(w, "{ manifest: teller.yaml, script: teller.script.yaml }");
    w.write("teller.script.yaml", "turns:\n  - call: { arguments: {} }\n");
    auto problem = first_problem(w.config(text));
    CHECK_THAT(problem, Catch::StartsWith("agents[0].script: "));
    CHECK_THAT(problem, Catch::Contains("turns[0].call.tool is required"));
}

TEST_CASE("two agents with one name are refused") {
    workspace w;
    auto text = agents_config(w, "{ manifest: teller.yaml, script: teller.script.yaml }") +
                "  - { manifest: teller.yaml, script: teller.script.yaml }\n";
    CHECK(first_code(w.config(text)) == "duplicate_name");
}

TEST_CASE("a grant an untrusted principal could never use is named in a warning") {
    workspace w;
    w.standard_files();
    auto config = [&](bool trusted) {
        return w.config(std::string(one_upstream) + "egress: [{process: node}]\nprincipals:\n  - name: alice\n"
                        "    token_file: secrets/alice.token\n    manifest: grants/alice.yaml\n    trusted: " +
                        (trusted ? "true" : "false") + "\n");
    };
    auto untrusted = load_config(config(false), test_env());
    REQUIRE(untrusted);
    REQUIRE(untrusted->warnings.size() == 1);
    CHECK_THAT(untrusted->warnings[0], Catch::Contains("principal alice") && Catch::Contains("tool://ledger/post") &&
                                           Catch::Contains("mutates: false") && !Catch::Contains("ledger/read"));
    auto trusted = load_config(config(true), test_env());
    REQUIRE(trusted);
    CHECK(trusted->warnings.empty());
}

TEST_CASE("the warning for a grant an untrusted principal can never use names protected_fields first") {
    workspace w;
    w.standard_files();
    auto c = load_config(w.config(std::string(one_upstream) + "egress: [{process: node}]\nprincipals:\n  - name: alice\n"
                                  "    token_file: secrets/alice.token\n    manifest: grants/alice.yaml\n"),
                         test_env());
    REQUIRE(c);
    REQUIRE(c->warnings.size() == 1);
    // The fix that keeps the policy first; then, said to weaken it, the two that open more.
    CHECK(c->warnings[0] ==
          "principal alice: every call to tool://ledger/post would be refused (tool://ledger/post mutates, its "
          "arguments are untrusted and the grant declares no protected_fields), so it is not listed. To let alice call "
          "it, name the arguments that say what it acts on in protected_fields with `allowed_sources: "
          "[\"principal:alice\"]` (e.g. `protected_fields: [{path: /account, allowed_sources: [\"principal:alice\"]}]`); "
          "or, weakening the policy, grant it with `mutates: false` if it only reads, or mark the principal `trusted: "
          "true`");
}

TEST_CASE("a mutating grant whose protected fields accept the principal's source is usable and not warned about") {
    workspace w;
    w.standard_files();
    w.write("grants/alice.yaml", R"yaml(apiVersion: airlock/v1
kind: Agent
metadata: { name: alice-grants, version: "1" }
spec:
  tools:
    - ref: tool://ledger/post
      protected_fields: [{path: /account, allowed_sources: ["principal:alice"]}]
  budgets: {}
)yaml");
    auto c = load_config(w.config(std::string(one_upstream) + "egress: [{process: node}]\nprincipals:\n  - name: alice\n"
                                  "    token_file: secrets/alice.token\n    manifest: grants/alice.yaml\n"),
                         test_env());
    REQUIRE(c);
    CHECK(c->warnings.empty());
}

TEST_CASE("an upstream without a prefix beside others is named in a warning") {
    workspace w;
    auto c = load_config(w.config(R"yaml(
upstreams:
  - { name: ledger, prefix: none, stdio: [node, ledger.js] }
  - { name: bank, stdio: [node, bank.js] }
egress: [{process: node}]
)yaml"),
                         test_env());
    REQUIRE(c);
    REQUIRE(c->warnings.size() == 1);
    CHECK_THAT(c->warnings[0], Catch::Contains("upstream ledger") && Catch::Contains("prefix: none"));
    auto alone = load_config(w.config("upstreams:\n  - { name: ledger, prefix: none, stdio: [node, ledger.js] }\n"
                                      "egress: [{process: node}]\n"),
                             test_env());
    REQUIRE(alone);
    CHECK(alone->warnings.empty());
}
