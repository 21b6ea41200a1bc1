// The `providers:` section of the configuration, and the providers the factory builds from it.

#include "service/config/config.hpp"
#include "service/agents/providers/factory.hpp"

#include "tests/support/temp_dir.hpp"

#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace airlock;
using namespace airlock::service;
using airlock::testing::temp_dir;
namespace fs = std::filesystem;

namespace {

constexpr char const* openai_key = "sk-config-test-5e4d3c2b1a0f9e8d7c6b";
constexpr char const* anthropic_key = "sk-ant-config-test-0a1b2c3d4e5f6a7b";

struct loaded_config {
    temp_dir dir{"airlock-providers-config"};
    core::result<config> result = core::make_error("unset", "");

    explicit loaded_config(std::string_view yaml) {
        auto file = dir.path() / "airlock.yaml";
        std::ofstream(file) << yaml;
        result = load_config(file, environment_from({{"OPENAI_KEY", openai_key}, {"ANTHROPIC_KEY", anthropic_key}}));
    }
    std::string problem() const { return result ? std::string() : result.error().code + ": " + result.error().message; }
};

constexpr std::string_view both = R"yaml(
egress:
  - https://api.openai.com
  - http://127.0.0.1:11434
providers:
  gpt:
    kind: openai
    api_key: {env: OPENAI_KEY}
    model: gpt-4o-mini
  local:
    kind: openai
    base_url: http://127.0.0.1:11434/v1
    model: llama3.1
    deadline: 5m
    max_retries: 0
  claude:
    kind: anthropic
    api_key: {env: ANTHROPIC_KEY}
    model: claude-sonnet-4-5
    max_tokens: 2048
    max_retry_wait: 10s
)yaml";

}  // namespace

TEST_CASE("providers are read by name with their kind, endpoint, key, model and limits") {
    loaded_config c(both);
    INFO(c.problem());
    REQUIRE(c.result);
    auto const& ps = c.result->providers;
    REQUIRE(ps.size() == 3);
    CHECK(ps[0].name == "gpt");
    CHECK(ps[0].kind == provider_kind::openai);
    CHECK(ps[0].base_url == "https://api.openai.com/v1");
    CHECK(ps[0].destination == core::destination(core::remote_destination{"https", "api.openai.com", 443}));
    CHECK(ps[0].api_key == openai_key);
    CHECK(ps[0].api_key_env == "OPENAI_KEY");
    CHECK(ps[0].deadline == std::chrono::seconds(120));
    CHECK(ps[0].max_retries == 2);
    CHECK(ps[0].max_tokens_field == "max_completion_tokens");  // OpenAI's own API
    CHECK(ps[1].max_tokens_field == "max_tokens");             // a compatible server
    CHECK(ps[1].api_key.empty());
    CHECK(ps[1].destination == core::destination(core::remote_destination{"http", "127.0.0.1", 11434}));
    CHECK(ps[1].deadline == std::chrono::minutes(5));
    CHECK(ps[1].max_retries == 0);
    CHECK(ps[2].kind == provider_kind::anthropic);
    CHECK(ps[2].base_url == "https://api.anthropic.com");
    CHECK(ps[2].max_tokens == 2048);
    CHECK(ps[2].max_retry_wait == std::chrono::seconds(10));
}

TEST_CASE("the configuration summary names each provider and where its key comes from, never the key") {
    loaded_config c(both);
    REQUIRE(c.result);
    auto text = summary(*c.result);
    CHECK_THAT(text, Catch::Contains("gpt  openai  https://api.openai.com:443, model gpt-4o-mini, key from $OPENAI_KEY"));
    CHECK_THAT(text, Catch::Contains("claude  anthropic  https://api.anthropic.com:443"));
    CHECK(text.find(openai_key) == std::string::npos);
    CHECK(text.find(anthropic_key) == std::string::npos);
}

TEST_CASE("a provider whose endpoint egress does not allow loads with a warning naming it") {
    loaded_config c(R"yaml(
providers:
  claude: {kind: anthropic, api_key: {env: ANTHROPIC_KEY}, model: claude-sonnet-4-5}
)yaml");
    REQUIRE(c.result);
    REQUIRE(c.result->warnings.size() == 1);
    CHECK_THAT(c.result->warnings[0], Catch::Contains("provider claude") && Catch::Contains("not in egress"));
}

TEST_CASE("an unknown key in a provider is refused with its path") {
    loaded_config c("providers:\n  gpt: {kind: openai, model: m, api_kye: {env: OPENAI_KEY}}\n");
    CHECK_THAT(c.problem(), Catch::StartsWith("unknown_key: providers.gpt.api_kye"));
}

TEST_CASE("a provider kind other than openai, anthropic or scripted is refused") {
    loaded_config c("providers:\n  g: {kind: gemini, model: m}\n");
    CHECK_THAT(c.problem(), Catch::Contains("providers.g.kind is \"gemini\"; expected one of: openai, anthropic, scripted"));
}

TEST_CASE("an API key written into the configuration itself is refused") {
    loaded_config c("providers:\n  gpt: {kind: openai, model: m, api_key: sk-inline-secret-123456}\n");
    CHECK_THAT(c.problem(), Catch::Contains("providers.gpt.api_key must be {env: NAME} or {file: PATH}"));
    CHECK(c.problem().find("sk-inline-secret-123456") == std::string::npos);
}

TEST_CASE("an API key variable that is not set is refused naming the variable") {
    loaded_config c("providers:\n  gpt: {kind: openai, model: m, api_key: {env: NOT_SET_ANYWHERE}}\n");
    CHECK_THAT(c.problem(), Catch::Contains("providers.gpt.api_key.env names NOT_SET_ANYWHERE"));
}

TEST_CASE("an anthropic provider without an API key is refused") {
    loaded_config c("providers:\n  claude: {kind: anthropic, model: m}\n");
    CHECK_THAT(c.problem(), Catch::Contains("providers.claude.api_key is required"));
}

TEST_CASE("a provider without a model is refused") {
    loaded_config c("providers:\n  gpt: {kind: openai}\n");
    CHECK_THAT(c.problem(), Catch::Contains("providers.gpt.model is required"));
}

TEST_CASE("a provider base_url that is not an http(s) URL is refused") {
    loaded_config c("providers:\n  gpt: {kind: openai, model: m, base_url: 'ftp://example.com/v1'}\n");
    CHECK_THAT(c.problem(), Catch::Contains("providers.gpt.base_url") && Catch::Contains("scheme must be http or https"));
}

TEST_CASE("network settings on a scripted provider are refused") {
    loaded_config c("providers:\n  demo: {kind: scripted, script: turns.yaml, base_url: 'http://x'}\n");
    CHECK_THAT(c.problem(), Catch::Contains("providers.demo.base_url applies only to openai and anthropic providers"));
}

TEST_CASE("a provider's max_connections is read, 256 by default, and must be at least one") {
    loaded_config c("providers:\n  gpt: {kind: openai, model: m}\n  local: {kind: openai, model: m, max_connections: 8}\n");
    INFO(c.problem());
    REQUIRE(c.result);
    CHECK(c.result->providers[0].max_connections == 256);
    CHECK(c.result->providers[1].max_connections == 8);
    loaded_config zero("providers:\n  gpt: {kind: openai, model: m, max_connections: 0}\n");
    CHECK_THAT(zero.problem(), Catch::Contains("providers.gpt.max_connections is 0"));
}

TEST_CASE("max_retries above ten is refused") {
    loaded_config c("providers:\n  gpt: {kind: openai, model: m, max_retries: 50}\n");
    CHECK_THAT(c.problem(), Catch::Contains("providers.gpt.max_retries is 50; it must be between 0 and 10"));
}

TEST_CASE("the factory builds each configured provider with its kind and destination") {
    loaded_config c(both);
    REQUIRE(c.result);
    boost::asio::io_context ioc;
    for (auto const& pc : c.result->providers) {
        auto p = providers::make_provider(ioc.get_executor(), pc, c.result->egress);
        REQUIRE(p);
        CHECK((*p)->kind() == to_string(pc.kind));
        CHECK((*p)->destination_of() == pc.destination);
    }
}

TEST_CASE("max_tokens_field is for openai providers only") {
    loaded_config c("providers:\n  claude: {kind: anthropic, model: m, api_key: {env: ANTHROPIC_KEY}, max_tokens_field: max_tokens}\n");
    CHECK_THAT(c.problem(), Catch::Contains("providers.claude.max_tokens_field applies only to openai providers"));
}

TEST_CASE("a provider at localhost warns that egress must name the loopback address as well") {
    loaded_config c(R"yaml(
egress: [http://localhost:11434]
providers:
  local: {kind: openai, base_url: 'http://localhost:11434/v1', model: llama3.1}
)yaml");
    REQUIRE(c.result);
    REQUIRE(c.result->warnings.size() == 1);
    CHECK_THAT(c.result->warnings[0], Catch::Contains("add http://127.0.0.1:11434"));
}

TEST_CASE("a provider's extra headers are read, and the key's own header is refused among them") {
    loaded_config ok(R"yaml(
providers:
  gpt: {kind: openai, model: m, headers: {OpenAI-Organization: org-123, X-Gateway-Key: {env: OPENAI_KEY}}}
)yaml");
    INFO(ok.problem());
    REQUIRE(ok.result);
    auto const& h = ok.result->providers.at(0).headers;
    REQUIRE(h.size() == 2);
    CHECK(h[0] == std::pair<std::string, std::string>{"OpenAI-Organization", "org-123"});
    CHECK(h[1].second == openai_key);
    CHECK(summary(*ok.result).find(openai_key) == std::string::npos);
    CHECK_THAT(summary(*ok.result), Catch::Contains("headers: 2 set"));

    loaded_config auth("providers:\n  gpt: {kind: openai, model: m, headers: {Authorization: {env: OPENAI_KEY}}}\n");
    CHECK_THAT(auth.problem(), Catch::Contains("providers.gpt.headers.Authorization is set by the provider from api_key"));
    loaded_config version(
        "providers:\n  c: {kind: anthropic, model: m, api_key: {env: ANTHROPIC_KEY}, headers: {anthropic-version: x}}\n");
    CHECK_THAT(version.problem(), Catch::Contains("providers.c.headers.anthropic-version is set by the provider"));
}
