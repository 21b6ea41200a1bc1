// The one map from error codes to HTTP statuses, and problem documents as RFC 9457 writes them.
#include "service/rest/problem.hpp"

#include <boost/json/parse.hpp>

#include <catch2/catch.hpp>

using namespace airlock;
using namespace airlock::service;

TEST_CASE("the codes the REST API answered with before errc keep their statuses") {
    CHECK(problem_status("unknown_run") == http::status::not_found);
    for (auto code : {"unknown_agent", "unknown_capability", "invalid_input", "invalid_field"})
        CHECK(problem_status(code) == http::status::unprocessable_entity);
    CHECK(problem_status("at_capacity") == http::status::too_many_requests);
    for (auto code : {"not_running", "sealed", "not_pending", "divergence", "conflict"})
        CHECK(problem_status(code) == http::status::conflict);
    CHECK(problem_status("unavailable") == http::status::service_unavailable);
    CHECK(problem_status("closed") == http::status::service_unavailable);
    CHECK(problem_status("bad_request") == http::status::bad_request);
    for (auto code : {"invalid_run", "malformed_record", "not_admitted", "unknown_provider", "internal", "io_error"})
        CHECK(problem_status(code) == http::status::internal_server_error);
}

TEST_CASE("a client's mistake is never answered as a server error") {
    using core::errc;
    for (auto e : {errc::bad_request, errc::invalid_field, errc::invalid_input, errc::unsupported_media_type, errc::too_deep,
                   errc::not_found, errc::method_not_allowed, errc::forbidden_host, errc::forbidden_origin,
                   errc::unauthorized, errc::forbidden, errc::unknown_run, errc::unknown_agent, errc::unknown_capability,
                   errc::not_running, errc::sealed, errc::not_pending, errc::divergence, errc::conflict,
                   errc::at_capacity}) {
        INFO(core::to_string(e));
        auto s = static_cast<unsigned>(http_status(e));
        CHECK(s >= 400);
        CHECK(s < 500);
    }
}

TEST_CASE("a problem for an errc is titled with its spelling and answered with its status") {
    auto res = problem(core::errc::not_pending, "no approval waits", {{"effect", "not pending"}}, 11);
    CHECK(res.result() == http::status::conflict);
    CHECK(res[http::field::content_type] == "application/problem+json");
    auto o = boost::json::parse(res.body()).as_object();
    CHECK(o.at("type") == "https://airlock.dev/problems/not_pending");
    CHECK(o.at("title") == "not_pending");
    CHECK(o.at("status") == 409);
    CHECK(o.at("detail") == "no approval waits");
    CHECK(o.at("errors").as_array()[0].at("field") == "effect");

    auto query = problem(http::status::bad_request, core::errc::invalid_field, "limit is wrong", {}, 11);
    CHECK(query.result() == http::status::bad_request);
    CHECK(boost::json::parse(query.body()).at("title") == "invalid_field");
}
