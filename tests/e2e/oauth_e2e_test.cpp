// airlock as an OAuth 2.1 resource server, end to end: a real authorization server (oidc-provider,
// tests/fixtures/oauth/issuer.mjs) issues JWT access tokens for airlock's resource, the official
// SDK client runs the whole MCP authorization flow against `airlock serve` in both eras, and every
// bad token an attacker or a broken client sends gets the exact status and challenge.
#include "tests/support/child_process.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/node_peers.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr char const* alice_token = "oauth-e2e-alice-0123456789abcdef";
constexpr char const* introspection_secret = "rs-secret-0123456789abcdef";

std::string fixture(std::string const& name) { return std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/oauth/" + name; }

// A port nobody listens on now: airlock's resource URL names it before airlock starts (the issuer
// must know the resource, and airlock the issuer).
std::uint16_t free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    ::close(fd);
    return ntohs(a.sin_port);
}

// A node fixture that announces itself with one JSON line on stdout once listening, and stops when
// its stdin closes (then SIGTERM), as the fixtures under tests/fixtures/oauth do.
struct announced_peer {
    std::unique_ptr<child_process> child;
    json::object announced;

    announced_peer(std::vector<std::string> argv, std::vector<std::string> env, char const* what) {
        child = std::make_unique<child_process>(std::move(argv), std::move(env), child_stdin::pipe);
        auto const until = std::chrono::steady_clock::now() + 30s;
        while (std::chrono::steady_clock::now() < until) {
            auto out = child->stdout_text();
            if (auto nl = out.find('\n'); nl != std::string::npos) {
                announced = json::parse(out.substr(0, nl)).as_object();
                return;
            }
            std::this_thread::sleep_for(50ms);
        }
        INFO(child->stderr_text());
        FAIL(what << " did not start");
    }
    ~announced_peer() { stop(); }
    announced_peer(announced_peer const&) = delete;
    announced_peer& operator=(announced_peer const&) = delete;
    void stop() {
        if (!child) return;
        child->close_stdin();
        child->signal(SIGTERM);
        child->wait(10s);
        child.reset();
    }
    std::string field(char const* name) const { return std::string(announced.at(name).as_string()); }
};

std::vector<std::string> node_fixture(char const* name, std::vector<std::string> const& args) {
    std::vector<std::string> argv{peers::node(), fixture(name)};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

// oidc-provider on a free port.
struct issuer_process : announced_peer {
    std::string issuer = field("issuer");

    explicit issuer_process(std::vector<std::string> const& args, std::vector<std::string> env = {})
        : announced_peer(node_fixture("issuer.mjs", args), std::move(env), "the issuer") {}
};

// An airlock whose principal carol is reached only by OAuth tokens with sub "carol", beside alice's
// static bearer token; both are granted everything__get-sum and everything__echo.
struct oauth_deployment {
    temp_dir dir{"airlock-oauth"};
    std::uint16_t port = free_port();
    std::string resource = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
    fs::path keys = dir.path() / "issuer-keys.json";
    std::unique_ptr<issuer_process> idp;
    std::unique_ptr<node_peer> echo;  // an HTTP upstream that says which headers reach it
    std::unique_ptr<child_process> airlock;

    explicit oauth_deployment(std::string const& oauth_extra = "", std::string const& access_ttl = "300",
                              bool with_echo = false, std::vector<std::string> const& issuer_extra = {},
                              std::vector<std::string> issuer_env = {}) {
        if (with_echo) echo = std::make_unique<node_peer>(std::vector<std::string>{fixture("header_echo_server.mjs")},
                                                          std::vector<std::string>{"PORT=0"});
        std::vector<std::string> issuer_args{"--resource", resource,     "--scopes",  "mcp:tools", "--access-ttl",
                                             access_ttl, "--keys",     keys.string(), "--subject", "carol"};
        issuer_args.insert(issuer_args.end(), issuer_extra.begin(), issuer_extra.end());
        idp = std::make_unique<issuer_process>(issuer_args, std::move(issuer_env));
        auto const issuer_port = idp->issuer.substr(idp->issuer.rfind(':') + 1);
        std::ofstream(dir.path() / "alice.token") << alice_token << "\n";
        ::chmod((dir.path() / "alice.token").c_str(), 0600);
        // The introspection client's secret, for a deployment whose issuer issues opaque tokens.
        std::ofstream(dir.path() / "rs.secret") << introspection_secret << "\n";
        ::chmod((dir.path() / "rs.secret").c_str(), 0600);
        std::ofstream(dir.path() / "grants.yaml") << R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: desk, version: "1" }
spec:
  tools:
    - ref: tool://everything/get.sum
      mutates: false
    - ref: tool://everything/echo
      mutates: false
    - ref: tool://echo/headers
      mutates: false
  budgets: {}
)";
        std::ofstream(dir.path() / "airlock.yaml")
            << "journal: { dir: journal }\n"
            << "upstreams:\n  - name: everything\n    stdio: { argv: [\"" << peers::node() << "\", \"" << peers::everything()
            << "\", stdio] }\n"
            << (echo ? "  - name: echo\n    url: " + echo->url() + "\n    headers: { X-Upstream-Key: configured-for-echo }\n"
                     : std::string())
            << "egress:\n  - process: \"" << peers::node() << "\"\n  - http://127.0.0.1:" << issuer_port << "\n"
            << (echo ? "  - http://127.0.0.1:" + std::to_string(echo->port) + "\n" : std::string())
            << "principals:\n"
            << "  - name: alice\n    token_file: alice.token\n    manifest: grants.yaml\n"
            << "  - name: carol\n    manifest: grants.yaml\n"
            << "auth:\n  oauth:\n    resource: " << resource << "\n    issuer: " << idp->issuer << "\n"
            << "    scopes_supported: [mcp:tools]\n    required_scopes: [mcp:tools]\n"
            << "    principals: { carol: carol }\n"
            << oauth_extra;
        airlock = std::make_unique<child_process>(std::vector<std::string>{
            AIRLOCK_BINARY, "serve", "--config", (dir.path() / "airlock.yaml").string(), "--listen",
            "127.0.0.1:" + std::to_string(port)});
        REQUIRE(airlock->wait_for_stderr_line("listening on http://", 30s));
        // Ready once the issuer's keys are held (and the upstream met).
        for (int i = 0; i < 300 && http_get(port, "/readyz").status != 200; ++i) std::this_thread::sleep_for(100ms);
        INFO(airlock->stderr_text());
        REQUIRE(http_get(port, "/readyz").status == 200);
    }
    ~oauth_deployment() {
        if (airlock) {
            airlock->signal(SIGTERM);
            airlock->wait(20s);
        }
    }

    // A token from the issuer's own keys, as tests/fixtures/oauth/sign_token.mjs signs it.
    std::string sign(json::object claims, std::vector<std::string> more = {}) const {
        std::vector<std::string> argv{peers::node(), fixture("sign_token.mjs"), "--keys", keys.string(), "--claims",
                                      json::serialize(claims)};
        argv.insert(argv.end(), more.begin(), more.end());
        auto r = run_command(argv, 30s);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        auto t = r.out;
        while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
        return t;
    }
    json::object claims() const {
        return {{"iss", idp->issuer}, {"sub", "carol"}, {"aud", resource}, {"scope", "mcp:tools"}, {"jti", "e2e-token-1"}};
    }
    std::string metadata_url() const {
        return "http://127.0.0.1:" + std::to_string(port) + "/.well-known/oauth-protected-resource/mcp";
    }
};

std::string header(raw_response const& r, std::string const& name) {
    std::regex const line("(^|\r\n)" + name + ":[ \t]*([^\r\n]*)", std::regex::icase);
    std::smatch m;
    return std::regex_search(r.head, m, line) ? m[2].str() : std::string();
}

json::object run_client(oauth_deployment const& d, std::vector<std::string> args) {
    std::vector<std::string> argv{peers::node(), fixture("sdk_oauth_client.mjs"), d.resource};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_command(argv, 120s);
    INFO("client stdout: " << r.out << "\nclient stderr: " << r.err << "\nissuer: " << d.idp->child->stderr_text()
                          << "\nairlock: " << d.airlock->stderr_text());
    REQUIRE(r.exit_code == 0);
    auto out = json::parse(r.out.substr(0, r.out.find('\n'))).as_object();
    return out;
}

// The flow's steps, in order, as the client read them off the wire.
// The client's fourth step is "registered CLIENT_ID" after DCR, or "client id metadata document URL".
void check_flow(oauth_deployment const& d, json::object const& out, bool refreshed,
                std::string const& client_step = "registered ") {
    std::vector<std::string> flow;
    for (auto const& s : out.at("flow").as_array()) flow.emplace_back(s.as_string());
    std::ostringstream text;
    for (auto const& s : flow) text << s << "\n";
    INFO(text.str());
    REQUIRE(flow.size() >= 8);
    CHECK(flow[0] == "401 Bearer realm=\"airlock\", resource_metadata=\"" + d.metadata_url() + "\", scope=\"mcp:tools\"");
    CHECK(flow[1] == "resource metadata " + d.metadata_url());
    CHECK(flow[2] == "authorization server " + d.idp->issuer);
    CHECK(flow[3].rfind(client_step, 0) == 0);
    CHECK(flow[4] == "authorized");
    CHECK(flow[5] == "token");
    CHECK(flow[6] == "tools/list");
    CHECK(flow[7] == "tools/call");
    if (refreshed) {
        CHECK(std::find(flow.begin(), flow.end(), "refreshed") != flow.end());
        CHECK(out.at("refreshes").as_int64() >= 1);
    }
}

// A self-signed certificate for IP:127.0.0.1, made with openssl in a directory of its own.
struct loopback_certificate {
    temp_dir dir{"airlock-cimd"};
    std::string cert = (dir.path() / "cert.pem").string();
    std::string key = (dir.path() / "key.pem").string();

    loopback_certificate() {
        auto made = run_command({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                                 "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                                 "-addext", "subjectAltName=IP:127.0.0.1"},
                                30s);
        INFO(made.err);
        REQUIRE(made.exit_code == 0);
    }
};

// An HTTPS host on 127.0.0.1 with one Client ID Metadata Document (client_metadata_server.mjs),
// under a self-signed certificate that the issuer is told to trust.
struct metadata_host : loopback_certificate, announced_peer {
    std::string url = field("url");

    metadata_host()
        : announced_peer(node_fixture("client_metadata_server.mjs", {"--tls-cert", cert, "--tls-key", key}), {},
                         "the metadata host") {}
};

}  // namespace

TEST_CASE("OAuth: the SDK client finds the metadata from the 401, registers, logs in, calls a tool and refreshes (2025-11-25)",
          "[oauth][peers]") {
    // No clock skew: the client's wait past the token's expiry must find it expired.
    oauth_deployment d("    clock_skew: 0s\n", "4");
    auto out = run_client(d, {"--tool", "everything__get-sum", "--args", R"({"a":2,"b":3})", "--refresh"});
    check_flow(d, out, true);
    CHECK(out.at("registrations").as_int64() == 1);
    std::vector<std::string> tools;
    for (auto const& t : out.at("tools").as_array()) tools.emplace_back(t.as_string());
    CHECK(tools == std::vector<std::string>{"everything__echo", "everything__get-sum"});
    CHECK_THAT(json::serialize(out.at("result")), Catch::Contains("The sum of 2 and 3 is 5."));
}

TEST_CASE("OAuth: the same flow in the 2026-07-28 era: tokens from the SDK's auth(), modern requests with them",
          "[oauth][peers]") {
    oauth_deployment d("    clock_skew: 0s\n", "4");
    auto out = run_client(d, {"--era", "modern", "--tool", "everything__get-sum", "--args", R"({"a":2,"b":3})", "--refresh"});
    check_flow(d, out, true);
    CHECK_THAT(json::serialize(out.at("result")), Catch::Contains("The sum of 2 and 3 is 5."));
}

TEST_CASE("OAuth: the resource metadata says where to log in, at both paths, with the 401 pointing at it", "[oauth][peers]") {
    oauth_deployment d;
    for (auto path : {"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}) {
        INFO(path);
        auto r = http_get(d.port, path);
        REQUIRE(r.status == 200);
        auto doc = json::parse(r.body).as_object();
        CHECK(doc.at("resource").as_string() == d.resource);
        CHECK(doc.at("authorization_servers") == json::array{json::value(d.idp->issuer)});
        CHECK(doc.at("scopes_supported") == json::array{"mcp:tools"});
        CHECK(doc.at("bearer_methods_supported") == json::array{"header"});
    }
    auto request = modern_request(d.port, "", "tools/list", "", "");
    auto const auth = request.find("Authorization:");
    REQUIRE(auth != std::string::npos);
    request.erase(auth, request.find("\r\n", auth) + 2 - auth);
    auto none = raw_http(d.port, request);
    CHECK(none.status == 401);
    CHECK(header(none, "WWW-Authenticate") ==
          "Bearer realm=\"airlock\", resource_metadata=\"" + d.metadata_url() + "\", scope=\"mcp:tools\"");
}

TEST_CASE("OAuth: every bad token gets its exact status and challenge, at /mcp and /v1; a good one and a static token pass",
          "[oauth][peers]") {
    oauth_deployment d;
    auto const c = d.claims();
    auto with = [&](json::object extra) {
        auto o = c;
        for (auto& [k, v] : extra) o[k] = v;
        return o;
    };
    auto const now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::string const invalid = "Bearer realm=\"airlock\", error=\"invalid_token\", error_description=\"";
    std::string const tail = "\", resource_metadata=\"" + d.metadata_url() + "\", scope=\"mcp:tools\"";
    struct row {
        char const* what;
        std::string token;
        int status;
        std::string challenge;
    };
    std::vector<row> const rows = {
        {"a good token", d.sign(c, {"--ttl", "300"}), 200, ""},
        {"expired", d.sign(with({{"iat", now - 900}, {"exp", now - 600}})), 401, invalid + "the access token has expired" + tail},
        {"not yet valid", d.sign(with({{"iat", now}, {"nbf", now + 600}, {"exp", now + 900}})), 401,
         invalid + "the access token is not valid yet" + tail},
        {"another issuer", d.sign(with({{"iss", "http://127.0.0.1:1/other"}}), {"--ttl", "300"}), 401,
         invalid + "the access token was not issued by an authorization server of this resource" + tail},
        {"another resource's token", d.sign(with({{"aud", "http://127.0.0.1:1/mcp"}}), {"--ttl", "300"}), 401,
         invalid + "the access token was issued for another resource" + tail},
        {"an unknown kid", d.sign(c, {"--ttl", "300", "--header", R"({"kid":"rotated-away"})"}), 401,
         invalid + "the access token is signed with a key its issuer does not publish" + tail},
        {"alg none", d.sign(c, {"--ttl", "300", "--mode", "none"}), 401,
         invalid + "the access token is signed with an algorithm airlock does not accept" + tail},
        {"RS256 to HS256 confusion", d.sign(c, {"--ttl", "300", "--mode", "hs256-confusion"}), 401,
         invalid + "the access token is signed with an algorithm airlock does not accept" + tail},
        {"a tampered payload", d.sign(c, {"--ttl", "300", "--mode", "tamper"}), 401,
         invalid + "the access token's signature does not verify" + tail},
        {"a missing scope", d.sign(with({{"scope", "profile"}}), {"--ttl", "300"}), 403,
         "Bearer realm=\"airlock\", error=\"insufficient_scope\", scope=\"mcp:tools\", resource_metadata=\"" +
             d.metadata_url() + "\""},
        {"a subject nobody is mapped to", d.sign(with({{"sub", "mallory"}}), {"--ttl", "300"}), 403, ""},
        {"alice's static token", alice_token, 200, ""},
    };
    for (auto const& r : rows) {
        INFO(r.what);
        auto at_mcp = modern_post(d.port, r.token, "tools/list", "", "");
        CHECK(at_mcp.status == r.status);
        CHECK(header(at_mcp, "WWW-Authenticate") == r.challenge);
        auto at_v1 = raw_http(d.port, "GET /v1/runs HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(d.port) +
                                          "\r\nAuthorization: Bearer " + r.token + "\r\nConnection: close\r\n\r\n");
        CHECK(at_v1.status == r.status);
        CHECK(header(at_v1, "WWW-Authenticate") == r.challenge);
    }
    // A token in the query string is refused whatever it is, and the header beside it does not help.
    auto good = d.sign(c, {"--ttl", "300"});
    auto query = raw_http(d.port, "POST /mcp?access_token=" + good + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(d.port) +
                                      "\r\nAuthorization: Bearer " + good +
                                      "\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
    CHECK(query.status == 400);
    CHECK(header(query, "WWW-Authenticate") == "Bearer realm=\"airlock\", error=\"invalid_request\"");
    // Each refusal was counted by its reason.
    auto metrics = http_get(d.port, "/metrics").body;
    for (auto result : {"ok", "expired", "not_yet_valid", "bad_issuer", "bad_audience", "unknown_kid", "bad_alg",
                        "bad_signature", "insufficient_scope", "unmapped_subject"}) {
        INFO(result);
        CHECK_THAT(metrics, Catch::Contains(std::string("airlock_oauth_authentications_total{result=\"") + result + "\"}"));
    }
    // And the log names the unmapped subject, never a token.
    auto log = d.airlock->stderr_text();
    CHECK_THAT(log, Catch::Contains("no principal is mapped to sub of 'mallory'"));
    for (auto const& r : rows) CHECK(log.find(r.token) == std::string::npos);
}

TEST_CASE("OAuth: the journal records who called with which token id, never the token, and the token goes nowhere upstream",
          "[oauth][peers]") {
    oauth_deployment d;
    auto token = d.sign(d.claims(), {"--ttl", "300"});
    auto call = modern_post(d.port, token, "tools/call", "everything__echo",
                            R"("name":"everything__echo","arguments":{"message":"hello from carol"},)");
    INFO(call.body);
    REQUIRE(call.status == 200);
    CHECK_THAT(call.body, Catch::Contains("hello from carol"));
    d.airlock->signal(SIGTERM);
    d.airlock->wait(20s);
    d.airlock.reset();
    std::ifstream in(d.dir.path() / "journal" / "data.mdb", std::ios::binary);
    std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(raw.find("hello from carol") != std::string::npos);
    CHECK(raw.find(R"("subject":"carol")") != std::string::npos);
    CHECK(raw.find(R"("token_id":"e2e-token-1")") != std::string::npos);
    CHECK(raw.find("\"issuer\":\"" + d.idp->issuer + "\"") != std::string::npos);
    // Not the token, nor its signature (the part an attacker could not make).
    CHECK(raw.find(token) == std::string::npos);
    CHECK(raw.find(token.substr(token.rfind('.') + 1)) == std::string::npos);
}

TEST_CASE("OAuth: across an issuer outage the cached keys serve until their max age, then tokens fail closed and /readyz says why",
          "[oauth][peers]") {
    oauth_deployment d("    jwks_refresh: 1s\n    jwks_max_age: 4s\n");
    auto token = d.sign(d.claims(), {"--ttl", "300"});
    REQUIRE(modern_post(d.port, token, "tools/list", "", "").status == 200);
    d.idp->stop();
    // The keys fetched last still serve: the issuer being down is not the token being bad.
    CHECK(modern_post(d.port, token, "tools/list", "", "").status == 200);
    int status = 0;
    for (int i = 0; i < 100; ++i) {  // at most 10 s; the keys expire 4 s after their last fetch
        status = modern_post(d.port, token, "tools/list", "", "").status;
        if (status == 401) break;
        std::this_thread::sleep_for(100ms);
    }
    REQUIRE(status == 401);
    auto ready = http_get(d.port, "/readyz");
    CHECK(ready.status == 503);
    auto checks = json::parse(ready.body).at("checks").as_object();
    auto const& issuer_check = checks.at("oauth:" + d.idp->issuer).as_object();
    CHECK(issuer_check.at("ok") == false);
    CHECK(issuer_check.at("state") == "keys_expired");
    // A static token is not the issuer's: it still works.
    CHECK(modern_post(d.port, alice_token, "tools/list", "", "").status == 200);
}

TEST_CASE("OAuth: airlock check --online fetches each issuer's metadata and keys, and names the issuer it cannot reach",
          "[oauth][peers]") {
    oauth_deployment d;
    auto const config = (d.dir.path() / "airlock.yaml").string();
    auto ok = run_command({AIRLOCK_BINARY, "check", "--online", config}, 60s);
    INFO(ok.out << ok.err);
    CHECK(ok.exit_code == 0);
    CHECK_THAT(ok.out, Catch::Contains("oauth       resource " + d.resource));
    CHECK_THAT(ok.out, Catch::Contains("carol  3 tools granted by desk 1"));
    CHECK_THAT(ok.out, Catch::Contains("OAuth only"));
    CHECK_THAT(ok.out, Catch::Contains("ok oauth issuer " + d.idp->issuer + ": 3 signing key(s) from " + d.idp->issuer));
    d.idp->stop();
    auto down = run_command({AIRLOCK_BINARY, "check", "--online", config}, 60s);
    INFO(down.out << down.err);
    CHECK(down.exit_code == 1);
    CHECK_THAT(down.out, Catch::Contains(config + ": error: auth.oauth issuer " + d.idp->issuer + ": "));
    // Without --online nothing is contacted, and the configuration is still valid.
    CHECK(run_command({AIRLOCK_BINARY, "check", config}, 60s).exit_code == 0);
}

TEST_CASE("OAuth: the client's token never travels upstream; the upstream gets only the headers configured for it",
          "[oauth][peers]") {
    oauth_deployment d("", "300", true);
    auto token = d.sign(d.claims(), {"--ttl", "300"});
    auto call = modern_post(d.port, token, "tools/call", "echo__headers", R"("name":"echo__headers","arguments":{},)");
    INFO(call.body << "\n" << d.airlock->stderr_text());
    REQUIRE(call.status == 200);
    // The tool's text is the JSON object of the headers it saw. The configured header arrived; its
    // value is a configured secret, which airlock hides in whatever comes back.
    CHECK_THAT(call.body, Catch::Contains(R"(\"x-upstream-key\":\"[redacted]\")"));
    CHECK(call.body.find(token) == std::string::npos);
    CHECK(call.body.find(token.substr(token.rfind('.') + 1)) == std::string::npos);
    CHECK_THAT(call.body, !Catch::Contains("authorization"));
    // Nor did any request of airlock's to that upstream (initialize, tools/list) carry it.
    d.airlock->signal(SIGTERM);
    d.airlock->wait(20s);
    d.airlock.reset();
    CHECK_THAT(d.echo->child->stderr_text(), !Catch::Contains("header-echo: authorization"));
}

TEST_CASE("OAuth: opaque access tokens are introspected at the authorization server: the SDK flow in both eras, a made-up token refused",
          "[oauth][peers]") {
    std::string const introspection = "    clock_skew: 0s\n    introspection:\n      client_id: rs\n"
                                      "      client_secret: { file: rs.secret }\n";
    oauth_deployment d(introspection, "4", false,
                       {"--opaque", "--introspection-client", std::string("rs:") + introspection_secret});
    auto legacy = run_client(d, {"--tool", "everything__get-sum", "--args", R"({"a":2,"b":3})", "--refresh"});
    check_flow(d, legacy, true);
    CHECK_THAT(json::serialize(legacy.at("result")), Catch::Contains("The sum of 2 and 3 is 5."));
    auto modern = run_client(d, {"--era", "modern", "--tool", "everything__get-sum", "--args", R"({"a":2,"b":3})"});
    check_flow(d, modern, false);

    auto made_up = modern_post(d.port, "opaque-but-nobody-issued-it-0123456789", "tools/list", "", "");
    CHECK(made_up.status == 401);
    CHECK(header(made_up, "WWW-Authenticate") ==
          "Bearer realm=\"airlock\", error=\"invalid_token\", error_description=\"the authorization server says the access "
          "token is not active\", resource_metadata=\"" + d.metadata_url() + "\", scope=\"mcp:tools\"");
    auto metrics = http_get(d.port, "/metrics").body;
    CHECK_THAT(metrics, Catch::Contains("airlock_oauth_authentications_total{result=\"inactive\"}"));
    CHECK_THAT(metrics, Catch::Contains("airlock_oauth_authentications_total{result=\"ok\"}"));
    // The introspection client's secret is in no log line.
    CHECK(d.airlock->stderr_text().find(introspection_secret) == std::string::npos);
}

TEST_CASE("OAuth: an upstream's scope narrows what a token sees and calls; the principal's static token is not narrowed",
          "[oauth][peers]") {
    oauth_deployment d("    upstream_scopes: { echo: \"mcp:echo\" }\n", "300", true);
    // The metadata advertises the upstream's scope beside the required one.
    auto prm = json::parse(http_get(d.port, "/.well-known/oauth-protected-resource/mcp").body).as_object();
    CHECK(prm.at("scopes_supported") == json::array{"mcp:tools", "mcp:echo"});

    auto names = [&](std::string const& token) {
        auto list = modern_post(d.port, token, "tools/list", "", "");
        INFO(list.body);
        REQUIRE(list.status == 200);
        std::vector<std::string> out;
        std::regex const name("\"name\":\"([a-z_-]+__[a-z._-]+)\"");
        for (std::sregex_iterator it(list.body.begin(), list.body.end(), name), end; it != end; ++it)
            out.push_back((*it)[1].str());
        return out;
    };
    auto has = [](std::vector<std::string> const& v, char const* n) { return std::find(v.begin(), v.end(), n) != v.end(); };

    // Without mcp:echo, carol's token lists everything's tools and none of echo's ...
    auto narrow = d.sign(d.claims(), {"--ttl", "300"});
    auto seen = names(narrow);
    CHECK(has(seen, "everything__echo"));
    CHECK_FALSE(has(seen, "echo__headers"));
    // ... and calling one is refused with the scope to ask for; nothing reaches the upstream.
    auto refused = modern_post(d.port, narrow, "tools/call", "echo__headers", R"("name":"echo__headers","arguments":{},)");
    INFO(refused.body);
    REQUIRE(refused.status == 200);
    CHECK_THAT(refused.body, Catch::Contains("\"isError\":true"));
    CHECK_THAT(refused.body, Catch::Contains("needs the OAuth scope 'mcp:echo'"));
    CHECK_THAT(refused.body, !Catch::Contains("x-upstream-key"));
    // A tool of an upstream that needs no scope still answers the same token.
    auto everything = modern_post(d.port, narrow, "tools/call", "everything__echo",
                                  R"("name":"everything__echo","arguments":{"message":"still mine"},)");
    CHECK_THAT(everything.body, Catch::Contains("still mine"));

    // With mcp:echo the same subject sees and calls it.
    auto claims = d.claims();
    claims["scope"] = "mcp:tools mcp:echo";
    claims["jti"] = "e2e-token-wide";
    auto wide = d.sign(claims, {"--ttl", "300"});
    CHECK(has(names(wide), "echo__headers"));
    auto called = modern_post(d.port, wide, "tools/call", "echo__headers", R"("name":"echo__headers","arguments":{},)");
    CHECK_THAT(called.body, Catch::Contains("x-upstream-key"));
    // Alice's static bearer token is not an OAuth token: scopes do not apply to it.
    CHECK(has(names(alice_token), "echo__headers"));

    // The journal keeps the refusal with its reason and each token's scopes, not the tokens.
    d.airlock->signal(SIGTERM);
    d.airlock->wait(20s);
    d.airlock.reset();
    std::ifstream in(d.dir.path() / "journal" / "data.mdb", std::ios::binary);
    std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(raw.find("lacks the scope 'mcp:echo' that upstream echo needs") != std::string::npos);
    CHECK(raw.find(R"("scopes":["mcp:tools","mcp:echo"])") != std::string::npos);
    CHECK(raw.find(narrow) == std::string::npos);
    CHECK(raw.find(wide) == std::string::npos);
}

TEST_CASE("OAuth: a client known by its Client ID Metadata Document URL logs in without registering; its tokens serve like any",
          "[oauth][peers]") {
    metadata_host host;
    oauth_deployment d("", "300", false, {}, {"NODE_EXTRA_CA_CERTS=" + host.cert});
    auto out = run_client(d, {"--client-metadata-url", host.url, "--tool", "everything__get-sum", "--args",
                              R"({"a":20,"b":22})"});
    // The issuer advertised client_id_metadata_document_supported, so the client used its URL as the
    // client id instead of registering; the issuer fetched the document to learn the redirect URI.
    check_flow(d, out, false, "client id metadata document " + host.url);
    CHECK(out.at("registrations").as_int64() == 0);
    CHECK_THAT(host.child->stderr_text(), Catch::Contains("client-metadata: fetched"));
    CHECK_THAT(json::serialize(out.at("result")), Catch::Contains("The sum of 20 and 22 is 42."));
}
