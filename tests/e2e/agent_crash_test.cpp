// Crash recovery end to end: airlock is killed with SIGKILL while agent runs are calling a mutating
// upstream that logs every call it performs (tests/fixtures/agents/counting_server.mjs); a new
// airlock resumes the runs from the journal, and no mutating call is ever performed twice.

#include "service/agents/providers/scripted.hpp"
#include "service/agents/runner.hpp"
#include "store/lmdb_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>

#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace airlock;
using namespace std::chrono_literals;

namespace {

constexpr int runs = 6;

void write(fs::path const& p, std::string const& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

std::vector<json::object> log_lines(fs::path const& p) {
    std::vector<json::object> out;
    std::ifstream in(p);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty()) out.push_back(json::parse(line).as_object());
    return out;
}

template <class T>
T run_sync(boost::asio::awaitable<T> task) {
    boost::asio::io_context ioc;
    auto f = boost::asio::co_spawn(ioc, std::move(task), boost::asio::use_future);
    ioc.run();
    return f.get();
}

// Two mutating adds and a read per run; the later adds carry the earlier results' sources, so the
// protected key admits them explicitly.
constexpr char counter_manifest[] = R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: counter, version: "1.0.0" }
spec:
  capabilities: { provides: [count] }
  models: { privileged: { provider: scripted, model: counter-1 } }
  tools:
    - ref: tool://counter/add
      mutates: true
      description: Add an amount to a counter.
      protected_fields:
        - { path: /key, allowed_sources: [input, "model://scripted/counter-1", "tool://counter/add", "tool://counter/peek"] }
    - { ref: tool://counter/peek, mutates: false, description: Read a counter. }
  execution: { kind: tool-calling, max_turns: 6 }
  budgets: {}
)";

constexpr char counter_script[] = R"(model: counter-1
turns:
  - call: { tool: counter__add, arguments: { key: a, amount: 1 } }
  - call: { tool: counter__add, arguments: { key: b, amount: 2 } }
  - call: { tool: counter__peek, arguments: { key: a } }
  - say: done
)";

}  // namespace

TEST_CASE("airlock killed mid-run resumes its runs at restart, and no mutating call is performed twice") {
    testing::temp_dir dir("airlock-crash");
    auto const node = testing::peers::node();
    auto const fixture = std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/agents/counting_server.mjs";
    auto const log = dir.path() / "calls.log";
    write(dir.path() / "counter.yaml", counter_manifest);
    write(dir.path() / "counter.script.yaml", counter_script);
    write(dir.path() / "airlock.yaml",
          "server: { listen: 127.0.0.1:0 }\njournal: { dir: journal }\n"
          "upstreams:\n  - name: counter\n    stdio:\n      argv: [" + node + ", " + fixture + "]\n"
          "      env: { COUNTER_LOG: " + log.string() + ", COUNTER_DELAY_MS: \"500\" }\n"
          "egress:\n  - process: " + node + "\n  - local\n"
          "agents:\n  - { manifest: counter.yaml, script: counter.script.yaml }\n"
          "logging: { level: info, format: text }\n");

    // Admit the runs the way an admission does, before airlock starts: it finds them unfinished.
    std::vector<std::string> ids;
    {
        auto store = store::lmdb_store::open({.directory = dir.path() / "journal"});
        REQUIRE(store.has_value());
        auto manifest = core::parse_manifest(counter_manifest).value();
        auto provider = std::make_shared<service::scripted_provider>(service::parse_script(counter_script).value());
        service::agent_entry agent{manifest, "script:counter.script.yaml", provider};
        auto now = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
        for (int i = 0; i < runs; ++i) {
            std::array<std::uint8_t, 10> random{};
            random[9] = static_cast<std::uint8_t>(i);
            auto id = core::run_id::from_parts(now, random).str();
            service::run_request req;
            req.agent = "counter";
            req.input = json::value("count " + std::to_string(i));
            std::vector<core::new_record> admit{
                {core::record_kind::run_admitted, service::admitted_body(agent, req, "2026-11-30T00:00:00Z", now)}};
            auto appended = run_sync((*store)->async_append(id, std::move(admit)));
            REQUIRE(appended.has_value());
            ids.push_back(id);
        }
        (*store)->close();
    }

    auto config = (dir.path() / "airlock.yaml").string();
    std::size_t performed_before_kill = 0;
    {
        testing::child_process first({AIRLOCK_BINARY, "serve", "--config", config});
        REQUIRE(first.wait_for_stderr_line("listening on", 60s).has_value());
        // Killed once the first adds have answered and later calls are under way.
        for (int i = 0; i < 3000 && log_lines(log).size() < runs + 3; ++i) std::this_thread::sleep_for(10ms);
        first.signal(SIGKILL);
        first.wait(30s);
        performed_before_kill = log_lines(log).size();
        INFO(first.stderr_text());
        REQUIRE(performed_before_kill >= runs + 3);
        REQUIRE(performed_before_kill < 3 * runs);  // the kill landed in the middle of the runs
    }
    // The upstream child sees its stdin close and leaves once its calls in flight are done.
    std::this_thread::sleep_for(500ms);
    auto const landed_while_dying = log_lines(log).size();

    std::map<std::string, std::string> status, reason;
    {
        testing::child_process second({AIRLOCK_BINARY, "serve", "--config", config});
        REQUIRE(second.wait_for_stderr_line("listening on", 60s).has_value());
        auto store = store::lmdb_store::open({.directory = dir.path() / "journal"});
        REQUIRE(store.has_value());
        for (int i = 0; i < 6000 && status.size() < ids.size(); ++i) {
            for (auto const& id : ids) {
                auto head = (*store)->head(id);
                if (head && *head && (*head)->sealed) status[id] = (*head)->status;
            }
            if (status.size() < ids.size()) std::this_thread::sleep_for(10ms);
        }
        for (auto const& id : ids) {
            auto records = (*store)->read(id);
            REQUIRE(records.has_value());
            for (auto const& r : *records)
                if (r.kind == core::record_kind::run_sealed) reason[id] = std::string(r.body.at("reason").as_string());
        }
        (*store)->close();
        second.signal(SIGTERM);
        second.wait(30s);
        INFO(second.stderr_text());
        REQUIRE(status.size() == ids.size());
    }

    // No mutating call twice: every add the upstream performed has its own effect key.
    std::map<std::string, int> adds;
    for (auto const& line : log_lines(log))
        if (line.at("tool") == "add") ++adds[std::string(line.at("effect").as_string())];
    for (auto const& [effect, n] : adds) {
        INFO(effect);
        CHECK(n == 1);
    }
    int succeeded = 0, quarantined = 0;
    for (auto const& id : ids) {
        INFO(id << " " << status[id] << ": " << reason[id]);
        CHECK((status[id] == "succeeded" || status[id] == "quarantined"));
        if (status[id] == "succeeded") {
            ++succeeded;
            CHECK(adds[id + "/000002/tool"] == 1);
            CHECK(adds[id + "/000004/tool"] == 1);
        } else {
            ++quarantined;
            // It names the add whose outcome was lost, and that add was performed at most once.
            CHECK(reason[id].find("(tool://counter/add)") != std::string::npos);
        }
    }
    CHECK(succeeded + quarantined == runs);
    CHECK(landed_while_dying >= performed_before_kill);
}
