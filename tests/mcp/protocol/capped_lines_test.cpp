#include "mcp/protocol/capped_lines.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace airlock::mcp;

namespace {

// Feeds `input` in chunks of `chunk` bytes; each line as its text, a truncated one followed by " [cut]".
std::vector<std::string> split(std::string const& input, std::size_t cap, std::size_t chunk) {
    capped_lines lines(cap);
    std::vector<std::string> out;
    auto record = [&] { out.push_back(lines.line() + (lines.truncated() ? " [cut]" : "")); };
    for (std::size_t at = 0; at < input.size(); at += chunk) {
        std::string_view data = std::string_view(input).substr(at, chunk);
        while (!data.empty())
            if (lines.take(data)) record();
    }
    if (lines.finish()) record();
    return out;
}

}  // namespace

TEST_CASE("stderr lines are split at their newlines however the bytes arrive") {
    std::string const input = "starting\r\nlistening on stdio\n\nready";
    std::vector<std::string> const want{"starting", "listening on stdio", "", "ready"};
    for (std::size_t chunk : {1u, 2u, 3u, 7u, 64u}) {
        INFO("chunk " << chunk);
        CHECK(split(input, 1024, chunk) == want);
    }
}

TEST_CASE("a stderr line past the cap keeps its first bytes and says it was cut; the next line is whole") {
    std::string const input = std::string(40, 'a') + "\nshort\n" + std::string(10, 'b') + "\n";
    for (std::size_t chunk : {1u, 5u, 16u, 100u}) {
        INFO("chunk " << chunk);
        CHECK(split(input, 16, chunk) == std::vector<std::string>{std::string(16, 'a') + " [cut]", "short", std::string(10, 'b')});
    }
    // Exactly the cap is not cut.
    CHECK(split(std::string(16, 'c') + "\n", 16, 3) == std::vector<std::string>{std::string(16, 'c')});
}

TEST_CASE("stderr that ends without a newline still yields its last line, and nothing more when it ended on one") {
    CHECK(split("one\ntwo", 64, 2) == std::vector<std::string>{"one", "two"});
    CHECK(split("one\n", 64, 2) == std::vector<std::string>{"one"});
    CHECK(split("", 64, 2).empty());
    capped_lines lines(8);
    CHECK_FALSE(lines.finish());
}
