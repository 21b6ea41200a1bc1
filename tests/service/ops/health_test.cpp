#include "service/ops/health.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

using namespace airlock::service;
namespace json = boost::json;
using state = readiness_inputs::upstream_state;

namespace {
readiness_inputs healthy() {
    readiness_inputs in;
    in.journal_open = true;
    in.upstreams = {{"ledger", false, state::up}, {"search", true, state::up}};
    return in;
}

http_request get(std::string target, http::verb verb = http::verb::get) {
    http_request req{verb, target, 11};
    return req;
}
}  // namespace

TEST_CASE("readiness is ready when the journal is open, required upstreams are up and nothing drains") {
    auto r = evaluate_readiness(healthy());
    CHECK(r.ready);
    auto body = json::parse(r.body).as_object();
    CHECK(body.at("status") == "ready");
    CHECK(body.at("failed").as_array().empty());
    CHECK(body.at("checks").at("journal").at("state") == "open");
    CHECK(body.at("checks").at("upstream:ledger").at("state") == "up");
    CHECK(body.at("checks").at("upstream:search").at("optional") == true);
}

TEST_CASE("readiness names a required upstream that is down or not met yet") {
    auto in = healthy();
    in.upstreams[0].state = state::down;
    auto r = evaluate_readiness(in);
    CHECK_FALSE(r.ready);
    CHECK(r.failed == std::vector<std::string>{"upstream:ledger"});
    in.upstreams[0].state = state::unknown;
    r = evaluate_readiness(in);
    CHECK_FALSE(r.ready);
    CHECK(json::parse(r.body).at("checks").at("upstream:ledger").at("state") == "unknown");
}

TEST_CASE("an optional upstream that is down is reported but keeps readiness") {
    auto in = healthy();
    in.upstreams[1].state = state::down;
    auto r = evaluate_readiness(in);
    CHECK(r.ready);
    auto check = json::parse(r.body).at("checks").at("upstream:search");
    CHECK(check.at("ok") == true);
    CHECK(check.at("state") == "down");
}

TEST_CASE("readiness fails while draining and when the journal is closed, naming each check") {
    auto in = healthy();
    in.draining = true;
    in.journal_open = false;
    auto r = evaluate_readiness(in);
    CHECK_FALSE(r.ready);
    CHECK(r.failed == std::vector<std::string>{"journal", "draining"});
    auto res = readyz_response(get("/readyz"), in);
    CHECK(res.result() == http::status::service_unavailable);
    CHECK(json::parse(res.body()).at("status") == "not_ready");
}

TEST_CASE("readiness fails while the open journal cannot take appends, naming why") {
    for (std::string fault : {"map_full", "disk_full", "write_failed"}) {
        INFO(fault);
        auto in = healthy();
        in.journal_fault = fault;
        auto r = evaluate_readiness(in);
        CHECK_FALSE(r.ready);
        CHECK(r.failed == std::vector<std::string>{"journal"});
        auto body = json::parse(r.body).as_object();
        CHECK(body.at("checks").at("journal").at("ok") == false);
        CHECK(body.at("checks").at("journal").at("state") == fault.c_str());
        CHECK(readyz_response(get("/readyz"), in).result() == http::status::service_unavailable);
    }
}

TEST_CASE("healthz and readyz answer GET and HEAD and refuse other methods with 405") {
    CHECK(healthz_response(get("/healthz")).result() == http::status::ok);
    auto head = readyz_response(get("/readyz", http::verb::head), healthy());
    CHECK(head.result() == http::status::ok);
    CHECK(head.body().empty());
    CHECK(head[http::field::content_length] != "0");
    auto post = readyz_response(get("/readyz", http::verb::post), healthy());
    CHECK(post.result() == http::status::method_not_allowed);
    CHECK(post[http::field::allow] == "GET, HEAD");
}
