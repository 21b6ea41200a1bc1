// The line framer against the obvious reference: split at '\n', a piece longer than the limit is
// oversized (only its tail kept), and the outcome does not depend on how the bytes arrive.
#include "mcp/protocol/line_framer.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <string>
#include <vector>

using namespace airlock;
using fuzz::require;

namespace {

struct framed {
    bool oversized;
    std::string text;  // the line, or the kept tail of an oversized one
};

void collect(mcp::line_framer& f, mcp::line_framer::ended e, std::vector<framed>& out) {
    if (e == mcp::line_framer::ended::line) out.push_back({false, std::string(f.line())});
    if (e == mcp::line_framer::ended::oversized) out.push_back({true, f.skipped().tail});
}

std::vector<framed> reference(std::string_view input, std::size_t max) {
    std::vector<framed> out;
    auto add = [&](std::string_view piece) {
        if (piece.size() > max) {
            auto keep = std::min(piece.size(), mcp::oversized_line::tail_bytes);
            out.push_back({true, std::string(piece.substr(piece.size() - keep))});
        } else {
            out.push_back({false, std::string(piece)});
        }
    };
    for (auto nl = input.find('\n'); nl != std::string_view::npos; nl = input.find('\n')) {
        add(input.substr(0, nl));
        input.remove_prefix(nl + 1);
    }
    if (!input.empty()) add(input);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size < 2) return 0;
    std::size_t const max = data[0] % 64;   // small limits, so oversized lines are common
    std::size_t const chunk = 1 + data[1] % 16;
    auto input = fuzz::as_text(data + 2, size - 2);
    mcp::line_framer f(max);
    std::vector<framed> got;
    for (std::size_t at = 0; at < input.size(); at += chunk) {
        auto part = input.substr(at, chunk);
        while (!part.empty()) collect(f, f.take(part), got);
    }
    collect(f, f.finish(), got);
    auto want = reference(input, max);
    require(got.size() == want.size(), "the framer ends another number of lines than the input holds");
    for (std::size_t i = 0; i < got.size(); ++i) {
        require(got[i].oversized == want[i].oversized, "a line is oversized in one count and not the other");
        require(got[i].text == want[i].text, "a line (or an oversized line's tail) differs from the input's");
    }
    require(f.finish() == mcp::line_framer::ended::none, "finish ends a line twice");
    return 0;
}
