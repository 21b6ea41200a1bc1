// `airlock ask`: one completion through a configured provider, from the command line, against the
// fake OpenAI-compatible server.

#include "tests/support/child_process.hpp"
#include "tests/support/fake_model_api.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace airlock::testing;
namespace fs = std::filesystem;

namespace {

constexpr char const* key = "sk-ask-test-9f8e7d6c5b4a39281706";

// A configuration with one provider `fake` reaching `api` with `key_text` from a file, and
// `egress` as written.
struct ask_config {
    temp_dir dir{"airlock-ask-test"};
    fs::path file;

    ask_config(fake_model_api const& api, std::string const& key_text, std::string const& egress) {
        auto key_file = dir.path() / "openai.key";
        std::ofstream(key_file) << key_text << "\n";
        fs::permissions(key_file, fs::perms::owner_read | fs::perms::owner_write);
        file = dir.path() / "airlock.yaml";
        std::ofstream(file) << "egress:\n  - " << egress << "\nproviders:\n  fake:\n    kind: openai\n    base_url: "
                            << api.origin() << "/v1\n    api_key: {file: openai.key}\n    model: plain\n";
    }
    command_result ask(std::vector<std::string> extra) const {
        std::vector<std::string> argv{AIRLOCK_BINARY, "ask", "--config", file.string(), "--provider", "fake"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return run_command(argv);
    }
};

}  // namespace

TEST_CASE("airlock ask prints the completion of a configured provider as JSON") {
    fake_model_api api("openai_server.mjs", key);
    ask_config c(api, key, api.origin());
    auto r = c.ask({"what is my balance?"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    auto out = boost::json::parse(r.out).as_object();
    CHECK(out.at("text") == "Hello. You said: what is my balance?");
    CHECK(out.at("stop") == "end_turn");
    CHECK(out.at("usage").at("input_tokens") == 10);
    CHECK(out.at("model") == "plain-2026-01-01");
}

TEST_CASE("airlock ask reports a provider egress does not allow as refused, and nothing reaches it") {
    fake_model_api api("openai_server.mjs", key);
    ask_config c(api, key, "https://api.openai.com");
    auto r = c.ask({"hi"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("error: refused (did_not_happen): model://openai/fake") &&
                          Catch::Contains("not in the egress allowlist"));
    CHECK(api.log().at("connections").as_int64() == 0);
}

TEST_CASE("airlock ask with a wrong key shows the provider's refusal without the key") {
    fake_model_api api("openai_server.mjs", key);
    std::string const wrong = "sk-ask-WRONG-00aa11bb22cc33dd44";
    ask_config c(api, wrong, api.origin());
    auto r = c.ask({"hi"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("HTTP 401") && Catch::Contains("[redacted]"));
    CHECK(r.err.find(wrong) == std::string::npos);
    CHECK(r.out.find(wrong) == std::string::npos);
}

TEST_CASE("airlock ask names the providers a configuration has when asked for another") {
    fake_model_api api("openai_server.mjs", key);
    ask_config c(api, key, api.origin());
    auto r = run_command({AIRLOCK_BINARY, "ask", "--config", c.file.string(), "--provider", "gpt", "hi"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("no provider 'gpt' (it has: fake)"));
}
