// A grant's `journal:` decides what the LMDB file holds of a call: read raw, a `hash` grant's
// arguments and output are not in it, only the SHA-256 of their canonical form (the digest the
// signed provenance carries); an `omit` grant's are not in it at all; a `full` grant's are. The
// chain verifies either way.
#include "core/canonical_json.hpp"
#include "core/sha256.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr char const* alice_token = "privacy-alice-0123456789abcdef";

std::string call(std::uint16_t port, std::string const& tool, std::string const& arguments) {
    auto r = modern_post(port, alice_token, "tools/call", tool,
                         "\"name\":\"" + tool + "\",\"arguments\":" + arguments + ",");
    INFO(r.body);
    REQUIRE(r.status == 200);
    return r.body;
}

std::string canonical_sha256(std::string const& text) {
    auto c = airlock::core::canonical(json::parse(text));
    REQUIRE(c.has_value());
    return airlock::core::sha256_hex(*c);
}

}  // namespace

TEST_CASE("journal: hash keeps only a call's digests, omit keeps nothing, full keeps the values; all verify",
          "[e2e][journal]") {
    gateway_deployment d(alice_token);
    std::ofstream(d.dir.path() / "alice.yaml", std::ios::trunc) << R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: alice-desk, version: "1" }
spec:
  security: { journal: hash }
  tools:
    - ref: tool://everything/echo
      mutates: false
    - ref: tool://everything/get.sum
      mutates: false
      journal: omit
    - ref: tool://everything/get.tiny.image
      mutates: false
      journal: full
  budgets: {}
)";
    auto const journal = d.dir.path() / "journal";
    std::string const hashed_args = R"({"message":"hashed-marker-4711"})";
    {
        child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"});
        auto port = wait_listening(airlock);
        for (int i = 0; i < 300 && http_get(port, "/readyz").status != 200; ++i) std::this_thread::sleep_for(100ms);
        // The caller gets every answer whole: privacy is about what is kept, not what is relayed.
        CHECK_THAT(call(port, "everything__echo", hashed_args), Catch::Contains("hashed-marker-4711"));
        CHECK_THAT(call(port, "everything__get-sum", R"({"a":31337,"b":27182})"), Catch::Contains("58519"));
        CHECK_THAT(call(port, "everything__get-tiny-image", "{}"), Catch::Contains("image/png"));
        airlock.signal(SIGTERM);
        airlock.wait(20s);
    }
    auto raw = file_text(journal / "data.mdb");
    // hash: neither the argument nor the echoed output is in the file ...
    CHECK(raw.find("hashed-marker-4711") == std::string::npos);
    // ... but the arguments' digest is, as a stand-in and as provenance's args_sha256.
    auto const digest = canonical_sha256(hashed_args);
    CHECK(raw.find(R"({"kept":"hash","sha256":")" + digest) != std::string::npos);
    CHECK(raw.find(R"("args_sha256":")" + digest) != std::string::npos);
    // omit: not the numbers, not the sum.
    CHECK(raw.find("31337") == std::string::npos);
    CHECK(raw.find("58519") == std::string::npos);
    CHECK(raw.find(R"({"kept":"omit"})") != std::string::npos);
    // full: the output as the tool gave it.
    CHECK(raw.find("image/png") != std::string::npos);

    auto v = run_command({AIRLOCK_BINARY, "journal", "verify", "--all", "--journal", journal.string()});
    INFO(v.out << v.err);
    CHECK(v.exit_code == 0);
}
