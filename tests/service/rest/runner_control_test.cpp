// The runner's error codes as the REST API answers them: every code the runner can return (read from
// its sources, so a new one cannot be missed) turns into an errc through runner_control's one table.
#include "service/rest/problem.hpp"
#include "service/rest/runner_control.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <vector>
#include <sstream>
#include <string>

using namespace airlock;
using namespace airlock::service;
namespace fs = std::filesystem;

namespace {

// Every string literal in the first argument of a make_error( call in the runner's sources (and the
// recovery decision it performs, core/recovery.cpp, whose refusals it returns as they are):
// make_error("stopping", ...) and make_error(empty ? "not_awaiting_approval" : "unknown_effect", ...).
std::set<std::string> runner_codes() {
    std::set<std::string> out;
    std::regex const call(R"(make_error\(\s*([^,]*),)");
    std::regex const literal(R"re("([a-z_]+)")re");
    std::vector<fs::path> sources{fs::path(AIRLOCK_SOURCE_DIR) / "core" / "recovery.cpp"};
    for (auto const& entry : fs::directory_iterator(fs::path(AIRLOCK_SOURCE_DIR) / "service" / "agents")) {
        auto name = entry.path().filename().string();
        if (name.starts_with("runner") && entry.path().extension() == ".cpp") sources.push_back(entry.path());
    }
    for (auto const& source : sources) {
        std::ifstream in(source);
        std::stringstream text;
        text << in.rdbuf();
        auto const s = text.str();
        for (auto it = std::sregex_iterator(s.begin(), s.end(), call); it != std::sregex_iterator(); ++it) {
            auto const arg = (*it)[1].str();
            for (auto l = std::sregex_iterator(arg.begin(), arg.end(), literal); l != std::sregex_iterator(); ++l)
                out.insert((*l)[1].str());
        }
    }
    return out;
}

}  // namespace

TEST_CASE("every error code the runner can return maps to an errc, none silently to 500") {
    auto codes = runner_codes();
    // The sources were read: these are codes the runner has returned since the REST API exists.
    REQUIRE(codes.count("too_many_runs") == 1);
    REQUIRE(codes.count("not_awaiting_approval") == 1);
    for (auto const& code : codes) {
        INFO(code);
        auto e = control_errc(code);
        REQUIRE(e);
        CHECK(to_control_error(core::make_error(code, "m")).code == core::to_string(*e));
    }
}

TEST_CASE("the runner's codes are renamed to the ones the REST API has always answered with") {
    CHECK(to_control_error(core::make_error("too_many_runs", "full")).code == "at_capacity");
    CHECK(to_control_error(core::make_error("stopping", "bye")).code == "unavailable");
    CHECK(to_control_error(core::make_error("run_busy", "x")).code == "not_running");
    CHECK(to_control_error(core::make_error("unknown_effect", "x")).code == "not_pending");
    CHECK(to_control_error(core::make_error("ambiguous_capability", "x")).code == "invalid_input");
    CHECK(to_control_error(core::make_error("unknown_run", "x")).code == "unknown_run");
    auto kept = to_control_error(core::make_error("stopping", "airlock is stopping"));
    CHECK(kept.message == "airlock is stopping");
}

TEST_CASE("a journal error passing through the runner keeps its code, and answers 500") {
    CHECK_FALSE(control_errc("corrupt"));
    CHECK(to_control_error(core::make_error("corrupt", "seq 3")).code == "corrupt");
    CHECK(problem_status("corrupt") == http::status::internal_server_error);
}
