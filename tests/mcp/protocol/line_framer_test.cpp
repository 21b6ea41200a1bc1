#include "mcp/protocol/line_framer.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace airlock::mcp;
using ended = line_framer::ended;

namespace {

// Feeds `input` in chunks of `chunk` bytes; each line as its text, each skipped one as "<skipped ID>".
std::vector<std::string> frame(line_framer& f, std::string const& input, std::size_t chunk, bool at_end = true) {
    std::vector<std::string> out;
    auto record = [&](ended e) {
        if (e == ended::line) out.emplace_back(f.line());
        else if (e == ended::oversized) out.push_back("<skipped " + (f.skipped().id() ? to_string(*f.skipped().id()) : std::string("?")) + ">");
    };
    for (std::size_t at = 0; at < input.size(); at += chunk) {
        std::string_view data = std::string_view(input).substr(at, chunk);
        while (!data.empty()) record(f.take(data));
    }
    if (at_end) record(f.finish());
    return out;
}

}  // namespace

TEST_CASE("lines are framed by their newlines however the bytes arrive") {
    std::string input = "{\"a\":1}\n{\"b\":2}\n\n{\"c\":3}";
    for (std::size_t chunk : {1, 3, 100}) {
        line_framer g(64);
        CHECK(frame(g, input, chunk) == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "", "{\"c\":3}"});
    }
}

TEST_CASE("a line over the limit is skipped up to its newline, and the line after it is read whole") {
    std::string big = R"({"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":")" + std::string(500, 'x') + "\"}}";
    for (std::size_t chunk : {1, 7, 4096}) {
        line_framer f(100);
        CHECK(frame(f, big + "\n{\"next\":1}\n", chunk) == std::vector<std::string>{"<skipped 7>", "{\"next\":1}"});
    }
}

TEST_CASE("a skipped line's id is read from its last bytes when its first bytes do not show it") {
    std::string big = R"({"method":"tools/call","params":{"pad":")" + std::string(500, 'x') + R"("},"jsonrpc":"2.0","id":"late"})";
    line_framer f(100);
    auto out = frame(f, big + "\n", 64, false);
    REQUIRE(out == std::vector<std::string>{"<skipped \"late\">"});
    CHECK(f.skipped().head.has_method);
}

TEST_CASE("a skipped line's id is read from its last bytes when members follow it, or when it is a long string") {
    // The id written before "jsonrpc", as some SDKs order a message's members.
    std::string before_jsonrpc = R"({"method":"tools/call","params":{"pad":")" + std::string(5000, 'x') + R"("},"id":7,"jsonrpc":"2.0"})";
    // A string id of 1 KiB: the bytes kept of the line's end must hold all of it.
    std::string long_id(1024, 'k');
    std::string long_string = R"({"jsonrpc":"2.0","method":"tools/call","params":{"pad":")" + std::string(5000, 'x') + R"("},"id":")" +
                              long_id + R"("})";
    for (std::size_t chunk : {1, 100, 8192}) {
        line_framer f(100);
        CHECK(frame(f, before_jsonrpc + "\n" + long_string + "\n", chunk) ==
              std::vector<std::string>{"<skipped 7>", "<skipped \"" + long_id + "\">"});
    }
}

TEST_CASE("a line exactly at the limit is read, one byte more is skipped") {
    line_framer f(10);
    CHECK(frame(f, "0123456789\n0123456789A\n", 4) == std::vector<std::string>{"0123456789", "<skipped ?>"});
}

TEST_CASE("input that ends inside a line gives that line at its end, and nothing when it ends between lines") {
    line_framer f(64);
    CHECK(frame(f, "{\"a\":1}\n{\"b\"", 5) == std::vector<std::string>{"{\"a\":1}", "{\"b\""});
    line_framer g(64);
    CHECK(frame(g, "{\"a\":1}\n", 5) == std::vector<std::string>{"{\"a\":1}"});
}

// Found by the line_framer fuzz target: the tail of an oversized line lacked the bytes that
// arrived before the chunk that overflowed it, so an id those bytes began was lost.
TEST_CASE("an oversized line keeps the id that began before the chunk that made it too long") {
    std::string const line = R"({"result":{"text":"a long answer"},"jsonrpc":"2.0","id":7})";
    line_framer f(line.size() - 2);
    // Everything but `7}` fits; the last chunk overflows the limit and holds only the end of the id.
    std::string_view first = std::string_view(line).substr(0, line.size() - 2);
    REQUIRE(f.take(first) == ended::none);
    std::string rest = line.substr(line.size() - 2) + "\n";
    std::string_view last = rest;
    REQUIRE(f.take(last) == ended::oversized);
    REQUIRE(f.skipped().id() == request_id{std::int64_t{7}});
    CHECK(f.skipped().tail == line);
}
