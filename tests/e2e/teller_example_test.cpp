// The TELLER example as shipped (examples/teller.yaml, examples/teller.script.yaml, the ledger MCP
// server in examples/ledger/ over stdio), wired from a configuration the way `airlock serve` wires
// it, and `airlock replay` on the run it left in the journal.

#include "mcp/client/client.hpp"
#include "mcp/client/stdio_transport.hpp"
#include "service/config/config.hpp"
#include "service/agents/runner_factory.hpp"
#include "store/lmdb_store.hpp"
#include "tests/support/agent_runs.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/teller_example.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <fstream>

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;
using namespace airlock;
using namespace std::chrono_literals;

namespace {

using testing::teller::source;
using testing::teller::write_config;

struct teller_run {
    std::string run_id;
    service::run_view view;
    std::vector<core::record> records;
    std::optional<core::chain_fault> fault;
};

teller_run run_teller(fs::path const& config_file) {
    auto c = service::load_config(config_file);
    INFO((c ? std::string() : c.error().message));
    REQUIRE(c.has_value());
    asio::io_context ioc;
    auto journal = std::shared_ptr<store::lmdb_store>(store::lmdb_store::open(c->journal).value());
    auto const& u = c->upstreams.at(0);
    mcp::client_options co;
    co.server_name = u.name;
    co.kind = mcp::transport_kind::stdio;
    auto ledger = std::make_shared<mcp::mcp_client>(std::make_unique<mcp::stdio_transport>(ioc.get_executor(), u.stdio), co);
    auto runner = service::make_runner(*c, {ioc.get_executor(), journal, {ledger}, {}});
    REQUIRE(runner.has_value());
    auto r = *runner;
    teller_run out;
    auto task = [&]() -> asio::awaitable<void> {
        // Named first: GCC 12 mishandles temporaries inside a co_await expression.
        auto question = testing::operator_question("what is in AC-1?");
        auto run = co_await testing::async_run_to_end(r, std::move(question));
        out.run_id = run.run_id;
        out.view = run.view;
        out.records = run.records;
        out.fault = (co_await r->async_verify(run.run_id)).value();
        co_await ledger->async_close();
    };
    auto done = asio::co_spawn(ioc, task(), asio::use_future);
    ioc.run();
    done.get();
    journal->close();
    return out;
}

}  // namespace

TEST_CASE("the TELLER example reads the ledger over stdio, is refused the model-chosen post, and answers") {
    testing::temp_dir dir("airlock-teller");
    auto run = run_teller(write_config(dir.path(), source("examples/teller.yaml")));
    CHECK(run.view.summary.status == "succeeded");
    CHECK(run.view.output == json::value("AC-1 holds 42. I was not permitted to post to it."));
    std::size_t started = 0, denied = 0;
    for (auto const& r : run.records) {
        if (r.kind == core::record_kind::effect_started) ++started;
        if (r.kind == core::record_kind::policy_denied) {
            ++denied;
            CHECK(r.body.at("reason") == "protected_field_untrusted");
            CHECK(r.body.at("tool") == "tool://ledger/post");
        }
        if (r.kind == core::record_kind::effect_done && r.body.at("effect_key").as_string().ends_with("/tool"))
            CHECK(r.body.at("output").at("balance") == 42);
    }
    CHECK(started == 4);  // three model turns and the read
    CHECK(denied == 1);
    CHECK_FALSE(run.fault.has_value());
}

TEST_CASE("airlock replay reassembles the run from the journal, and reports a manifest that would act differently") {
    testing::temp_dir dir("airlock-teller");
    auto config = write_config(dir.path(), source("examples/teller.yaml"));
    auto run = run_teller(config);
    REQUIRE(run.view.summary.status == "succeeded");

    auto replay = testing::run_command({AIRLOCK_BINARY, "replay", "--config", config.string(), run.run_id});
    INFO(replay.out << replay.err);
    CHECK(replay.exit_code == 0);
    CHECK_THAT(replay.out, Catch::Contains("(0 model calls, 0 tool calls)"));
    CHECK_THAT(replay.out, Catch::Contains("status: succeeded"));
    CHECK_THAT(replay.out, Catch::Contains("output: \"AC-1 holds 42. I was not permitted to post to it.\""));

    // The reviewed manifest changed: the read now needs a reviewer, which the recorded run never asked.
    auto edited = testing::teller::edited_manifest(dir.path(), "teller-changed.yaml",
                                                   "      description: Read a ledger account's balance.\n",
                                                   "      requires_approval: true\n      description: Read a ledger account's balance.\n");
    auto changed = write_config(dir.path(), edited.string());
    auto diverged = testing::run_command({AIRLOCK_BINARY, "replay", "--config", changed.string(), run.run_id});
    INFO(diverged.out << diverged.err);
    CHECK(diverged.exit_code == 1);
    CHECK_THAT(diverged.err, Catch::Contains("divergence: seq 4: "));

    auto unknown = testing::run_command({AIRLOCK_BINARY, "replay", "--config", config.string(), "01JDZZZZZZZZZZZZZZZZZZZZZZ"});
    CHECK(unknown.exit_code == 1);
    CHECK_THAT(unknown.err, Catch::Contains("01JDZZZZZZZZZZZZZZZZZZZZZZ"));
}
