#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace fs = std::filesystem;

// core/ is the pure domain: it may name boost::asio::awaitable in an interface, nothing more.
TEST_CASE("core includes no Asio or Beast I/O header") {
    std::regex include(R"(^\s*#\s*include\s*[<"](boost/(asio|beast)[^>"]*)[>"])");
    int files = 0;
    for (auto const& entry : fs::directory_iterator(fs::path(AIRLOCK_SOURCE_DIR) / "core")) {
        auto ext = entry.path().extension();
        if (ext != ".hpp" && ext != ".cpp") continue;
        ++files;
        std::ifstream in(entry.path());
        std::string line;
        int n = 0;
        while (std::getline(in, line)) {
            ++n;
            std::smatch m;
            if (std::regex_search(line, m, include)) {
                INFO(entry.path().filename().string() << ":" << n << " includes " << m[1]);
                CHECK(m[1] == "boost/asio/awaitable.hpp");
            }
        }
    }
    CHECK(files > 5);
}
