// Reads one JSON text per line on stdin and prints, per line, airlock's canonical form of it or
// "!CODE" when airlock refuses it. tests/tools/canon_check.mjs feeds it generated values and
// compares each line with an independent RFC 8785 implementation; the error's message is left out
// so that a refusal on each side is compared by kind only, and no input is echoed.
#include "core/canonical_json.hpp"

#include <iostream>
#include <string>

int main() {
    std::ios::sync_with_stdio(false);
    std::string line;
    std::string out;
    while (std::getline(std::cin, line)) {
        auto canonical = airlock::core::canonicalize(line);
        out.clear();
        if (canonical) out = std::move(*canonical);
        else out = "!" + canonical.error().code;
        out.push_back('\n');
        std::cout << out;
        // The driver sends a batch and waits for its answers; flushing at the end of the input it
        // has would be enough, but a batch may end anywhere, so each answer goes out whole.
        if (std::cin.rdbuf()->in_avail() == 0) std::cout.flush();
    }
    std::cout.flush();
    return 0;
}
