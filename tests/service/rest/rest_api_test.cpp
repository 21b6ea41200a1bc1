// The REST API over a real HTTP server and a real LMDB journal: the door (token, Origin), the read
// routes against runs written to the journal, problem documents for every kind of bad request, and
// the OpenAPI document checked against the route table.
#include "service/rest/rest_api.hpp"

#include "core/canonical_json.hpp"
#include "core/manifest.hpp"
#include "mcp/client/router.hpp"
#include "service/agents/providers/scripted.hpp"
#include "service/agents/runner.hpp"
#include "service/rest/runner_control.hpp"
#include "store/lmdb_store.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/listed_runs.hpp"
#include "tests/support/run_awaitable.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <functional>
#include <set>
#include <sstream>
#include <thread>

using namespace airlock;
using namespace airlock::service;
using namespace airlock::testing;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr char const* token = "rest-test-token-0123456789";  // alice's
constexpr char const* bob_token = "rest-test-token-bob-0123456789";
constexpr char const* carol_token = "rest-test-token-carol-0123456789";  // carol is an operator

// An agent runtime that does what it is asked and remembers the decisions it was given.
struct recording_runtime final : run_control {
    std::vector<std::string> decisions;  // "run effect approve|reject reviewer"
    std::vector<agent_info> agents() const override { return {}; }
    asio::awaitable<core::result<run_started>> async_start(run_start_request) override {
        co_return core::make_error("unknown_agent", "no agents here");
    }
    asio::awaitable<core::result<void>> async_cancel(std::string) override { co_return core::result<void>{}; }
    asio::awaitable<core::result<json::object>> async_replay(std::string run_id) override {
        json::object o;
        o["run_id"] = run_id;
        co_return o;
    }
    asio::awaitable<core::result<void>> async_decide(std::string run_id, std::string effect_key, bool approve,
                                                     std::string, std::string reviewer) override {
        decisions.push_back(run_id + " " + effect_key + " " + (approve ? "approve" : "reject") + " " + reviewer);
        co_return core::result<void>{};
    }
};

struct rest_fixture {
    temp_dir dir{"airlock-rest"};
    std::shared_ptr<store::lmdb_store> journal;
    asio::io_context ioc{2};
    std::shared_ptr<rest_api> api;
    std::unique_ptr<http_server> server;
    std::vector<std::thread> threads;

    std::shared_ptr<recording_runtime> runtime;

    // `control`, when given, makes the agent runtime over the fixture's executor and journal.
    using control_factory =
        std::function<std::shared_ptr<run_control>(asio::any_io_executor, std::shared_ptr<core::journal_store>)>;

    explicit rest_fixture(bool anonymous = false, bool with_runtime = false, control_factory control = nullptr) {
        store::lmdb_options lo;
        lo.directory = dir.path() / "journal";
        auto s = store::lmdb_store::open(lo);
        REQUIRE(s);
        journal = std::shared_ptr<store::lmdb_store>(std::move(*s));
        rest_api_options o;
        o.journal = journal;
        o.authenticate = [](std::string_view t) -> std::optional<std::string> {
            if (t == token) return std::string("alice");
            if (t == bob_token) return std::string("bob");
            if (t == carol_token) return std::string("carol");
            return std::nullopt;
        };
        o.is_operator = [](std::string_view who) { return who == "carol"; };
        o.allow_anonymous = anonymous;
        if (with_runtime) o.runs = runtime = std::make_shared<recording_runtime>();
        if (control) o.runs = control(ioc.get_executor(), journal);
        o.allowed_origins = {"http://127.0.0.1:9"};
        o.tools = [](std::string principal) -> asio::awaitable<std::vector<json::object>> {
            json::object t;
            t["name"] = "ledger__read";
            t["description"] = "for " + principal;
            std::vector<json::object> out{t};
            co_return out;
        };
        api = std::make_shared<rest_api>(o);
        http_server_options ho;
        ho.port = 0;
        auto a = api;
        http_response_handler h = [a](http_request& req) -> asio::awaitable<http_response> {
            co_return co_await a->async_handle(req);
        };
        server = std::make_unique<http_server>(ioc, ho, h);
        server->listen();
        server->start();
        for (int i = 0; i < 2; ++i) threads.emplace_back([this] { ioc.run(); });
    }
    ~rest_fixture() {
        server->stop();
        ioc.stop();
        for (auto& t : threads) t.join();
        journal->close();
    }
    std::uint16_t port() const { return server->local_endpoint().port(); }

    raw_response request(std::string const& method, std::string const& target, std::string const& body = {},
                         std::string const& extra_headers = {}, bool with_token = true) {
        return request_with(with_token ? token : "", method, target, body, extra_headers);
    }
    raw_response request_with(std::string const& bearer, std::string const& method, std::string const& target,
                              std::string const& body = {}, std::string const& extra_headers = {}) {
        std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
        if (!bearer.empty()) r += "Authorization: Bearer " + bearer + "\r\n";
        r += extra_headers;
        if (!body.empty() || method == "POST")
            r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
        r += "\r\n" + body;
        return raw_http(port(), r);
    }

    // A run as the agent runtime writes one: admitted, a model effect, a tool effect, an approval, sealed.
    // `owner` as the runtime journals it (body.principal); "" journals none, as `airlock run` does.
    std::string write_run(std::string const& agent, std::string const& answer, bool seal = true,
                          std::string const& owner = "alice") {
        static int n = 0;
        std::string id = "01TESTRUN" + std::to_string(++n) + agent;
        auto records = std::vector<core::new_record>{};
        json::object admitted;
        admitted["agent"] = json::object{{"name", agent}, {"version", "1.0.0"}, {"digest", "ab"}};
        admitted["input"] = "what is the balance?";
        admitted["mode"] = "agent";
        if (!owner.empty()) admitted["principal"] = owner;
        admitted["admitted_at"] = "2026-11-30T10:0" + std::to_string(n % 10) + ":00Z";
        records.push_back({core::record_kind::run_admitted, admitted});
        records.push_back({core::record_kind::effect_started,
                           json::object{{"effect_key", id + "/000001/model"}, {"target", "model"}}});
        records.push_back({core::record_kind::effect_done,
                           json::object{{"effect_key", id + "/000001/model"}, {"output", json::object{{"text", answer}}}}});
        records.push_back({core::record_kind::approval_requested,
                           json::object{{"effect_key", id + "/000002/tool"}, {"tool", "tool://ledger/post"},
                                        {"arguments", json::object{{"amount", 5}}}}});
        records.push_back({core::record_kind::approval_decided,
                           json::object{{"effect_key", id + "/000002/tool"}, {"approved", false}, {"comment", "no"}}});
        auto r = run_awaitable(journal->async_append(id, records));
        REQUIRE(r.has_value());
        if (seal) REQUIRE(run_awaitable(journal->async_seal(id, "succeeded", "answered")).has_value());
        return id;
    }

    // A gateway session's run, as the gateway admits one: the principal in its input.
    std::string write_gateway_run(std::string const& principal) {
        static int n = 0;
        std::string id = "01TESTGATEWAY" + std::to_string(++n);
        json::object admitted;
        admitted["agent"] = json::object{{"name", "desk"}, {"version", "1.0.0"}, {"digest", "cd"}};
        admitted["input"] = json::object{{"principal", principal}, {"session", ""}, {"era", "2025"}};
        admitted["admitted_at"] = "2026-11-30T11:00:00Z";
        std::vector<core::new_record> records;
        records.push_back({core::record_kind::run_admitted, admitted});
        records.push_back({core::record_kind::effect_started,
                           json::object{{"effect_key", id + "/1"}, {"target", "tool"},
                                        {"arguments", json::object{{"secret", "of " + principal}}}}});
        REQUIRE(run_awaitable(journal->async_append(id, records)).has_value());
        return id;
    }
};

json::object body_of(raw_response const& r) {
    auto v = json::parse(r.body);
    REQUIRE(v.is_object());
    return v.as_object();
}

bool has_header(raw_response const& r, std::string const& line) {
    auto head = r.head;
    for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto want = line;
    for (auto& c : want) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return head.find(want) != std::string::npos;
}

std::string first_error_field(json::object const& problem) {
    auto const* errors = problem.if_contains("errors");
    if (!errors || !errors->is_array() || errors->as_array().empty()) return "";
    return std::string(errors->as_array()[0].as_object().at("field").as_string());
}

}  // namespace

TEST_CASE("REST: a request without a valid bearer token gets 401 with a problem document and WWW-Authenticate",
          "[rest]") {
    rest_fixture f;
    auto none = f.request("GET", "/v1/runs", {}, {}, false);
    CHECK(none.status == 401);
    CHECK(has_header(none, "content-type: application/problem+json"));
    CHECK(has_header(none, "www-authenticate: bearer"));
    CHECK(body_of(none).at("status") == 401);

    auto wrong = f.request("GET", "/v1/runs", {}, "Authorization: Bearer not-the-token\r\n", false);
    CHECK(wrong.status == 401);
    CHECK(wrong.body.find("not-the-token") == std::string::npos);
}

TEST_CASE("REST: an Origin that is not allowed gets 403; an allowed one is served", "[rest]") {
    rest_fixture f;
    CHECK(f.request("GET", "/v1/runs", {}, "Origin: http://evil.example\r\n").status == 403);
    CHECK(f.request("GET", "/v1/runs", {}, "Origin: http://127.0.0.1:9\r\n").status == 200);
}

TEST_CASE("REST: every reply says it varies with Origin, a request without one included", "[rest]") {
    rest_fixture f;
    // The same request is refused with a foreign Origin and served without one: a cache must not
    // answer either with the other's reply.
    for (auto const& origin : {std::string(), std::string("Origin: http://evil.example\r\n"),
                               std::string("Origin: http://127.0.0.1:9\r\n")}) {
        auto r = f.request("GET", "/v1/runs", {}, origin);
        INFO(origin << r.head);
        CHECK(has_header(r, "vary: origin"));
    }
    CHECK(has_header(f.request("GET", "/v1/runs", {}, {}, false), "vary: origin"));
}

TEST_CASE("REST: GET /v1/runs lists runs with filters and cursor pagination", "[rest]") {
    rest_fixture f;
    auto a = f.write_run("teller", "42");
    auto b = f.write_run("teller", "43", false);
    auto c = f.write_run("clerk", "44");

    auto all = body_of(f.request("GET", "/v1/runs"));
    CHECK(all.at("runs").as_array().size() == 3);
    CHECK(all.at("next_cursor").is_null());

    auto running = body_of(f.request("GET", "/v1/runs?status=running"));
    REQUIRE(running.at("runs").as_array().size() == 1);
    CHECK(running.at("runs").as_array()[0].at("run_id").as_string() == b);

    auto clerk = body_of(f.request("GET", "/v1/runs?agent=clerk"));
    REQUIRE(clerk.at("runs").as_array().size() == 1);
    CHECK(clerk.at("runs").as_array()[0].at("run_id").as_string() == c);

    // Walk the pages one run at a time: every run once, then no cursor.
    std::set<std::string> seen;
    std::string target = "/v1/runs?limit=1";
    for (int page = 0; page < 10; ++page) {
        auto p = body_of(f.request("GET", target));
        for (auto const& r : p.at("runs").as_array()) seen.insert(std::string(r.at("run_id").as_string()));
        if (p.at("next_cursor").is_null()) break;
        target = "/v1/runs?limit=1&cursor=" + std::string(p.at("next_cursor").as_string());
    }
    CHECK(seen == std::set<std::string>{a, b, c});
}

TEST_CASE("REST: bad query parameters are refused with a problem naming the field", "[rest]") {
    rest_fixture f;
    std::pair<char const*, char const*> const cases[] = {
        {"/v1/runs?status=finished", "status"}, {"/v1/runs?limit=0", "limit"},
        {"/v1/runs?colour=red", "colour"},      {"/v1/runs?agent=a&agent=b", "agent"},
        {"/v1/runs?since=yesterday", "since"},
        {"/v1/runs?since=2026-11-30T10:00:00Zjunk", "since"},
        {"/v1/runs?since=2026-11-30Tgarbage:00Z", "since"},
        {"/v1/runs?since=2026-11-30", "since"},
        {"/v1/runs?cursor=zzz", "cursor"},
    };
    for (auto const& [target, field] : cases) {
        INFO(target);
        auto res = f.request("GET", target);
        CHECK(res.status == 400);
        CHECK(first_error_field(body_of(res)) == field);
    }
}

TEST_CASE("REST: since takes any RFC 3339 time and honours its offset", "[rest]") {
    rest_fixture f;
    auto id = f.write_run("teller", "42");  // admitted at 2026-11-30T10:0N:00Z
    // 11:00+01:00 is 10:00Z, before the run; 10:00-01:00 is 11:00Z, after it ('+' is %2B in a query).
    CHECK(listed_run_ids(f.request("GET", "/v1/runs?since=2026-11-30T11:00:00%2B01:00").body).count(id) == 1);
    CHECK(listed_run_ids(f.request("GET", "/v1/runs?since=2026-11-30T10:00:00-01:00").body).empty());
    CHECK(listed_run_ids(f.request("GET", "/v1/runs?since=2026-11-30T09:59:59.5Z").body).count(id) == 1);
}

TEST_CASE("REST: a cursor that names no run of the caller's is refused, not read as an empty page", "[rest]") {
    rest_fixture f;
    f.write_run("teller", "42");
    auto bobs = f.write_run("teller", "43", true, "bob");
    auto res = f.request("GET", "/v1/runs?cursor=01ZZZZZZZZZZZZZZZZZZZZZZZZ");
    CHECK(res.status == 400);
    CHECK(has_header(res, "content-type: application/problem+json"));
    CHECK(first_error_field(body_of(res)) == "cursor");
    // Another principal's run is no cursor of alice's either, and answers just as one that does not exist.
    auto foreign = f.request("GET", "/v1/runs?cursor=" + bobs);
    CHECK(foreign.status == 400);
    CHECK(foreign.body == res.body);
}

TEST_CASE("REST: an empty POST body is not JSON: 400, not a field error", "[rest]") {
    rest_fixture f(false, true);
    auto res = f.request("POST", "/v1/runs", "");
    CHECK(res.status == 400);
    CHECK(has_header(res, "content-type: application/problem+json"));
    CHECK(body_of(res).at("detail").as_string().find("empty") != std::string::npos);
    CHECK_FALSE(body_of(res).contains("errors"));
}

TEST_CASE("REST: a wait that is not a whole number says so; one too long says it is out of range", "[rest]") {
    rest_fixture f(false, true);
    auto fraction = body_of(f.request("POST", "/v1/runs?wait=1.5", R"({"agent":"teller","input":"hi"})"));
    CHECK(fraction.at("status") == 400);
    CHECK(fraction.at("errors").as_array()[0].at("message") == "must be a whole number of seconds");
    auto too_long = body_of(f.request("POST", "/v1/runs?wait=61", R"({"agent":"teller","input":"hi"})"));
    CHECK(too_long.at("status") == 400);
    CHECK(too_long.at("errors").as_array()[0].at("message") == "out of range");
}

TEST_CASE("REST: a sealed run's undecided approval reads withdrawn, and is no longer pending", "[rest]") {
    rest_fixture f;
    auto id = f.write_run("teller", "ok", false);
    std::vector<core::new_record> asked{{core::record_kind::approval_requested,
                                         json::object{{"effect_key", id + "/000004/tool"}, {"tool", "tool://ledger/read"}}}};
    REQUIRE(run_awaitable(f.journal->async_append(id, asked)).has_value());
    CHECK(body_of(f.request("GET", "/v1/runs/" + id)).at("pending_approvals") == 1);

    REQUIRE(run_awaitable(f.journal->async_seal(id, "cancelled", "cancelled by request")).has_value());
    CHECK(body_of(f.request("GET", "/v1/runs/" + id)).at("pending_approvals") == 0);
    CHECK(body_of(f.request("GET", "/v1/runs/" + id + "/approvals?status=pending")).at("approvals").as_array().empty());
    auto withdrawn = body_of(f.request("GET", "/v1/runs/" + id + "/approvals?status=withdrawn")).at("approvals").as_array();
    REQUIRE(withdrawn.size() == 1);
    CHECK(withdrawn[0].at("effect_key").as_string() == id + "/000004/tool");
    // A decision made before the seal stands as it was.
    CHECK(body_of(f.request("GET", "/v1/runs/" + id + "/approvals?status=rejected")).at("approvals").as_array().size() == 1);
}

TEST_CASE("REST: GET /v1/runs/{id} shows the run's input, answer, reason and counts; unknown runs are 404",
          "[rest]") {
    rest_fixture f;
    auto id = f.write_run("teller", "The balance is 42.");
    auto run = body_of(f.request("GET", "/v1/runs/" + id));
    CHECK(run.at("run_id").as_string() == id);
    CHECK(run.at("status") == "succeeded");
    CHECK(run.at("input") == "what is the balance?");
    CHECK(run.at("output") == "The balance is 42.");
    CHECK(run.at("reason") == "answered");
    CHECK(run.at("principal") == "alice");
    CHECK(run.at("effects") == 1);

    auto missing = f.request("GET", "/v1/runs/01NOSUCHRUN");
    CHECK(missing.status == 404);
    CHECK(body_of(missing).at("title") == "unknown_run");
}

TEST_CASE("REST: the journal route returns JSON lines that re-verify as a hash chain", "[rest]") {
    rest_fixture f;
    auto id = f.write_run("teller", "ok");
    auto res = f.request("GET", "/v1/runs/" + id + "/journal");
    REQUIRE(res.status == 200);
    CHECK(has_header(res, "content-type: application/jsonl"));
    std::vector<core::record> records;
    std::istringstream lines(res.body);
    for (std::string line; std::getline(lines, line);) {
        auto r = core::record_from_json(json::parse(line));
        REQUIRE(r.has_value());
        records.push_back(*r);
    }
    CHECK(records.size() == 6);
    CHECK_FALSE(core::verify_chain(records).has_value());

    auto tail = f.request("GET", "/v1/runs/" + id + "/journal?from_seq=5");
    CHECK(std::count(tail.body.begin(), tail.body.end(), '\n') == 2);
    CHECK(f.request("GET", "/v1/runs/" + id + "/journal?from_seq=zero").status == 400);
}

TEST_CASE("REST: verify reports the chain of a run", "[rest]") {
    rest_fixture f;
    auto id = f.write_run("teller", "ok");
    auto v = body_of(f.request("GET", "/v1/runs/" + id + "/verify"));
    CHECK(v.at("verified") == true);
    CHECK(v.at("records") == 6);
    CHECK_FALSE(v.contains("fault"));
}

TEST_CASE("REST: approvals lists requests with their decisions, filterable by status", "[rest]") {
    rest_fixture f;
    auto id = f.write_run("teller", "ok");
    auto all = body_of(f.request("GET", "/v1/runs/" + id + "/approvals"));
    REQUIRE(all.at("approvals").as_array().size() == 1);
    auto const& a = all.at("approvals").as_array()[0].as_object();
    CHECK(a.at("tool") == "tool://ledger/post");
    CHECK(a.at("status") == "rejected");
    CHECK(a.at("reason") == "no");
    CHECK(body_of(f.request("GET", "/v1/runs/" + id + "/approvals?status=pending")).at("approvals").as_array().empty());
    CHECK(f.request("GET", "/v1/runs/" + id + "/approvals?status=maybe").status == 400);
}

TEST_CASE("REST: run actions without an agent runtime answer 503", "[rest]") {
    rest_fixture f;
    auto start = f.request("POST", "/v1/runs", R"({"agent":"teller","input":"hi"})");
    CHECK(start.status == 503);
    CHECK(has_header(start, "content-type: application/problem+json"));
    auto id = f.write_run("teller", "ok", false);
    CHECK(f.request("POST", "/v1/runs/" + id + "/cancel").status == 503);
    CHECK(f.request("POST", "/v1/runs/" + id + "/replay").status == 503);
}

TEST_CASE("REST: a run started once airlock is stopping gets 503 with Retry-After, and nothing is journaled", "[rest]") {
    std::shared_ptr<runner> runs;
    rest_fixture f(false, false, [&](asio::any_io_executor ex, std::shared_ptr<core::journal_store> journal) {
        auto m = core::parse_manifest(
            "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: courier, version: \"1\" }\nspec:\n"
            "  models: { privileged: { provider: scripted, model: courier-1 } }\n"
            "  capabilities: { provides: [parcel.deliver] }\n"
            "  tools:\n    - { ref: tool://ledger/read, mutates: false, description: \"Read a balance.\" }\n"
            "  execution: { kind: tool-calling, max_turns: 2 }\n  budgets: {}\n");
        INFO((m ? std::string() : m.error().message));
        REQUIRE(m.has_value());
        auto script = parse_script("model: courier-1\nturns:\n  - say: \"delivered\"\n");
        REQUIRE(script.has_value());
        core::egress_allowlist egress;
        REQUIRE(egress.add(core::local_destination{}).has_value());
        runner_options o;
        o.executor = ex;
        o.agents.push_back({*m, "scripted", std::make_shared<scripted_provider>(*script)});
        o.tools = std::make_shared<mcp::tool_router>(egress);
        o.egress = egress;
        o.journal = journal;
        auto made = runner::make(std::move(o));
        REQUIRE(made.has_value());
        runs = *made;
        return std::make_shared<runner_control>(runs, std::map<std::string, bool>{});
    });
    runs->stop();
    auto r = f.request("POST", "/v1/runs", R"({"agent":"courier","input":"hi"})");
    INFO(r.head << r.body);
    CHECK(r.status == 503);
    CHECK(has_header(r, "content-type: application/problem+json"));
    // A client may try again: the restarted airlock, or another behind the same address, takes it.
    CHECK(has_header(r, "retry-after: 1"));
    CHECK(body_of(r).at("title") == "unavailable");
    auto listed = run_awaitable(f.journal->async_runs(core::run_filter{}));
    REQUIRE(listed.has_value());
    CHECK(listed->runs.empty());
}

TEST_CASE("REST: unknown paths are 404 and wrong methods 405 with Allow", "[rest]") {
    rest_fixture f;
    auto nope = f.request("GET", "/v1/nothing");
    CHECK(nope.status == 404);
    CHECK(has_header(nope, "content-type: application/problem+json"));
    auto wrong = f.request("DELETE", "/v1/runs");
    CHECK(wrong.status == 405);
    CHECK(has_header(wrong, "allow: GET, POST"));
}

TEST_CASE("REST: GET /v1/tools lists the caller's tools, and anonymous access works only when configured", "[rest]") {
    rest_fixture f;
    auto tools = body_of(f.request("GET", "/v1/tools"));
    REQUIRE(tools.at("tools").as_array().size() == 1);
    CHECK(tools.at("tools").as_array()[0].at("description") == "for alice");
    CHECK(body_of(f.request("GET", "/v1/agents")).at("agents").as_array().empty());

    rest_fixture open(true);
    auto anon = open.request("GET", "/v1/tools", {}, {}, false);
    CHECK(anon.status == 200);
}

namespace {

std::set<std::string> listed_ids(raw_response const& r) {
    INFO(r.head << r.body);
    REQUIRE(r.status == 200);
    return listed_run_ids(r.body);
}

std::string replaced(std::string text, std::string const& from, std::string const& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

// Every route about one run, with a body where it takes one.
struct per_run_route {
    char const* method;
    char const* suffix;
    char const* body;
};
constexpr per_run_route per_run_routes[] = {
    {"GET", "", ""},          {"GET", "/journal", ""},      {"GET", "/verify", ""},
    {"GET", "/approvals", ""}, {"POST", "/cancel", ""},      {"POST", "/replay", ""},
};

}  // namespace

TEST_CASE("REST: a principal lists only the runs it owns, its gateway sessions included", "[rest]") {
    rest_fixture f;
    auto alices = f.write_run("teller", "42");
    auto alices_session = f.write_gateway_run("alice");
    auto bobs = f.write_run("teller", "43", true, "bob");
    auto bobs_session = f.write_gateway_run("bob");
    f.write_run("teller", "44", true, "");  // owned by nobody

    CHECK(listed_ids(f.request("GET", "/v1/runs?kind=all")) == std::set<std::string>{alices, alices_session});
    CHECK(listed_ids(f.request_with(bob_token, "GET", "/v1/runs?kind=all")) == std::set<std::string>{bobs, bobs_session});
    CHECK(listed_ids(f.request("GET", "/v1/runs?kind=all&agent=desk")) == std::set<std::string>{alices_session});
    auto page = body_of(f.request("GET", "/v1/runs?kind=all"));
    CHECK(page.at("runs").as_array()[0].at("principal") == "alice");
}

TEST_CASE("REST: another principal's run answers every route exactly as a run that does not exist", "[rest]") {
    rest_fixture f(false, true);
    auto bobs = f.write_run("teller", "43", false, "bob");
    auto bobs_session = f.write_gateway_run("bob");
    for (auto const& hidden : {bobs, bobs_session}) {
        // An id of the same length that no run has.
        auto unknown = std::string(hidden.size(), 'Z');
        for (auto const& r : per_run_routes) {
            INFO(r.method << " " << hidden << r.suffix);
            auto seen = f.request(r.method, "/v1/runs/" + hidden + r.suffix, r.body);
            auto none = f.request(r.method, "/v1/runs/" + unknown + r.suffix, r.body);
            CHECK(seen.status == 404);
            CHECK(none.status == 404);
            CHECK(seen.body == replaced(none.body, unknown, hidden));
            CHECK(seen.body.find("bob") == std::string::npos);
            CHECK(has_header(seen, "content-type: application/problem+json"));
        }
        // Its owner is served on every one of them.
        for (auto const& r : per_run_routes) {
            INFO(r.method << " " << hidden << r.suffix << " as bob");
            CHECK(f.request_with(bob_token, r.method, "/v1/runs/" + hidden + r.suffix, r.body).status < 300);
        }
    }
    CHECK(f.runtime->decisions.empty());
}

TEST_CASE("REST: an operator lists every run, its own and nobody's included, and filters them by principal",
          "[rest]") {
    rest_fixture f;
    auto alices = f.write_run("teller", "42");
    auto bobs = f.write_run("teller", "43", true, "bob");
    auto bobs_session = f.write_gateway_run("bob");
    auto nobodys = f.write_run("teller", "44", true, "");

    CHECK(listed_ids(f.request_with(carol_token, "GET", "/v1/runs?kind=all")) ==
          std::set<std::string>{alices, bobs, bobs_session, nobodys});
    CHECK(listed_ids(f.request_with(carol_token, "GET", "/v1/runs?kind=all&principal=bob")) ==
          std::set<std::string>{bobs, bobs_session});
    CHECK(listed_ids(f.request_with(carol_token, "GET", "/v1/runs?kind=all&principal=bob&agent=teller")) ==
          std::set<std::string>{bobs});
    CHECK(listed_ids(f.request_with(carol_token, "GET", "/v1/runs?kind=all&principal=dave")).empty());
    auto journal = f.request_with(carol_token, "GET", "/v1/runs/" + bobs_session + "/journal");
    CHECK(journal.status == 200);
    CHECK(journal.body.find("of bob") != std::string::npos);
    CHECK(f.request_with(carol_token, "GET", "/v1/runs?principal=").status == 400);
}

TEST_CASE("REST: a principal that is not an operator may not list by principal: 403 with a problem", "[rest]") {
    rest_fixture f;
    f.write_run("teller", "43", true, "bob");
    for (auto const& who : {"alice", "bob"}) {
        INFO(who);
        auto res = f.request("GET", std::string("/v1/runs?principal=") + who);
        CHECK(res.status == 403);
        CHECK(has_header(res, "content-type: application/problem+json"));
        auto problem = body_of(res);
        CHECK(problem.at("title") == "forbidden");
        CHECK_THAT(std::string(problem.at("detail").as_string()), Catch::Contains("only operators"));
        CHECK(res.body.find("01TESTRUN") == std::string::npos);
    }
}

TEST_CASE("REST: a run owned by nobody (internal, or indexed before runs had owners) is an operator's alone",
          "[rest]") {
    rest_fixture f(false, true);
    auto nobodys = f.write_run("teller", "44", true, "");
    CHECK(f.request("GET", "/v1/runs/" + nobodys).status == 404);
    CHECK(f.request("GET", "/v1/runs").body.find(nobodys) == std::string::npos);
    CHECK(f.request_with(carol_token, "GET", "/v1/runs/" + nobodys).status == 200);
    CHECK(f.request_with(carol_token, "GET", "/v1/runs/" + nobodys + "/verify").status == 200);
    // A tokenless request served as nobody sees nothing either.
    rest_fixture open(true);
    open.write_run("teller", "45", true, "");
    CHECK(listed_ids(open.request("GET", "/v1/runs", {}, {}, false)).empty());
}

TEST_CASE("REST: only an operator decides an approval, not even the run's owner, and the operator is the reviewer",
          "[rest]") {
    rest_fixture f(false, true);
    auto alices = f.write_run("teller", "42", false);
    auto target = "/v1/runs/" + alices + "/approvals/" + alices + "%2F000002%2Ftool";
    auto own = f.request("POST", target, R"({"decision":"approve"})");
    CHECK(own.status == 403);
    CHECK(has_header(own, "content-type: application/problem+json"));
    CHECK_THAT(std::string(body_of(own).at("detail").as_string()), Catch::Contains("only operators may decide"));
    // The same for a run that does not exist: the refusal says nothing about the run.
    auto unknown = f.request("POST", "/v1/runs/01NOSUCHRUN/approvals/x", R"({"decision":"approve"})");
    CHECK(unknown.status == 403);
    CHECK(unknown.body == own.body);
    CHECK(f.runtime->decisions.empty());

    auto decided = f.request_with(carol_token, "POST", target, R"({"decision":"approve","reason":"fine"})");
    CHECK(decided.status == 200);
    CHECK(f.runtime->decisions == std::vector<std::string>{alices + " " + alices + "/000002/tool approve carol"});
}

TEST_CASE("REST: the OpenAPI document describes exactly the routes the API serves", "[rest]") {
    auto doc = rest_api::openapi();
    CHECK(doc.at("openapi") == "3.1.0");
    std::set<std::pair<std::string, std::string>> documented;
    for (auto const& [path, item] : doc.at("paths").as_object())
        for (auto const& [method, op] : item.as_object()) {
            if (method == "parameters") continue;
            auto m = std::string(method);
            for (auto& c : m) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
            documented.emplace(m, std::string(path));
            CHECK(op.as_object().contains("responses"));
            CHECK(op.as_object().contains("operationId"));
        }
    std::set<std::pair<std::string, std::string>> served;
    for (auto const& r : rest_api::routes()) served.insert(r);
    CHECK(documented == served);
    CHECK(doc.at("servers") == json::parse(R"([{"url":"/","description":"Relative to where this document was fetched from, so it names the address the client used, a reverse proxy's included"}])"));

    // Every $ref points at something in the document.
    std::vector<json::value const*> stack{&doc.at("paths"), &doc.at("components")};
    auto const& components = doc.at("components").as_object();
    std::size_t refs = 0;
    while (!stack.empty()) {
        auto const* v = stack.back();
        stack.pop_back();
        if (v->is_object()) {
            for (auto const& [k, child] : v->as_object()) {
                if (k == "$ref") {
                    ++refs;
                    std::string ref(child.as_string());
                    REQUIRE(ref.starts_with("#/components/"));
                    auto rest = ref.substr(13);
                    auto slash = rest.find('/');
                    auto const* section = components.if_contains(rest.substr(0, slash));
                    INFO(ref);
                    REQUIRE(section);
                    CHECK(section->as_object().contains(rest.substr(slash + 1)));
                } else {
                    stack.push_back(&child);
                }
            }
        } else if (v->is_array()) {
            for (auto const& child : v->as_array()) stack.push_back(&child);
        }
    }
    CHECK(refs > 20);

    rest_fixture f;
    auto served_doc = f.request("GET", "/v1/openapi.json");
    CHECK(served_doc.status == 200);
    CHECK(json::parse(served_doc.body) == json::value(doc));
}

TEST_CASE("REST: the OpenAPI document says which routes need no token, names each path parameter, and no operation twice",
          "[rest]") {
    auto doc = rest_api::openapi();
    std::set<std::pair<std::string, std::string>> open_documented, open_served;
    std::set<std::string> ids;
    std::size_t operations = 0;
    for (auto const& [path, item] : doc.at("paths").as_object()) {
        std::set<std::string> templated;
        for (std::size_t at = path.find('{'); at != std::string::npos; at = path.find('{', at + 1))
            templated.insert(std::string(path.substr(at + 1, path.find('}', at) - at - 1)));
        // The path parameters a parameters list declares, a "#/components/parameters/X" one included.
        auto declared_in = [&doc](json::value const* params, std::set<std::string>& out) {
            if (!params) return;
            auto const& shared = doc.at("components").at("parameters").as_object();
            for (auto const& p : params->as_array()) {
                auto const* ref = p.as_object().if_contains("$ref");
                auto const& o = ref ? shared.at(std::string(ref->as_string()).substr(24)) : p;
                if (o.at("in") == "path") out.insert(std::string(o.at("name").as_string()));
            }
        };
        std::set<std::string> on_path;
        declared_in(item.as_object().if_contains("parameters"), on_path);
        for (auto const& [method, op] : item.as_object()) {
            if (method == "parameters") continue;
            ++operations;
            INFO(method << " " << path);
            CHECK(ids.insert(std::string(op.at("operationId").as_string())).second);
            auto declared = on_path;
            declared_in(op.as_object().if_contains("parameters"), declared);
            CHECK(declared == templated);
            if (auto const* security = op.as_object().if_contains("security"); security && security->as_array().empty()) {
                auto m = std::string(method);
                for (auto& c : m) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
                open_documented.emplace(m, std::string(path));
            }
        }
    }
    for (auto const& r : rest_api::open_routes()) open_served.insert(r);
    CHECK(open_served == std::set<std::pair<std::string, std::string>>{{"GET", "/v1/openapi.json"}});
    CHECK(open_documented == open_served);
    CHECK(operations == rest_api::routes().size());
}

TEST_CASE("REST: the OpenAPI document is served without a token, still behind the Host and Origin checks", "[rest]") {
    rest_fixture f;
    f.api->set_door({"127.0.0.1"}, {});  // the fixture's requests say Host: 127.0.0.1
    auto plain = f.request("GET", "/v1/openapi.json", {}, {}, false);
    INFO(plain.head << plain.body);
    CHECK(plain.status == 200);
    CHECK(json::parse(plain.body) == json::value(rest_api::openapi()));
    // A token the server never issued does not turn a public document into a 401 either.
    CHECK(f.request_with("not-a-token-anyone-has", "GET", "/v1/openapi.json").status == 200);
    CHECK(f.request("HEAD", "/v1/openapi.json", {}, {}, false).status == 200);

    // Everything else still needs one.
    auto runs = f.request("GET", "/v1/runs", {}, {}, false);
    CHECK(runs.status == 401);
    CHECK(f.request("GET", "/v1/tools", {}, {}, false).status == 401);

    auto foreign = f.request("GET", "/v1/openapi.json", {}, "Origin: http://elsewhere.example\r\n", false);
    CHECK(foreign.status == 403);
    CHECK(body_of(foreign).at("title") == "forbidden_origin");
    // A page that rebinds its DNS name to 127.0.0.1 gets no more than at any other route.
    auto rebound = raw_http(f.port(), "GET /v1/openapi.json HTTP/1.1\r\nHost: rebind.example\r\nConnection: close\r\n\r\n");
    CHECK(rebound.status == 403);
    CHECK(body_of(rebound).at("title") == "forbidden_host");
    auto no_host = raw_http(f.port(), "GET /v1/openapi.json HTTP/1.0\r\n\r\n");
    CHECK(no_host.status == 403);
    auto in_url = f.request("GET", "/v1/openapi.json?access_token=abc", {}, {}, false);
    CHECK(in_url.status == 400);
    CHECK_THAT(std::string(body_of(in_url).at("detail").as_string()), Catch::Contains("never in the URL"));
}

TEST_CASE("REST: the door is /mcp's: a TAB after Bearer is accepted, and a bad token's challenge says invalid_token",
          "[rest]") {
    rest_fixture f;
    auto tab = f.request("GET", "/v1/runs", {}, std::string("Authorization: Bearer\t") + token + "\r\n", false);
    INFO(tab.head << tab.body);
    CHECK(tab.status == 200);
    auto twice = f.request("GET", "/v1/runs", {}, std::string("Authorization: bearer  ") + token + "\r\n", false);
    CHECK(twice.status == 200);

    auto wrong = f.request("GET", "/v1/runs", {}, "Authorization: Bearer not-the-token\r\n", false);
    CHECK(wrong.status == 401);
    CHECK(has_header(wrong, R"(www-authenticate: bearer realm="airlock", error="invalid_token")"));
    CHECK(body_of(wrong).at("title") == "unauthorized");
    // Without a token there is nothing invalid to name: the challenge only says how to authenticate.
    auto none = f.request("GET", "/v1/runs", {}, {}, false);
    CHECK(none.status == 401);
    CHECK(has_header(none, R"(www-authenticate: bearer realm="airlock")"));
    CHECK_FALSE(has_header(none, "invalid_token"));
}
