#include "core/closest_names.hpp"

#include <catch2/catch.hpp>

using airlock::core::closest_names;
using airlock::core::edit_distance;

namespace {
// What server-filesystem offers, in its order.
std::vector<std::string> const filesystem_tools = {
    "read_file",       "read_text_file",  "read_media_file",          "read_multiple_files", "write_file",
    "edit_file",       "create_directory", "list_directory",          "list_directory_with_sizes",
    "directory_tree",  "move_file",       "search_files",             "get_file_info",       "list_allowed_directories"};
}  // namespace

TEST_CASE("an insertion, a deletion, a substitution and a swap each cost one edit") {
    CHECK(edit_distance("read_txt_file", "read_text_file") == 1);
    CHECK(edit_distance("read_text_file", "read_txt_file") == 1);
    CHECK(edit_distance("read_tixt_file", "read_text_file") == 1);
    CHECK(edit_distance("raed_file", "read_file") == 1);
    CHECK(edit_distance("", "echo") == 4);
    CHECK(edit_distance("echo", "echo") == 0);
    CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("a mistyped tool name finds the name that was meant, closest first") {
    CHECK(closest_names("read_txt_file", filesystem_tools) == std::vector<std::string>{"read_text_file", "read_file"});
    CHECK(closest_names("list_directroy", filesystem_tools) == std::vector<std::string>{"list_directory"});
    CHECK(closest_names("writ_file", filesystem_tools) == std::vector<std::string>{"write_file", "edit_file"});
}

TEST_CASE("at most three names are suggested") {
    std::vector<std::string> offered = {"get_a", "get_b", "get_c", "get_d", "get_e"};
    CHECK(closest_names("get_x", offered).size() == 3);
    CHECK(closest_names("get_x", offered, 1) == std::vector<std::string>{"get_a"});
}

TEST_CASE("a name differing only in case is suggested first") {
    CHECK(closest_names("Read_File", filesystem_tools).front() == "read_file");
}

TEST_CASE("nothing is suggested when no offered name is reasonably close") {
    CHECK(closest_names("delete_everything", filesystem_tools).empty());
    CHECK(closest_names("echo", {"get-sum", "add", "long_running_operation"}).empty());
    CHECK(closest_names("ab", {"cd"}).empty());
    CHECK(closest_names("anything", {}).empty());
}

TEST_CASE("a short name tolerates one edit, not two") {
    CHECK(closest_names("ecoh", {"echo"}) == std::vector<std::string>{"echo"});
    CHECK(closest_names("ehco", {"echo"}) == std::vector<std::string>{"echo"});
    CHECK(closest_names("exho", {"echo"}) == std::vector<std::string>{"echo"});
    CHECK(closest_names("ecto", {"each"}).empty());
}

TEST_CASE("a '_' written where the ref has '.' finds the tool") {
    CHECK(closest_names("get_sum", {"echo", "get.env", "get.sum"}) == std::vector<std::string>{"get.sum"});
}
