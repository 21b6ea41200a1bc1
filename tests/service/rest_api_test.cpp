// The REST API over a real HTTP server and a real LMDB journal: the door (token, Origin), the read
// routes against runs written to the journal, problem documents for every kind of bad request, and
// the OpenAPI document checked against the route table.
#include "service/rest_api.hpp"

#include "core/canonical_json.hpp"
#include "store/lmdb_store.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/run_awaitable.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <thread>

using namespace airlock;
using namespace airlock::service;
using namespace airlock::testing;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr char const* token = "rest-test-token-0123456789";

struct rest_fixture {
    temp_dir dir{"airlock-rest"};
    std::shared_ptr<store::lmdb_store> journal;
    asio::io_context ioc{2};
    std::shared_ptr<rest_api> api;
    std::unique_ptr<http_server> server;
    std::vector<std::thread> threads;

    explicit rest_fixture(bool anonymous = false) {
        store::lmdb_options lo;
        lo.directory = dir.path() / "journal";
        auto s = store::lmdb_store::open(lo);
        REQUIRE(s);
        journal = std::shared_ptr<store::lmdb_store>(std::move(*s));
        rest_api_options o;
        o.journal = journal;
        o.authenticate = [](std::string_view t) -> std::optional<std::string> {
            if (t == token) return std::string("alice");
            return std::nullopt;
        };
        o.allow_anonymous = anonymous;
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
        std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
        if (with_token) r += std::string("Authorization: Bearer ") + token + "\r\n";
        r += extra_headers;
        if (!body.empty() || method == "POST")
            r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
        r += "\r\n" + body;
        return raw_http(port(), r);
    }

    // A run as the agent runtime writes one: admitted, a model effect, a tool effect, an approval, sealed.
    std::string write_run(std::string const& agent, std::string const& answer, bool seal = true) {
        static int n = 0;
        std::string id = "01TESTRUN" + std::to_string(++n) + agent;
        auto records = std::vector<core::new_record>{};
        json::object admitted;
        admitted["agent"] = json::object{{"name", agent}, {"version", "1.0.0"}, {"digest", "ab"}};
        admitted["input"] = "what is the balance?";
        admitted["principal"] = "alice";
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
    };
    for (auto const& [target, field] : cases) {
        INFO(target);
        auto res = f.request("GET", target);
        CHECK(res.status == 400);
        CHECK(first_error_field(body_of(res)) == field);
    }
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
