// The README cannot rot: its shell blocks are read from README.md when the test runs, and each one
// marked `<!-- readme-test: run -->` runs in bash (set -euo pipefail) from the top of a copy of the
// checkout, against an airlock started as `make run` starts it (examples/airlock.yaml) but on a
// free port, in the README's order. A block must exit 0, and when the README shows its output (the
// json or text block right under it) print that: `…` stands for any text and a run id for any run
// id. A block that cannot run here says why in its marker (`readme-test: template, WHY`). Every
// file the README names must be in the repository.

#include "tests/e2e/checkout_copy.hpp"
#include "tests/e2e/sidecar_deployment.hpp"
#include "tests/support/file_text.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {

std::string const ellipsis = "\xE2\x80\xA6";  // …
std::string const readme_port = "127.0.0.1:8080";

// One fenced block of the README, with the marker comment above it and the output block under it.
struct readme_block {
    std::size_t line = 0;  // where the fence opens, 1-based
    std::string marker;    // the text of `<!-- readme-test: MARKER -->`, empty when unmarked
    std::string lang;      // the fence's info string: sh, json, text, ...
    std::string body;
    std::optional<std::string> shown;  // the json/text block that follows a runnable one
};

std::optional<std::string> marker_of(std::string const& line) {
    static std::regex const comment(R"(^<!-- readme-test: (.*) -->\s*$)");
    std::smatch m;
    if (!std::regex_match(line, m, comment)) return std::nullopt;
    return m[1].str();
}

// The fenced blocks in order. An unmarked json/text block right under a block marked run (only
// blank lines between) is that block's output, not a block of its own.
std::vector<readme_block> blocks_of(std::string const& text) {
    std::vector<readme_block> out;
    std::istringstream lines(text);
    std::string pending_marker;
    std::optional<readme_block> open;
    bool after_run_block = false;
    std::size_t n = 0;
    for (std::string line; std::getline(lines, line);) {
        ++n;
        if (open) {
            if (line != "```") {
                open->body += line + "\n";
                continue;
            }
            bool is_output = after_run_block && open->marker.empty() && (open->lang == "json" || open->lang == "text");
            if (is_output) {
                out.back().shown = open->body;
            } else {
                out.push_back(*open);
            }
            after_run_block = !is_output && open->marker.starts_with("run");
            open.reset();
            continue;
        }
        if (auto m = marker_of(line)) {
            pending_marker = *m;
        } else if (line.starts_with("```")) {
            open = readme_block{n, pending_marker, line.substr(3), "", std::nullopt};
            pending_marker.clear();
        } else if (!line.empty()) {
            after_run_block = false;
        }
    }
    return out;
}

std::string replace_all(std::string s, std::string const& from, std::string const& to) {
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
}

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Run ids (ULIDs: 26 Crockford base-32 characters, at least one a letter) differ at every run:
// each becomes the same word, in what the README shows and in what the command printed.
std::string without_run_ids(std::string const& s) {
    static std::string const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        bool starts = i + 26 <= s.size() && (i == 0 || !is_alnum(s[i - 1])) && (i + 26 == s.size() || !is_alnum(s[i + 26]));
        bool letter = false;
        for (std::size_t k = 0; starts && k < 26; ++k) {
            starts = crockford.find(s[i + k]) != std::string::npos;
            letter = letter || std::isalpha(static_cast<unsigned char>(s[i + k]));
        }
        if (starts && letter) {
            out += "RUN-ID";
            i += 26;
        } else {
            out += s[i++];
        }
    }
    return out;
}

std::string trimmed(std::string const& s) {
    auto first = s.find_first_not_of(" \n");
    if (first == std::string::npos) return "";
    return s.substr(first, s.find_last_not_of(" \n") - first + 1);
}

// Whether `actual` is what `shown` shows: the pieces between the ellipses appear in order, the
// first at the start and the last at the end (unless an ellipsis stands there).
bool shows(std::string const& shown, std::string const& actual) {
    auto pattern = trimmed(without_run_ids(shown));
    auto text = trimmed(without_run_ids(actual));
    std::vector<std::string> pieces;
    std::size_t from = 0;
    for (auto at = pattern.find(ellipsis); at != std::string::npos; at = pattern.find(ellipsis, from)) {
        pieces.push_back(pattern.substr(from, at - from));
        from = at + ellipsis.size();
    }
    pieces.push_back(pattern.substr(from));
    if (pieces.size() == 1) return text == pattern;
    if (!text.starts_with(pieces.front())) return false;
    std::size_t pos = pieces.front().size();
    for (std::size_t i = 1; i + 1 < pieces.size(); ++i) {
        auto at = text.find(pieces[i], pos);
        if (at == std::string::npos) return false;
        pos = at + pieces[i].size();
    }
    auto const& last = pieces.back();
    return text.size() >= pos + last.size() && text.ends_with(last);
}

std::string readme() { return file_text(fs::path(AIRLOCK_SOURCE_DIR) / "README.md"); }

// The run id a command printed, as `"run_id":"…"` (REST) or `run: …` (airlock run).
std::string run_id_in(std::string const& out) {
    std::smatch m;
    if (std::regex_search(out, m, std::regex(R"re("run_id":"([0-9A-Z]{26})")re"))) return m[1].str();
    return "";
}

}  // namespace

TEST_CASE("every shell block of the README is marked to run, or as a template saying why", "[readme][e2e]") {
    auto blocks = blocks_of(readme());
    int runnable = 0, templates = 0;
    for (auto const& b : blocks) {
        if (b.lang != "sh") continue;
        INFO("README.md:" << b.line << " [" << b.marker << "]\n" << b.body);
        bool run = b.marker == "run" || b.marker.starts_with("run, ");
        bool templ = b.marker.starts_with("template, ") && b.marker.size() > std::string("template, ").size();
        CHECK((run || templ));
        runnable += run;
        templates += templ;
    }
    // A parser that found nothing would pass the test below for nothing.
    CHECK(runnable >= 12);
    CHECK(templates >= 3);
}

TEST_CASE("the README names only files that are in the repository", "[readme][e2e]") {
    auto text = readme();
    CHECK(text.find("../shared") == std::string::npos);
    // Link targets, and names in backticks that read as files: with an extension, a trailing slash,
    // or under a top-level entry of the repository (so an MCP method like tools/call is not one).
    // var/ and build/ are made by `make run`, not committed.
    fs::path const root(AIRLOCK_SOURCE_DIR);
    static std::regex const named(R"(`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+/?)`|\]\(([^)#]+))");
    std::set<std::string> checked;
    for (std::sregex_iterator it(text.begin(), text.end(), named), end; it != end; ++it) {
        std::string path = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
        if (path.starts_with("./")) path.erase(0, 2);
        if (path.starts_with("http") || path == "var" || path.starts_with("var/") || path.starts_with("build/")) continue;
        fs::path const p(path);
        bool file_like = p.has_extension() || path.ends_with("/") || fs::exists(root / *p.begin());
        if (!file_like) continue;
        INFO("README.md names " << path);
        CHECK(fs::exists(root / path));
        checked.insert(path);
    }
    CHECK(checked.size() >= 10);
}

TEST_CASE("every runnable block of the README runs against an airlock started as make run starts it, and prints "
          "what the README shows",
          "[readme][e2e]") {
    auto blocks = blocks_of(readme());
    checkout_copy repo;
    auto airlock = repo.serve("--hints");
    auto port = std::to_string(airlock_port(*airlock));
    REQUIRE(wait_for_stdout(*airlock, "# 3."));
    auto at_port = [&](std::string const& s) { return replace_all(s, readme_port, "127.0.0.1:" + port); };

    std::string run_id;
    int ran = 0, starts = 0;
    for (auto const& b : blocks) {
        if (b.marker == "what airlock prints when it starts") {
            INFO("README.md:" << b.line << " against:\n" << airlock->stdout_text());
            CHECK(shows(at_port(b.body), airlock->stdout_text()));
            ++starts;
        }
        if (b.lang != "sh" || !b.marker.starts_with("run")) continue;
        auto script = at_port(b.body);
        if (!run_id.empty()) script = replace_all(script, "RUN_ID", run_id);
        auto r = repo.paste("set -euo pipefail\n" + script);
        ++ran;
        INFO("README.md:" << b.line << "\n" << script << "\nexit " << r.exit_code << "\nstdout:\n" << r.out
                          << "\nstderr:\n" << r.err);
        CHECK(r.exit_code == 0);
        if (b.shown) CHECK(shows(at_port(*b.shown), r.out));
        if (b.marker.find("RUN_ID from its run_id") != std::string::npos) {
            run_id = run_id_in(r.out);
            REQUIRE_FALSE(run_id.empty());
        }
    }
    CHECK(ran >= 12);
    CHECK(starts == 1);
    airlock->signal(SIGTERM);
    CHECK(airlock->wait(30s) == 0);
}

TEST_CASE("the README test's matcher: an ellipsis stands for any text, a run id for any run id", "[readme]") {
    CHECK(shows("ok teller 1.0.0 …", "ok teller 1.0.0 1bd35f\n"));
    CHECK_FALSE(shows("ok teller 1.0.0 …", "ok teller 2.0.0 1bd35f"));
    CHECK(shows("{\"a\":1,…,\"z\":2}", "{\"a\":1,\"b\":[3],\"z\":2}"));
    CHECK_FALSE(shows("{\"a\":1,…,\"z\":2}", "{\"a\":1,\"b\":[3],\"z\":3}"));
    CHECK(shows("run 01M8PCPERG9PGSMD1SC4VXM18Y: ok", "run 01M8Y0WDFPFWHJRCCCQZZEQKH3: ok"));
    CHECK_FALSE(shows("ok", "ok\nand more"));
    // 64 zeros are a hash, not a run id.
    CHECK(shows("\"prev_hash\":\"0000…\"}", "\"prev_hash\":\"" + std::string(64, '0') + "\"}"));
}
