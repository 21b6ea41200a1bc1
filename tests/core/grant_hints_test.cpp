#include "core/grant_hints.hpp"

#include <catch2/catch.hpp>

using namespace airlock::core;

namespace {

manifest grants_of(std::vector<std::string> const& refs) {
    manifest m;
    for (auto const& r : refs) m.tools.push_back(tool_grant{.ref = *tool_id::parse(r)});
    return m;
}

std::vector<tool_id> ids(std::string const& server, std::vector<std::string> const& names) {
    std::vector<tool_id> out;
    for (auto const& n : names) out.push_back(*tool_id::make(server, n));
    return out;
}

}  // namespace

TEST_CASE("a grant of a tool the upstream does not offer says which tool was probably meant") {
    auto hints = unoffered_grants(grants_of({"tool://fs/read_txt_file"}), "fs",
                                  ids("fs", {"read_text_file", "list_directory", "write_file"}));
    CHECK(hints == std::vector<std::string>{
                       "tool://fs/read_txt_file is granted but fs offers no such tool; did you mean tool://fs/read_text_file?"});
}

TEST_CASE("several close names are offered as alternatives, closest first") {
    auto hints = unoffered_grants(grants_of({"tool://fs/get_c"}), "fs", ids("fs", {"get_ab", "get_a", "get_b", "get_d"}));
    REQUIRE(hints.size() == 1);
    CHECK(hints[0] == "tool://fs/get_c is granted but fs offers no such tool; did you mean tool://fs/get_a, "
                      "tool://fs/get_b or tool://fs/get_d?");
}

TEST_CASE("a grant with no close name is reported without a guess") {
    auto hints = unoffered_grants(grants_of({"tool://fs/format_disk"}), "fs", ids("fs", {"read_text_file"}));
    CHECK(hints == std::vector<std::string>{"tool://fs/format_disk is granted but fs offers no such tool"});
}

TEST_CASE("grants that are offered, and grants on other upstreams, are not reported") {
    auto m = grants_of({"tool://fs/read_text_file", "tool://ledger/post", "tool://fs/list.directory"});
    CHECK(unoffered_grants(m, "fs", ids("fs", {"read_text_file", "list.directory"})).empty());
    // Tools of another upstream in the list do not count as offered by fs.
    CHECK(unoffered_grants(grants_of({"tool://fs/post"}), "fs", ids("ledger", {"post"})).size() == 1);
}

TEST_CASE("an upstream that offers nothing reports every grant on it") {
    auto hints = unoffered_grants(grants_of({"tool://fs/a", "tool://fs/b"}), "fs", {});
    CHECK(hints.size() == 2);
}

TEST_CASE("each upstream's grants are matched against that upstream's tools only") {
    auto m = grants_of({"tool://fs/read_txt_file", "tool://everything/ecoh", "tool://everything/echo"});
    auto offered = ids("fs", {"read_text_file", "echo"});
    for (auto const& id : ids("everything", {"echo", "read_txt_file"})) offered.push_back(id);
    CHECK(unoffered_grants(m, "fs", offered) ==
          std::vector<std::string>{
              "tool://fs/read_txt_file is granted but fs offers no such tool; did you mean tool://fs/read_text_file?"});
    CHECK(unoffered_grants(m, "everything", offered) ==
          std::vector<std::string>{
              "tool://everything/ecoh is granted but everything offers no such tool; did you mean tool://everything/echo?"});
}
