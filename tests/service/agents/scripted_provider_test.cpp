#include "service/agents/providers/scripted.hpp"
#include "tests/support/run_awaitable.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>

#include <fstream>

using namespace airlock;
namespace json = boost::json;

namespace {

service::script parsed(std::string const& yaml) {
    auto s = service::parse_script(yaml);
    INFO((s ? std::string() : s.error().message));
    REQUIRE(s.has_value());
    return *s;
}

std::string refusal(std::string const& yaml) {
    auto s = service::parse_script(yaml, "demo.yaml");
    REQUIRE(s.has_error());
    return s.error().message;
}

// A request as the loop sends it after `replies` model turns.
core::completion_request after(int replies) {
    core::completion_request r;
    r.messages.push_back(core::model_message{core::message_role::user, "hi", {}, "", false});
    for (int i = 0; i < replies; ++i) {
        r.messages.push_back(core::model_message{core::message_role::assistant, "...", {}, "", false});
        r.messages.push_back(core::model_message{core::message_role::tool, "42", {}, "c", false});
    }
    return r;
}

core::model_result<core::completion> ask(service::scripted_provider& p, int replies) {
    return testing::run_awaitable(p.async_complete(after(replies)));
}

}  // namespace

TEST_CASE("the scripted provider plays the turn that follows the replies already in the conversation") {
    service::scripted_provider p(parsed(R"(
model: teller-1
turns:
  - call: { tool: ledger__read, arguments: { account: AC-1 }, id: call_1 }
  - say: "AC-1 holds 42."
    usage: { input_tokens: 7, output_tokens: 3 }
)"));
    auto first = ask(p, 0);
    REQUIRE(first.has_value());
    REQUIRE(first->tool_calls.size() == 1);
    CHECK(first->tool_calls[0].name == "ledger__read");
    CHECK(first->tool_calls[0].id == "call_1");
    CHECK(first->tool_calls[0].arguments == json::parse(R"({"account":"AC-1"})"));
    CHECK(first->stop == core::stop_reason::tool_use);
    CHECK(first->model == "teller-1");
    CHECK(first->usage.input_tokens > 0);
    // Stateless: asking the first turn again gets the same answer (a resumed run relies on it).
    CHECK(ask(p, 0)->tool_calls == first->tool_calls);
    auto second = ask(p, 1);
    CHECK(second->text == "AC-1 holds 42.");
    CHECK(second->tool_calls.empty());
    CHECK(second->usage == core::token_usage{7, 3});
    CHECK(p.calls() == 3);
    CHECK(p.kind() == "scripted");
    CHECK(std::holds_alternative<core::local_destination>(p.destination_of()));
}

TEST_CASE("a run that asks beyond the script fails naming the turn, unless the script repeats its last turn") {
    auto script_text = std::string("turns:\n  - call: { tool: ledger__read, arguments: { account: AC-1 } }\n");
    service::scripted_provider strict(parsed(script_text));
    auto beyond = ask(strict, 1);
    REQUIRE(beyond.has_error());
    CHECK(beyond.error().kind == core::tool_error_kind::tool_failed);
    CHECK(beyond.error().detail == "the script has 1 turns and turn 2 was asked for");
    service::scripted_provider looping(parsed("after_last: repeat\n" + script_text));
    auto again = ask(looping, 5);
    REQUIRE(again.has_value());
    CHECK(again->tool_calls.at(0).id == "call_6_1");
}

TEST_CASE("a scripted turn can make the model call itself fail") {
    service::scripted_provider p(parsed("turns:\n  - fail: { kind: timed_out, detail: no answer }\n"));
    auto r = ask(p, 0);
    REQUIRE(r.has_error());
    CHECK(r.error().kind == core::tool_error_kind::timed_out);
    CHECK(r.error().detail == "no answer");
    CHECK(r.error().tool == "model://scripted/scripted");
}

TEST_CASE("several calls in one turn keep their order and get distinct ids") {
    service::scripted_provider p(parsed(R"(
turns:
  - calls:
      - { tool: ledger__read, arguments: { account: AC-1 } }
      - { tool: ledger__read, arguments: { account: AC-2 } }
)"));
    auto r = ask(p, 0);
    REQUIRE(r->tool_calls.size() == 2);
    CHECK(r->tool_calls[0].id == "call_1_1");
    CHECK(r->tool_calls[1].id == "call_1_2");
    CHECK(r->tool_calls[1].arguments == json::parse(R"({"account":"AC-2"})"));
}

TEST_CASE("a script with a mistake is refused naming the file and the field") {
    CHECK(refusal("turns:\n  - call: { arguments: {} }\n") ==
          "demo.yaml: turns[0].call.tool is required: the wire name the model asks for");
    CHECK(refusal("turns:\n  - say: hi\n    colour: blue\n").find("turns[0]") != std::string::npos);
    CHECK(refusal("turns: []\n") == "demo.yaml: turns is empty: a script needs at least one turn");
    CHECK(refusal("model: x\n") == "demo.yaml: turns is required: the list of what the model does, in order");
    CHECK(refusal("after_last: loop\nturns:\n  - say: hi\n") ==
          "demo.yaml: after_last is \"loop\"; expected fail or repeat");
    CHECK(refusal("turns:\n  - {}\n") ==
          "demo.yaml: turns[0] says nothing and calls nothing; write say, call, calls or fail");
    CHECK(refusal("turns:\n  - fail: { kind: exploded }\n").find("turns[0].fail.kind") != std::string::npos);
    CHECK(refusal("turns: [\n").rfind("demo.yaml: not YAML", 0) == 0);
}

TEST_CASE("a script file is loaded, and a missing one is refused naming it") {
    testing::temp_dir dir;
    auto file = dir.path() / "s.yaml";
    std::ofstream(file) << "turns:\n  - say: hello\n";
    auto p = service::scripted_provider::load(file);
    REQUIRE(p.has_value());
    CHECK(ask(**p, 0)->text == "hello");
    auto missing = service::scripted_provider::load(dir.path() / "nope.yaml");
    REQUIRE(missing.has_error());
    CHECK(missing.error().message.find("nope.yaml") != std::string::npos);
}
