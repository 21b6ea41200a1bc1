#pragma once
// The whole text of a file; empty when it cannot be read.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace airlock::testing {

inline std::string file_text(std::filesystem::path const& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace airlock::testing
