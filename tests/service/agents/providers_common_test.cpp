// What every HTTP model provider does the same way whatever its API: retries, deadlines, egress,
// connection reuse, and how failures are classified. Each test case runs once per API, against
// that API's fake server (tests/fixtures/providers).

#include "service/agents/providers/anthropic.hpp"
#include "service/agents/providers/openai.hpp"

#include "tests/support/fake_model_api.hpp"
#include "tests/support/log_capture.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>

using namespace airlock;
using namespace airlock::service::providers;
using namespace std::chrono_literals;
using airlock::testing::ask;
using airlock::testing::log_capture;
using airlock::testing::what;

namespace {

constexpr char const* key = "sk-common-test-1a2b3c4d5e6f7a8b9c0d";

struct openai_api {
    static constexpr char const* script = "openai_server.mjs";
    static constexpr char const* base_path = "/v1";
    static constexpr char const* server_error = "error-500";  // 500 on every attempt
    static wire_format wire() { return openai_wire(); }
};

struct anthropic_api {
    static constexpr char const* script = "anthropic_server.mjs";
    static constexpr char const* base_path = "";
    static constexpr char const* server_error = "error-529";  // overloaded on every attempt
    static wire_format wire() { return anthropic_wire(); }
};

template <class Api>
struct fixture : airlock::testing::provider_fixture {
    fixture() : provider_fixture(Api::script, Api::base_path, key, Api::wire()) {}
};

// A port the kernel handed out and took back: nothing listens there.
std::uint16_t unused_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    ::close(fd);
    return ntohs(a.sin_port);
}

// Asks `n` questions through `p` at once and runs them to the end; how many answers echo their
// own question (each failure or mismatch is reported).
template <class Api>
int answered_each_their_own(fixture<Api>& f, http_provider& p, int n) {
    std::vector<std::future<core::model_result<core::completion>>> answers;
    for (int i = 0; i < n; ++i)
        answers.push_back(boost::asio::co_spawn(f.ioc, p.async_complete(ask("question " + std::to_string(i))),
                                                boost::asio::use_future));
    f.ioc.restart();
    f.ioc.run();
    int right = 0;
    for (int i = 0; i < n; ++i) {
        auto r = answers[static_cast<std::size_t>(i)].get();
        INFO(what(r));
        CHECK(r.has_value());
        if (!r) continue;
        CHECK_THAT(r->text, Catch::EndsWith("You said: question " + std::to_string(i)));
        if (r->text.ends_with("You said: question " + std::to_string(i))) ++right;
    }
    return right;
}

}  // namespace

TEMPLATE_TEST_CASE("a provider waits out a 429 with Retry-After, then succeeds", "", openai_api, anthropic_api) {
    fixture<TestType> f;
    log_capture logs;
    auto r = f.complete("429", ask("hi"));
    INFO(what(r));
    REQUIRE(r.has_value());
    CHECK(r->text == "after the rate limit");
    CHECK(f.api.requests() == 2);
    CHECK(logs.contains("HTTP 429"));
    CHECK(!logs.contains(key));
}

TEMPLATE_TEST_CASE("a provider gives up on 5xx after max_retries and reports tool_failed", "", openai_api, anthropic_api) {
    fixture<TestType> f;
    auto s = f.settings(TestType::server_error);
    s.http.max_retries = 2;
    auto r = f.complete(s, ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::tool_failed);
    CHECK_THAT(r.error().detail, Catch::Contains("HTTP 5") && Catch::Contains("after 3 attempts"));
    CHECK(f.api.requests() == 3);
}

TEMPLATE_TEST_CASE("a provider whose server never answers times out as in doubt", "", openai_api, anthropic_api) {
    fixture<TestType> f;
    auto s = f.settings("hang");
    s.http.deadline = 300ms;
    auto r = f.complete(s, ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::timed_out);
    CHECK(core::disposition_of(r.error().kind) == core::disposition::in_doubt);
    // Sent once: a request in doubt is not repeated.
    CHECK(f.api.requests() == 1);
}

TEMPLATE_TEST_CASE("a provider base_url outside the egress allowlist is refused before anything is sent", "",
                   openai_api, anthropic_api) {
    fixture<TestType> f;
    auto s = f.settings("plain");
    s.http.egress = core::egress_allowlist{};
    REQUIRE(s.http.egress.add(core::remote_destination{"http", "127.0.0.1", static_cast<std::uint16_t>(f.api.port + 1)}));
    auto r = f.complete(s, ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::refused);
    CHECK_THAT(r.error().detail, Catch::Contains("http://127.0.0.1:" + std::to_string(f.api.port)) &&
                                     Catch::Contains("not in the egress allowlist"));
    auto log = f.api.log();
    CHECK(log.at("connections").as_int64() == 0);
    CHECK(log.at("requests").as_array().empty());
}

TEMPLATE_TEST_CASE("a provider host name that resolves to loopback is not connected to unless the address is in egress",
                   "", openai_api, anthropic_api) {
    fixture<TestType> f;
    auto s = f.settings("plain");
    s.http.base_url = "http://localhost:" + std::to_string(f.api.port) + TestType::base_path;
    s.http.egress = core::egress_allowlist{};
    REQUIRE(s.http.egress.add(core::remote_destination{"http", "localhost", f.api.port}));
    auto r = f.complete(s, ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::unreachable);
    CHECK_THAT(r.error().detail, Catch::Contains("refused by the egress check"));
    CHECK(f.api.log().at("connections").as_int64() == 0);
}

TEMPLATE_TEST_CASE("a 200 answer that is not JSON is reported as malformed", "", openai_api, anthropic_api) {
    fixture<TestType> f;
    auto r = f.complete("not-json", ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::malformed);
    CHECK_THAT(r.error().detail, Catch::Contains("not JSON"));
}

TEMPLATE_TEST_CASE("a provider endpoint nobody listens on is unreachable: the call did not happen", "", openai_api,
                   anthropic_api) {
    fixture<TestType> f;
    auto port = unused_port();
    auto s = f.settings("plain");
    s.http.base_url = "http://127.0.0.1:" + std::to_string(port) + TestType::base_path;
    REQUIRE(s.http.egress.add(core::remote_destination{"http", "127.0.0.1", port}));
    auto r = f.complete(s, ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::unreachable);
    CHECK(core::disposition_of(r.error().kind) == core::disposition::did_not_happen);
}

TEMPLATE_TEST_CASE("consecutive completions reuse one kept-alive connection", "", openai_api, anthropic_api) {
    fixture<TestType> f;
    http_provider p(f.ioc.get_executor(), f.settings("plain"), f.wire);
    for (int i = 0; i < 3; ++i) {
        auto r = airlock::testing::run_on(f.ioc, p.async_complete(ask("question " + std::to_string(i))));
        INFO(what(r));
        REQUIRE(r.has_value());
    }
    auto log = f.api.log();
    CHECK(log.at("requests").as_array().size() == 3);
    CHECK(log.at("connections").as_int64() == 1);
}

TEMPLATE_TEST_CASE("concurrent completions through one provider each get their own answer", "", openai_api,
                   anthropic_api) {
    fixture<TestType> f;
    http_provider p(f.ioc.get_executor(), f.settings("plain"), f.wire);
    constexpr int n = 16;
    CHECK(answered_each_their_own(f, p, n) == n);
    CHECK(f.api.requests() == n);
}

TEMPLATE_TEST_CASE("concurrent completions beyond max_connections wait their turn on the open connections", "",
                   openai_api, anthropic_api) {
    fixture<TestType> f;
    auto s = f.settings("plain");
    s.http.max_connections = 2;
    http_provider p(f.ioc.get_executor(), s, f.wire);
    constexpr int n = 16;
    CHECK(answered_each_their_own(f, p, n) == n);
    auto log = f.api.log();
    CHECK(log.at("requests").as_array().size() == n);
    CHECK(log.at("connections").as_int64() <= 2);
}

TEMPLATE_TEST_CASE("an answer larger than the body limit is malformed, not read to the end", "", openai_api,
                   anthropic_api) {
    fixture<TestType> f;
    auto s = f.settings("plain");
    s.http.max_body_bytes = 64;
    auto r = f.complete(s, ask("hi"));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::malformed);
    CHECK_THAT(r.error().detail, Catch::Contains("larger than 64 bytes"));
}
