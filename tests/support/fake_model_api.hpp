#pragma once
// The fake model APIs of tests/fixtures/providers (OpenAI Chat Completions, Anthropic Messages)
// started on a loopback port, with the provider settings that reach them and the log of what
// they received.

#include "service/agents/providers/http_provider.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/node_peers.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <string>

namespace airlock::testing {

struct fake_model_api : node_peer {
    // `script`: "openai_server.mjs" or "anthropic_server.mjs"; `key`: the one key it accepts;
    // `env`: more of its environment (TLS_CERT and TLS_KEY make it speak HTTPS).
    fake_model_api(std::string const& script, std::string const& key, std::vector<std::string> env = {})
        : node_peer({std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/providers/" + script}, with_key(key, env)) {}

    static std::vector<std::string> with_key(std::string const& key, std::vector<std::string> env) {
        env.push_back("EXPECTED_KEY=" + key);
        return env;
    }

    std::string origin() const { return "http://127.0.0.1:" + std::to_string(port); }

    // {connections: opened before this look, requests: [{method, path, headers, body, raw}]}
    boost::json::object log() const {
        auto r = http_get(port, "/_log");
        REQUIRE(r.status == 200);
        return boost::json::parse(r.body).as_object();
    }
    std::size_t requests() const { return log().at("requests").as_array().size(); }
    boost::json::object request(std::size_t i) const { return log().at("requests").as_array().at(i).as_object(); }
};

// Settings that reach `api` (egress names its port) with short waits, so tests stay quick.
inline service::providers::provider_settings settings_for(fake_model_api const& api, std::string const& base_path,
                                                          std::string model, std::string key) {
    service::providers::provider_settings s;
    s.name = "fake";
    s.model = std::move(model);
    s.api_key = std::move(key);
    s.http.base_url = api.origin() + base_path;
    s.http.deadline = std::chrono::seconds(10);
    s.http.retry_backoff = std::chrono::milliseconds(10);
    s.http.max_retry_wait = std::chrono::seconds(5);
    REQUIRE(s.http.egress.add(core::remote_destination{"http", "127.0.0.1", api.port}));
    return s;
}

template <class T>
T run_on(boost::asio::io_context& ioc, boost::asio::awaitable<T> task) {
    auto f = boost::asio::co_spawn(ioc, std::move(task), boost::asio::use_future);
    ioc.restart();
    ioc.run();
    return f.get();
}

// One fake API and a provider of its wire format pointed at it.
struct provider_fixture {
    fake_model_api api;
    std::string base_path;
    std::string api_key;
    service::providers::wire_format wire;
    boost::asio::io_context ioc;

    provider_fixture(std::string const& script, std::string base_path_, std::string key_,
                     service::providers::wire_format wire_)
        : api(script, key_), base_path(std::move(base_path_)), api_key(std::move(key_)), wire(std::move(wire_)) {}

    service::providers::provider_settings settings(std::string model) const {
        return settings_for(api, base_path, std::move(model), api_key);
    }
    core::model_result<core::completion> complete(service::providers::provider_settings s, core::completion_request r) {
        service::providers::http_provider p(ioc.get_executor(), std::move(s), wire);
        return run_on(ioc, p.async_complete(std::move(r)));
    }
    core::model_result<core::completion> complete(std::string model, core::completion_request r) {
        return complete(settings(std::move(model)), std::move(r));
    }
};

// A first turn: the teller's system prompt and the user's `text`.
inline core::completion_request ask(std::string text) {
    core::completion_request r;
    r.system = "You are a careful teller.";
    r.messages.push_back(core::model_message{core::message_role::user, std::move(text), {}, {}, false});
    return r;
}

// Two tools taking {account}.
inline std::vector<core::model_tool> ledger_tools() {
    boost::json::value schema =
        boost::json::parse(R"({"type":"object","properties":{"account":{"type":"string"}},"required":["account"]})");
    return {core::model_tool{"ledger__read", "Reads an account's balance", schema},
            core::model_tool{"ledger__history", "Lists an account's postings", schema}};
}

// For INFO(): the text of a completion, or the error.
inline std::string what(core::model_result<core::completion> const& r) {
    if (r) return "completion: " + r->text;
    return std::string(core::to_string(r.error().kind)) + ": " + r.error().detail;
}

}  // namespace airlock::testing
