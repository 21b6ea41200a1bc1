// The arrows between airlock's folders point down, and the tree says which way is down.
//
// The order lives in one place, the CMakeLists: each folder is a library (airlock_folder_library in
// cmake/airlock.cmake) that names the lower libraries it uses. These tests read those declarations
// and hold every `#include "…"` of the product to them, and add the rules a link line cannot see
// (a header-only arrow, a header of a library that is linked for another reason).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

fs::path source_dir() { return fs::path(AIRLOCK_SOURCE_DIR); }

std::string file_text(fs::path const& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct include_line {
    std::string file;  // relative to the source dir
    int line;
    std::string target;  // what is included, as written
    bool quoted;         // "…" rather than <…>
};

// Every #include of every .hpp/.cpp under `folder` (relative to the source dir).
std::vector<include_line> includes_under(std::string const& folder) {
    static std::regex const include(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
    std::vector<include_line> out;
    for (auto const& entry : fs::recursive_directory_iterator(source_dir() / folder)) {
        auto ext = entry.path().extension();
        if (ext != ".hpp" && ext != ".cpp") continue;
        std::ifstream in(entry.path());
        std::string line;
        int n = 0;
        while (std::getline(in, line)) {
            ++n;
            std::smatch m;
            if (std::regex_search(line, m, include))
                out.push_back({fs::relative(entry.path(), source_dir()).string(), n, m[2], m[1] == "\""});
        }
    }
    return out;
}

// The folder a repository path belongs to, as the libraries are cut: "core", "store",
// "mcp/client", "service/gateway", "service" (main.cpp); empty for anything else.
std::string folder_of(std::string const& path) {
    auto slash = path.find('/');
    if (slash == std::string::npos) return {};
    auto top = path.substr(0, slash);
    if (top == "core" || top == "store") return top;
    if (top != "mcp" && top != "service") return {};
    auto second = path.find('/', slash + 1);
    if (second == std::string::npos) return top;  // service/main.cpp
    return path.substr(0, second);
}

std::string folder_of_target(std::string const& t) {
    if (t == "airlock_core") return "core";
    if (t == "airlock_store") return "store";
    for (std::string top : {"mcp", "service"}) {
        auto prefix = "airlock_" + top + "_";
        if (t.rfind(prefix, 0) == 0) return top + "/" + t.substr(prefix.size());
    }
    return {};
}

// target -> the airlock targets it names as dependencies, from airlock_folder_library(...) and
// target_link_libraries(...) in the given CMakeLists.
std::map<std::string, std::set<std::string>> declared_links(std::vector<std::string> const& cmakelists) {
    std::map<std::string, std::set<std::string>> links;
    std::regex const call(R"((airlock_folder_library|target_link_libraries)\(([^)]*)\))");
    for (auto const& f : cmakelists) {
        auto text = file_text(source_dir() / f);
        for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
            std::istringstream words((*it)[2].str());
            std::vector<std::string> w;
            for (std::string s; words >> s;) w.push_back(s);
            if (w.empty()) continue;
            bool folder_library = (*it)[1] == "airlock_folder_library";
            auto& deps = links[w[0]];
            for (std::size_t i = folder_library ? 2 : 1; i < w.size(); ++i)
                if (w[i].rfind("airlock_", 0) == 0) deps.insert(w[i]);
        }
    }
    return links;
}

// folder -> every folder it may include (itself, and everything below it in the declared graph).
std::map<std::string, std::set<std::string>> allowed_folders() {
    auto links = declared_links({"mcp/CMakeLists.txt", "service/CMakeLists.txt"});
    links["airlock_store"].insert("airlock_core");
    links["airlock_core"];
    std::map<std::string, std::set<std::string>> out;
    for (auto const& [target, _] : links) {
        auto folder = folder_of_target(target);
        if (folder.empty()) continue;
        std::set<std::string> seen;
        std::vector<std::string> todo{target};
        while (!todo.empty()) {
            auto t = todo.back();
            todo.pop_back();
            if (!seen.insert(t).second) continue;
            for (auto const& d : links[t]) todo.push_back(d);
        }
        for (auto const& t : seen)
            if (auto f = folder_of_target(t); !f.empty()) out[folder].insert(f);
    }
    return out;
}

bool is_io_header(std::string const& target) {
    return target.rfind("boost/asio", 0) == 0 || target.rfind("boost/beast", 0) == 0;
}

}  // namespace

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

TEST_CASE("mcp/protocol is sans-io: it includes no Asio or Beast header at all") {
    auto lines = includes_under("mcp/protocol");
    CHECK(lines.size() > 20);
    for (auto const& l : lines) {
        INFO(l.file << ":" << l.line << " includes " << l.target);
        CHECK_FALSE(is_io_header(l.target));
    }
}

TEST_CASE("nothing under mcp/ includes a service/ header, and the gateway includes no store/ header") {
    for (auto const& l : includes_under("mcp")) {
        INFO(l.file << ":" << l.line << " includes " << l.target);
        CHECK(l.target.rfind("service/", 0) != 0);
    }
    // The gateway journals through core::journal_store; the LMDB store is the composition root's choice.
    for (auto const& l : includes_under("service/gateway")) {
        INFO(l.file << ":" << l.line << " includes " << l.target);
        CHECK(l.target.rfind("store/", 0) != 0);
    }
}

TEST_CASE("every include of the product points down the library graph its CMakeLists declare") {
    auto allowed = allowed_folders();
    // The graph itself is what the tree promises: a few arrows that must be there and must not.
    REQUIRE(allowed.count("service/gateway"));
    CHECK(allowed["mcp/protocol"] == std::set<std::string>{"core", "mcp/protocol"});
    CHECK(allowed["mcp/client"].count("mcp/protocol"));
    CHECK_FALSE(allowed["mcp/client"].count("mcp/server"));
    CHECK_FALSE(allowed["service/config"].count("service/ops"));
    CHECK_FALSE(allowed["service/gateway"].count("service/agents"));
    CHECK_FALSE(allowed["service/agents"].count("service/rest"));
    CHECK(allowed["service/cli"].count("service/app"));

    int checked = 0;
    for (std::string top : {"core", "store", "mcp", "service"}) {
        for (auto const& l : includes_under(top)) {
            if (!l.quoted) continue;
            auto from = folder_of(l.file);
            auto to = folder_of(l.target);
            if (to.empty() || from == "service") continue;  // main.cpp may use anything
            ++checked;
            INFO(l.file << ":" << l.line << " (" << from << ") includes " << l.target << " (" << to << ")");
            REQUIRE(allowed.count(from));
            CHECK(allowed[from].count(to));
        }
    }
    CHECK(checked > 300);
}
