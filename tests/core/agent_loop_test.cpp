#include "core/agent_loop.hpp"
#include "core/model_json.hpp"

#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>

#include <string>

using namespace airlock::core;
namespace json = boost::json;

namespace {

// The seed's TELLER agent (examples/teller.yaml), with knobs for the cases below.
std::string teller_yaml(std::string extra_post = "", std::string budgets = "max_tokens: 100000",
                        std::string kind = "tool-calling", std::string read_extra = "") {
    return R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: teller, version: "1.0.0" }
spec:
  identity: { role: "Answer questions about a ledger account.", constraints: "Use the tools." }
  capabilities: { provides: [ledger.ask] }
  models: { privileged: { provider: scripted, model: teller-1 } }
  security: { max_sensitivity_egress: internal }
  tools:
    - ref: tool://ledger/read
      mutates: false
      max_sensitivity: internal
      description: Read a ledger account's balance.
)" + read_extra + R"(
    - ref: tool://ledger/post
      mutates: true
      max_sensitivity: internal
      description: Post an amount to an account.
)" + (extra_post.empty() ? std::string("      protected_fields:\n        - path: /account\n          require_trusted: true\n")
                         : extra_post) +
           "  execution: { kind: " + kind + ", max_turns: 4 }\n  budgets:\n    " + budgets + "\n";
}

manifest parse(std::string const& yaml) {
    auto m = parse_manifest(yaml);
    INFO((m ? std::string() : m.error().message));
    REQUIRE(m.has_value());
    return *m;
}

run_id the_run() { return run_id::from_parts(1'700'000'000'000, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); }

egress_allowlist local_only() {
    egress_allowlist a;
    REQUIRE(a.add(local_destination{}).has_value());
    return a;
}

agent_loop make_loop(manifest m, label input_label = label{{"caller"}, trust::trusted, sensitivity::public_}) {
    agent_loop_options o;
    o.agent = std::move(m);
    o.egress = local_only();
    o.destination_of = [](tool_id const&) { return destination{local_destination{}}; };
    json::value input = json::object{{"question", "what is in AC-1?"}};
    return agent_loop(std::move(o), the_run(), run_input{input, std::move(input_label)}, 1'700'000'000'000);
}

loop_event at(std::uint64_t ms, auto what) { return loop_event{what, 1'700'000'000'000 + ms}; }

completion says(std::string text, std::uint64_t tokens = 10) {
    completion c;
    c.text = std::move(text);
    c.usage = {tokens, 0};
    return c;
}

completion calls(std::string id, std::string name, std::string args_json, std::uint64_t tokens = 10) {
    completion c;
    c.tool_calls.push_back(model_tool_call{std::move(id), std::move(name), json::parse(args_json)});
    c.usage = {tokens, 0};
    c.stop = stop_reason::tool_use;
    return c;
}

template <class A>
A const& as(loop_action const& a) {
    INFO("action was " << action_name(a));
    REQUIRE(std::holds_alternative<A>(a));
    return std::get<A>(a);
}

loop_event model(completion c) { return loop_event{model_done_event{std::move(c)}, 0}; }
loop_event tool_ok(std::string json_text) { return loop_event{tool_done_event{json::parse(json_text)}, 0}; }
loop_event appended() { return loop_event{appended_event{}, 0}; }
loop_event started() { return loop_event{start_event{}, 1'700'000'000'000}; }

}  // namespace

TEST_CASE("the model chooses a tool, the tool answers, and the run succeeds with the model's reply") {
    auto loop = make_loop(parse(teller_yaml()));
    auto first = as<call_model_action>(loop.next(started()));
    CHECK(first.effect_key == the_run().str() + "/000001/model");
    REQUIRE(first.request.tools.size() == 2);
    CHECK(first.request.tools[0].name == "ledger__read");
    CHECK(first.request.system.find("ledger account") != std::string::npos);
    CHECK(first.request.messages.at(0).text == R"({"question":"what is in AC-1?"})");

    auto read = as<call_tool_action>(loop.next(model(calls("call_1", "ledger__read", R"({"account":"AC-1"})"))));
    CHECK(read.effect_key == the_run().str() + "/000002/tool");
    CHECK(read.tool.uri() == "tool://ledger/read");
    CHECK(read.arguments == json::parse(R"({"account":"AC-1"})"));
    CHECK_FALSE(read.mutates);
    CHECK(read.call_id == "call_1");

    auto second = as<call_model_action>(loop.next(tool_ok(R"({"account":"AC-1","balance":42})")));
    auto const& last = second.request.messages.back();
    CHECK(last.role == message_role::tool);
    CHECK(last.tool_call_id == "call_1");
    CHECK(last.text == R"({"account":"AC-1","balance":42})");
    CHECK_FALSE(last.is_error);

    auto done = as<finish_action>(loop.next(model(says("AC-1 holds 42."))));
    CHECK(done.status == run_status::succeeded);
    CHECK(done.output == json::value("AC-1 holds 42."));
    CHECK(loop.status() == run_status::succeeded);
    CHECK(loop.turns() == 2);
    CHECK(loop.effects() == 3);
}

TEST_CASE("the same events give the same actions and effect keys, so replay can match the journal") {
    auto drive = [] {
        auto loop = make_loop(parse(teller_yaml()));
        std::vector<std::string> keys;
        auto a = loop.next(started());
        keys.push_back(std::get<call_model_action>(a).effect_key + " " + std::get<call_model_action>(a).request_sha256);
        a = loop.next(model(calls("c1", "ledger__read", R"({"account":"AC-1"})")));
        keys.push_back(std::get<call_tool_action>(a).effect_key);
        a = loop.next(tool_ok(R"({"balance":42})"));
        keys.push_back(std::get<call_model_action>(a).effect_key + " " + std::get<call_model_action>(a).request_sha256);
        return keys;
    };
    auto one = drive();
    CHECK(one == drive());
    CHECK(one[0] != one[2]);  // the second request carries the tool's result: a different digest
}

TEST_CASE("a completion agent asks the model once, offers no tools and returns its text") {
    auto loop = make_loop(parse(teller_yaml("", "max_tokens: 100000", "completion")));
    auto ask = as<call_model_action>(loop.next(started()));
    CHECK(ask.request.tools.empty());
    auto done = as<finish_action>(loop.next(model(says("Forty-two."))));
    CHECK(done.status == run_status::succeeded);
    CHECK(done.output == json::value("Forty-two."));
}

TEST_CASE("a tool nobody granted is refused, the model is told, and the run still succeeds") {
    auto loop = make_loop(parse(teller_yaml()));
    loop.next(started());
    auto refused = as<append_action>(loop.next(model(calls("call_1", "ledger__write", R"({"account":"AC-1"})"))));
    REQUIRE(refused.records.size() == 1);
    CHECK(refused.records[0].kind == record_kind::policy_denied);
    CHECK(refused.records[0].body.at("reason") == "not_granted");
    CHECK(refused.records[0].body.at("tool") == "ledger__write");
    auto again = as<call_model_action>(loop.next(appended()));
    auto const& told = again.request.messages.back();
    CHECK(told.is_error);
    CHECK(told.text == "not permitted");
    auto done = as<finish_action>(loop.next(model(says("I could not do that."))));
    CHECK(done.status == run_status::succeeded);
}

TEST_CASE("a tool name that differs from a grant by case or a space is a different, ungranted tool") {
    for (std::string name : {"ledger__Read", "ledger__read ", "ledger.read", "tool://ledger/read", "ledger_read"}) {
        auto loop = make_loop(parse(teller_yaml()));
        loop.next(started());
        auto refused = as<append_action>(loop.next(model(calls("c", name, R"({"account":"AC-1"})"))));
        INFO(name);
        CHECK(refused.records.at(0).body.at("reason") == "not_granted");
    }
}

TEST_CASE("a model-chosen account on a mutating post is refused while the run continues") {
    auto loop = make_loop(parse(teller_yaml()));
    loop.next(started());
    auto refused =
        as<append_action>(loop.next(model(calls("call_1", "ledger__post", R"({"account":"AC-1","amount":1000000})"))));
    CHECK(refused.records.at(0).kind == record_kind::policy_denied);
    CHECK(refused.records.at(0).body.at("reason") == "protected_field_untrusted");
    CHECK(refused.records.at(0).body.at("tool") == "tool://ledger/post");
    auto again = as<call_model_action>(loop.next(appended()));
    CHECK(again.request.messages.back().text == "not permitted");
    CHECK(as<finish_action>(loop.next(model(says("I was not able to post that.")))).status == run_status::succeeded);
}

TEST_CASE("a value the model copied from a tool result cannot fill a protected field") {
    // The account may come from the caller or the model, never from what a tool returned.
    auto post_fields = std::string(
        "      protected_fields:\n        - path: /account\n"
        "          allowed_sources: [caller, \"model://scripted/teller-1\"]\n");
    auto loop = make_loop(parse(teller_yaml(post_fields)));
    loop.next(started());
    // Before any tool result reached the conversation, the post goes out.
    as<call_tool_action>(loop.next(model(calls("c1", "ledger__post", R"({"account":"AC-1","amount":5})"))));
    as<call_model_action>(loop.next(tool_ok(R"({"posted":5})")));
    CHECK(loop.context_label().sources.contains("tool://ledger/post"));
    // Once a tool's output is in the context, the same-looking arguments carry its label too.
    auto refused = as<append_action>(loop.next(model(calls("c2", "ledger__post", R"({"account":"AC-1","amount":5})"))));
    CHECK(refused.records.at(0).body.at("reason") == "protected_field_source");
}

TEST_CASE("a model that never stops asking fails at max_turns instead of passing off an answer") {
    auto loop = make_loop(parse(teller_yaml()));
    loop_action a = loop.next(started());
    int tool_calls = 0;
    for (int i = 0; i < 10 && !std::holds_alternative<finish_action>(a); ++i) {
        if (std::holds_alternative<call_model_action>(a))
            a = loop.next(model(calls("c" + std::to_string(i), "ledger__read", R"({"account":"AC-1"})")));
        else {
            ++tool_calls;
            a = loop.next(tool_ok(R"({"balance":42})"));
        }
    }
    auto done = as<finish_action>(a);
    CHECK(done.status == run_status::failed);
    CHECK(done.reason.find("max_turns (4)") != std::string::npos);
    CHECK(done.output.is_null());
    CHECK(loop.turns() == 4);
    CHECK(tool_calls == 4);
}

TEST_CASE("a failed tool call goes back to the model as a failed call and the run continues") {
    auto loop = make_loop(parse(teller_yaml()));
    loop.next(started());
    loop.next(model(calls("c1", "ledger__read", R"({"account":"AC-9"})")));
    tool_error e{tool_error_kind::tool_failed, "tool://ledger/read", "no such account"};
    auto again = as<call_model_action>(loop.next(loop_event{tool_failed_event{e}, 0}));
    CHECK(again.request.messages.back().is_error);
    CHECK(again.request.messages.back().text == "tool_failed: no such account");
    CHECK(as<finish_action>(loop.next(model(says("AC-9 does not exist.")))).status == run_status::succeeded);
}

TEST_CASE("a failed model call fails the run, naming what failed") {
    auto loop = make_loop(parse(teller_yaml()));
    loop.next(started());
    tool_error e{tool_error_kind::unreachable, "model://scripted/teller-1", "connection refused"};
    auto done = as<finish_action>(loop.next(loop_event{model_failed_event{e}, 0}));
    CHECK(done.status == run_status::failed);
    CHECK(done.reason == "model call failed (unreachable): connection refused");
}

TEST_CASE("arguments that are not an object are reported to the model and recorded") {
    auto loop = make_loop(parse(teller_yaml()));
    loop.next(started());
    completion c;
    c.tool_calls.push_back(model_tool_call{"c1", "ledger__read", json::value("{not json")});
    auto note = as<append_action>(loop.next(model(c)));
    CHECK(note.records.at(0).kind == record_kind::note);
    CHECK(note.records.at(0).body.at("event") == "tool_call_malformed");
    auto again = as<call_model_action>(loop.next(appended()));
    CHECK(again.request.messages.back().text == "arguments must be a JSON object, got a string");
}

TEST_CASE("a tool whose destination is not in the egress allowlist is refused before it is called") {
    agent_loop_options o;
    o.agent = parse(teller_yaml());
    o.egress = local_only();
    o.destination_of = [](tool_id const&) { return destination{process_destination{"/usr/bin/ledger"}}; };
    agent_loop loop(o, the_run(), run_input{json::value("hi"), label{{"caller"}, trust::trusted, sensitivity::public_}},
                    1'700'000'000'000);
    loop.next(started());
    auto refused = as<append_action>(loop.next(model(calls("c1", "ledger__read", R"({"account":"AC-1"})"))));
    CHECK(refused.records.at(0).body.at("reason") == "destination_not_allowed");
}

TEST_CASE("max_steps ends the run exhausted, naming the limit") {
    auto loop = make_loop(parse(teller_yaml("", "max_steps: 2")));
    loop.next(started());
    as<call_tool_action>(loop.next(model(calls("c1", "ledger__read", R"({"account":"AC-1"})"))));
    auto done = as<finish_action>(loop.next(tool_ok(R"({"balance":42})")));
    CHECK(done.status == run_status::exhausted);
    CHECK(done.reason == "budget max_steps (2) is spent");
}

TEST_CASE("max_effects counts calls performed, not refusals") {
    auto loop = make_loop(parse(teller_yaml("", "max_effects: 2")));
    loop.next(started());
    as<append_action>(loop.next(model(calls("c1", "ledger__nope", "{}"))));
    as<call_model_action>(loop.next(appended()));
    auto done = as<finish_action>(loop.next(model(calls("c2", "ledger__read", R"({"account":"AC-1"})"))));
    CHECK(done.status == run_status::exhausted);
    CHECK(done.reason == "budget max_effects (2) is spent");
}

TEST_CASE("max_tokens counts the providers' usage and caps what the next request may ask for") {
    auto loop = make_loop(parse(teller_yaml("", "max_tokens: 100")));
    auto first = as<call_model_action>(loop.next(started()));
    CHECK(first.request.max_tokens == std::optional<std::uint64_t>(100));
    as<call_tool_action>(loop.next(model(calls("c1", "ledger__read", R"({"account":"AC-1"})", 60))));
    auto second = as<call_model_action>(loop.next(tool_ok("{}")));
    CHECK(second.request.max_tokens == std::optional<std::uint64_t>(40));
    as<call_tool_action>(loop.next(model(calls("c2", "ledger__read", R"({"account":"AC-1"})", 50))));
    auto done = as<finish_action>(loop.next(tool_ok("{}")));
    CHECK(done.status == run_status::exhausted);
    CHECK(done.reason == "budget max_tokens (100) is spent");
    CHECK(loop.tokens() == 110);
}

TEST_CASE("max_wallclock_secs is measured with the events' times, not a clock the loop reads") {
    auto loop = make_loop(parse(teller_yaml("", "max_wallclock_secs: 30")));
    loop.next(started());
    as<call_tool_action>(loop.next(at(10'000, model_done_event{calls("c1", "ledger__read", R"({"account":"AC-1"})")})));
    auto done = as<finish_action>(loop.next(at(31'000, tool_done_event{json::parse("{}")})));
    CHECK(done.status == run_status::exhausted);
    CHECK(done.reason == "budget max_wallclock_secs (30) is spent");
}

TEST_CASE("a grant that requires approval pauses the run until a reviewer approves the call") {
    auto loop = make_loop(parse(teller_yaml("", "max_tokens: 100000", "tool-calling", "      requires_approval: true\n")));
    loop.next(started());
    auto asked = as<append_action>(loop.next(model(calls("c1", "ledger__read", R"({"account":"AC-1"})"))));
    CHECK(asked.records.at(0).kind == record_kind::approval_requested);
    CHECK(loop.status() == run_status::awaiting_approval);
    auto wait = as<await_approval_action>(loop.next(appended()));
    CHECK(wait.effect_key == the_run().str() + "/000002/tool");
    auto call = as<call_tool_action>(loop.next(loop_event{approval_event{true}, 0}));
    CHECK(call.effect_key == wait.effect_key);
    CHECK(loop.status() == run_status::running);
}

TEST_CASE("a rejected call reaches the model as a reviewer's refusal and the run continues") {
    auto loop = make_loop(parse(teller_yaml("", "max_tokens: 100000", "tool-calling", "      requires_approval: true\n")));
    loop.next(started());
    loop.next(model(calls("c1", "ledger__read", R"({"account":"AC-1"})")));
    loop.next(appended());
    auto again = as<call_model_action>(loop.next(loop_event{approval_event{false}, 0}));
    CHECK(again.request.messages.back().text == "a reviewer did not approve this call");
    CHECK(again.request.messages.back().is_error);
    CHECK(as<finish_action>(loop.next(model(says("Not allowed.")))).status == run_status::succeeded);
}

TEST_CASE("completions and tool results make the run's output untrusted, naming where it came from") {
    auto loop = make_loop(parse(teller_yaml()));
    loop.next(started());
    loop.next(model(calls("c1", "ledger__read", R"({"account":"AC-1"})")));
    loop.next(tool_ok(R"({"balance":42})"));
    auto done = as<finish_action>(loop.next(model(says("42"))));
    CHECK(done.output_label.trust == trust::untrusted);
    CHECK(done.output_label.sources == std::set<std::string>{"caller", "model://scripted/teller-1", "tool://ledger/read"});
    CHECK(done.output_label.sensitivity == sensitivity::internal);
}

TEST_CASE("an event the current action does not wait for is a bug, not a silent state change") {
    auto loop = make_loop(parse(teller_yaml()));
    loop.next(started());
    CHECK_THROWS_AS(loop.next(tool_ok("{}")), std::logic_error);
}

TEST_CASE("after finishing, the loop keeps answering with the same finish") {
    auto loop = make_loop(parse(teller_yaml()));
    loop.next(started());
    auto done = as<finish_action>(loop.next(model(says("ok"))));
    auto again = as<finish_action>(loop.next(appended()));
    CHECK(again.output == done.output);
}

TEST_CASE("a tool result is shown to the model as its text blocks, or as compact JSON") {
    CHECK(tool_result_text(json::parse(R"({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]})")) == "a\nb");
    CHECK(tool_result_text(json::parse(R"({"content":[{"type":"image","data":"x"}]})")) ==
          R"({"content":[{"type":"image","data":"x"}]})");
    CHECK(tool_result_text(json::value("plain")) == "plain");
    CHECK(tool_result_text(json::parse(R"({"balance":42})")) == R"({"balance":42})");
}

TEST_CASE("run statuses read back from their names") {
    for (auto s : {run_status::running, run_status::succeeded, run_status::failed, run_status::exhausted,
                   run_status::awaiting_approval, run_status::quarantined, run_status::cancelled})
        CHECK(parse_run_status(to_string(s)) == s);
    CHECK_FALSE(parse_run_status("done"));
}

TEST_CASE("a completion written to the journal reads back equal") {
    auto c = calls("call_1", "ledger__read", R"({"account":"AC-1"})", 17);
    c.text = "let me look";
    c.model = "teller-1";
    auto back = completion_from_json(to_json(c));
    REQUIRE(back.has_value());
    CHECK(back->text == c.text);
    CHECK(back->tool_calls == c.tool_calls);
    CHECK(back->usage == c.usage);
    CHECK(back->stop == stop_reason::tool_use);
    CHECK(back->model == "teller-1");
    auto bad = completion_from_json(json::parse(R"({"text":1})"));
    REQUIRE(bad.has_error());
    CHECK(bad.error().message == "completion.text must be a string");
}
