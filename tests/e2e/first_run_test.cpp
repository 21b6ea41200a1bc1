// The first run as the README tells it: `airlock serve --config examples/airlock.yaml --hints` (what
// `make run` starts) in a copy of the repository's layout, then the three commands it prints, pasted
// into a shell as they are. They must work: list the gateway's tools, start a TELLER run, show its
// journal. The signing key is made on the first start and the same key is used on the next.

#include "tests/e2e/checkout_copy.hpp"
#include "tests/e2e/sidecar_deployment.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>

#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {

std::string read_file(fs::path const& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The command printed under the comment line starting with `heading`: its lines up to the next
// blank line or comment (continuation backslashes kept: the shell reads them).
std::string command_after(std::string const& text, std::string const& heading) {
    auto at = text.find("\n" + heading);
    if (at == std::string::npos) return "";
    auto start = text.find('\n', at + 1);
    if (start == std::string::npos) return "";
    std::string out;
    std::istringstream lines(text.substr(start + 1));
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.starts_with("#")) break;
        out += line + "\n";
    }
    return out;
}

}  // namespace

TEST_CASE("the first run prints what it serves and three commands, and each works when pasted into a shell") {
    checkout_copy repo;
    std::string first_key;
    {
        auto airlock = repo.serve("--hints");
        auto port = airlock_port(*airlock);
        REQUIRE(wait_for_stdout(*airlock, "# 3."));
        auto hints = airlock->stdout_text();
        INFO(hints);
        auto base = "http://127.0.0.1:" + std::to_string(port);
        CHECK(hints.find("airlock is serving on " + base) != std::string::npos);
        CHECK(hints.find(base + "/mcp") != std::string::npos);
        CHECK(hints.find("everything, ledger") != std::string::npos);
        CHECK(hints.find("1 agent: teller") != std::string::npos);

        // The signing key and the demo token were made on this first start, private to their owner.
        auto key = repo.dir.path() / "var" / "keys" / "provenance.key";
        REQUIRE(fs::exists(key));
        CHECK((fs::status(key).permissions() & (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none);
        CHECK(fs::exists(repo.dir.path() / "var" / "keys" / "provenance.pub"));
        REQUIRE(fs::exists(repo.dir.path() / "var" / "demo.token"));
        first_key = read_file(key);

        // 1: the gateway lists the tools the demo principal is granted, and only those.
        auto list = command_after(hints, "# 1.");
        REQUIRE_FALSE(list.empty());
        auto listed = repo.paste(list);
        INFO(listed.out << listed.err);
        REQUIRE(listed.exit_code == 0);
        auto tools = json::parse(listed.out).at("result").at("tools").as_array();
        std::vector<std::string> names;
        for (auto const& t : tools) names.emplace_back(t.at("name").as_string());
        std::sort(names.begin(), names.end());
        CHECK(names == std::vector<std::string>{"everything__echo", "everything__get-sum"});

        // 2: a TELLER run reads AC-1 through the ledger upstream, is refused its post, and answers.
        auto start = command_after(hints, "# 2.");
        REQUIRE_FALSE(start.empty());
        auto started = repo.paste(start);
        INFO(started.out << started.err);
        REQUIRE(started.exit_code == 0);
        auto run = json::parse(started.out).as_object();
        CHECK(run.at("status") == "succeeded");
        CHECK(run.at("output") == "AC-1 holds 42. I was not permitted to post to it.");
        CHECK(run.at("policy_denials") == 1);
        std::string run_id(run.at("run_id").as_string());

        // 3: the run's journal, record by record, chained from seq 1 to the head the run reported.
        auto show = command_after(hints, "# 3.");
        REQUIRE(show.find("RUN_ID") != std::string::npos);
        show = std::regex_replace(show, std::regex("RUN_ID"), run_id);
        auto shown = repo.paste(show);
        INFO(shown.out << shown.err);
        REQUIRE(shown.exit_code == 0);
        std::istringstream lines(shown.out);
        std::vector<json::object> records;
        for (std::string line; std::getline(lines, line);)
            if (!line.empty()) records.push_back(json::parse(line).as_object());
        REQUIRE(records.size() == run.at("head_seq").to_number<std::size_t>());
        CHECK(records.front().at("kind") == "run_admitted");
        CHECK(records.back().at("kind") == "run_sealed");
        for (std::size_t i = 1; i < records.size(); ++i) CHECK(records[i].at("prev_hash") == records[i - 1].at("hash"));

        airlock->signal(SIGTERM);
        CHECK(airlock->wait(30s) == 0);
    }
    // The next start uses the key the first one made.
    auto again = repo.serve("--no-hints");
    airlock_port(*again);
    CHECK(read_file(repo.dir.path() / "var" / "keys" / "provenance.key") == first_key);
    again->signal(SIGTERM);
    CHECK(again->wait(30s) == 0);
    CHECK(again->stdout_text().empty());
}
