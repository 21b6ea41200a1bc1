// `airlock serve` with its journal in a real PostgreSQL 15 (journal.postgres): calls are journaled
// there and read back through `airlock journal copy`; one airlock serves a database at a time; and
// a database that goes away turns /readyz to 503 and calls into clear errors, until it is back.
#include "tests/support/child_process.hpp"
#include "tests/support/gateway_deployment.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/postgres_server.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

using namespace airlock::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr char const* alice_token = "pgserve-alice-0123456789abcdef";

// The deployment's configuration with its journal in PostgreSQL, the URL from the environment.
void journal_in_postgres(gateway_deployment const& d) {
    std::ifstream in(d.config);
    std::stringstream text;
    text << in.rdbuf();
    auto yaml = text.str();
    auto at = yaml.find("journal: { dir: journal }");
    REQUIRE(at != std::string::npos);
    yaml.replace(at, std::string("journal: { dir: journal }").size(),
                 "journal: { postgres: { url: { env: AIRLOCK_TEST_JOURNAL_URL } } }");
    std::ofstream(d.config, std::ios::trunc) << yaml;
}

bool becomes(std::uint16_t port, int status, std::chrono::milliseconds within) {
    for (auto until = std::chrono::steady_clock::now() + within; std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(100ms))
        if (http_get(port, "/readyz").status == status) return true;
    return false;
}

raw_response echo(std::uint16_t port, std::string const& message) {
    return modern_post(port, alice_token, "tools/call", "everything__echo",
                       R"("name":"everything__echo","arguments":{"message":")" + message + R"("},)");
}

}  // namespace

TEST_CASE("airlock serve journals its calls in PostgreSQL, alone on the database, through an outage of it",
          "[e2e][postgres]") {
    postgres_server pg;
    auto url = pg.create_database();
    gateway_deployment d(alice_token);
    journal_in_postgres(d);
    std::vector<std::string> env{"AIRLOCK_TEST_JOURNAL_URL=" + url};
    {
        child_process airlock({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"}, env);
        auto port = wait_listening(airlock);
        if (!becomes(port, 200, 30s)) FAIL(http_get(port, "/readyz").body << airlock.stderr_text());
        auto first = echo(port, "before-outage-5150");
        INFO(first.body);
        CHECK(first.status == 200);
        CHECK_THAT(first.body, Catch::Contains("before-outage-5150"));

        // A second airlock on the same database is refused, saying why.
        child_process second({AIRLOCK_BINARY, "serve", "--config", d.config.string(), "--listen", "127.0.0.1:0"}, env);
        CHECK(second.wait(30s) != 0);
        CHECK_THAT(second.stderr_text(), Catch::Contains("another airlock serves this PostgreSQL journal"));

        pg.stop(true);
        auto during = echo(port, "during-outage");
        INFO(during.body);
        CHECK_THAT(during.body, Catch::Contains("the journal is unavailable") && !Catch::Contains("Echo: during-outage"));
        CHECK(becomes(port, 503, 10s));
        auto ready = http_get(port, "/readyz");
        CHECK_THAT(ready.body, Catch::Contains(R"("journal":{"ok":false)"));

        pg.start();
        CHECK(becomes(port, 200, 30s));
        auto after = echo(port, "after-outage-6160");
        INFO(after.body);
        CHECK_THAT(after.body, Catch::Contains("after-outage-6160"));
        airlock.signal(SIGTERM);
        CHECK(airlock.wait(30s) == 0);
    }

    // The reading commands take the journal from the configuration, in PostgreSQL.
    auto cli = [&](std::vector<std::string> args) {
        args.insert(args.begin(), AIRLOCK_BINARY);
        args.push_back("--config");
        args.push_back(d.config.string());
        child_process p(args, env);
        int code = p.wait(60s);
        INFO(p.stderr_text());
        CHECK(code == 0);
        return p.stdout_text();
    };
    CHECK_THAT(cli({"runs", "--kind", "session"}), Catch::Contains("session") && Catch::Contains("alice-desk"));
    CHECK_THAT(cli({"journal", "verify", "--all"}), Catch::Contains("runs verified") && !Catch::Contains("BROKEN"));
    CHECK_THAT(cli({"pins", "list"}), Catch::Contains("everything/echo"));

    // What was journaled, read back from outside: copied to LMDB, it verifies and holds both calls.
    auto copy = d.dir.path() / "copy";
    child_process copied({AIRLOCK_BINARY, "journal", "copy", "--from", "postgres:" + url, "--to", "lmdb:" + copy.string()});
    REQUIRE(copied.wait(60s) == 0);
    child_process verify({AIRLOCK_BINARY, "journal", "verify", "--all", "--journal", copy.string()});
    CHECK(verify.wait(60s) == 0);
    child_process exported({AIRLOCK_BINARY, "journal", "export", "--all", "--to", (d.dir.path() / "export").string(),
                            "--journal", copy.string()});
    REQUIRE(exported.wait(60s) == 0);
    std::string all;
    for (auto const& e : fs::directory_iterator(d.dir.path() / "export")) {
        std::ifstream in(e.path());
        std::stringstream s;
        s << in.rdbuf();
        all += s.str();
    }
    CHECK_THAT(all, Catch::Contains("before-outage-5150") && Catch::Contains("after-outage-6160"));
    CHECK(all.find("during-outage") == std::string::npos);
}

TEST_CASE("a configuration with journal.postgres refuses LMDB settings and retention beside it, by name",
          "[e2e][postgres]") {
    gateway_deployment d(alice_token);
    std::ofstream(d.config, std::ios::trunc)
        << "journal: { postgres: { url: postgresql://airlock@127.0.0.1:1/x }, map_size: 2GiB, retention: 30d }\n";
    child_process check({AIRLOCK_BINARY, "check", d.config.string()});
    CHECK(check.wait(30s) != 0);
    CHECK_THAT(check.stderr_text() + check.stdout_text(),
               Catch::Contains("journal.map_size is an LMDB setting") && Catch::Contains("journal.retention is not supported"));
    // The upkeep commands, which work on LMDB's files, say so rather than touch another journal.
    std::ofstream(d.config, std::ios::trunc) << "journal: { postgres: { url: postgresql://airlock@127.0.0.1:1/x } }\n";
    for (auto command : {std::vector<std::string>{"journal", "prune", "--older-than", "30d"}, {"journal", "compact"}}) {
        command.insert(command.begin(), AIRLOCK_BINARY);
        command.push_back("--config");
        command.push_back(d.config.string());
        child_process p(command);
        CHECK(p.wait(30s) == 1);
        CHECK_THAT(p.stderr_text(), Catch::Contains("keeps its journal in PostgreSQL") &&
                                        Catch::Contains("airlock journal copy --from postgres:URL --to lmdb:DIR"));
    }
    std::ofstream(d.config, std::ios::trunc) << "journal: { postgres: { readers: 2 } }\n";
    child_process missing({AIRLOCK_BINARY, "check", d.config.string()});
    CHECK(missing.wait(30s) != 0);
    CHECK_THAT(missing.stderr_text() + missing.stdout_text(), Catch::Contains("journal.postgres.url"));
}
