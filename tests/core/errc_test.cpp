// airlock's error codes as a boost::system category: each has one stable spelling, a spelling
// names one code, and each maps to a JSON-RPC error code.
#include "core/errc.hpp"
#include "core/error.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace airlock;
namespace fs = std::filesystem;

TEST_CASE("every errc has its own spelling, and the spelling reads back as the same errc") {
    std::set<std::string_view> seen;
    for (auto e : core::all_errcs) {
        auto s = core::to_string(e);
        INFO(static_cast<int>(e) << " " << s);
        CHECK(seen.insert(s).second);
        CHECK(core::errc_from_string(s) == e);
    }
    CHECK_FALSE(core::errc_from_string("corrupt"));
    CHECK_FALSE(core::errc_from_string(""));
}

TEST_CASE("the wire spellings of the codes clients match on are today's") {
    CHECK(core::to_string(core::errc::unknown_run) == "unknown_run");
    CHECK(core::to_string(core::errc::at_capacity) == "at_capacity");
    CHECK(core::to_string(core::errc::invalid_field) == "invalid_field");
    CHECK(core::to_string(core::errc::forbidden_host) == "forbidden_host");
    CHECK(core::to_string(core::errc::unauthorized) == "unauthorized");
    CHECK(core::to_string(core::errc::not_pending) == "not_pending");
}

TEST_CASE("an errc is a boost::system error code of the airlock category, its message the spelling") {
    boost::system::error_code ec = core::errc::not_running;
    CHECK(ec);
    CHECK(ec.category() == core::errc_category());
    CHECK(std::string(ec.category().name()) == "airlock");
    CHECK(ec.message() == "not_running");
    CHECK(ec == core::make_error_code(core::errc::not_running));
    CHECK(ec != core::make_error_code(core::errc::sealed));
}

TEST_CASE("every errc maps to a JSON-RPC error code of the standard set") {
    std::set<std::int64_t> const standard{-32600, -32601, -32602, -32603};
    for (auto e : core::all_errcs) {
        INFO(core::to_string(e));
        CHECK(standard.count(core::to_jsonrpc_code(e)) == 1);
    }
    CHECK(core::to_jsonrpc_code(core::errc::invalid_field) == -32602);
    CHECK(core::to_jsonrpc_code(core::errc::unauthorized) == -32600);
    CHECK(core::to_jsonrpc_code(core::errc::internal) == -32603);
}

TEST_CASE("an error a client reads is made from its errc, and says the same spelling") {
    auto e = core::make_error(core::errc::unknown_run, "no run 'r-1'");
    CHECK(e.code == "unknown_run");
    CHECK(e.message == "no run 'r-1'");
    CHECK(core::errc_of(e) == core::errc::unknown_run);
    // A code no client reads is still a string, and names no errc.
    CHECK_FALSE(core::errc_of(core::make_error("duplicate_key", "m")));
}

TEST_CASE("no product source spells an errc as a string where it makes an error") {
    // make_error("unknown_run", ...) would compile with a typo in it; make_error(errc::unknown_run, ...)
    // cannot. Every source under core/, mcp/, service/ and store/ is read.
    std::regex const literal_call(R"re(make_error\(\s*"([a-z_]+)")re");
    std::vector<std::string> found;
    std::size_t files = 0;
    for (auto const* dir : {"core", "mcp", "service", "store"}) {
        for (auto const& entry : fs::recursive_directory_iterator(fs::path(AIRLOCK_SOURCE_DIR) / dir)) {
            auto const ext = entry.path().extension();
            if (ext != ".cpp" && ext != ".hpp") continue;
            ++files;
            std::ifstream in(entry.path());
            std::stringstream text;
            text << in.rdbuf();
            auto const s = text.str();
            for (auto it = std::sregex_iterator(s.begin(), s.end(), literal_call); it != std::sregex_iterator(); ++it)
                if (core::errc_from_string((*it)[1].str()))
                    found.push_back(entry.path().lexically_relative(AIRLOCK_SOURCE_DIR).string() + ": " + (*it)[1].str());
        }
    }
    REQUIRE(files > 100);
    CHECK(found == std::vector<std::string>{});
}
