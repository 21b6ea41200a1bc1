#include "core/recovery.hpp"

#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>

#include <string>
#include <variant>
#include <vector>

using namespace airlock::core;
namespace json = boost::json;
namespace rec = airlock::core::recovery;

namespace {

std::string const run = "01JD5Z8Q4B3C2D1E0F9G8H7J6K";
std::string const model_key = run + "/000001/model";
std::string const tool_key = run + "/000002/tool";

// A journal as a list of (kind, body text); seq follows the order, run_admitted first.
std::vector<record> journal(std::vector<std::pair<record_kind, std::string>> const& rows) {
    std::vector<record> out;
    out.push_back(record{run, 1, record_kind::run_admitted, json::parse(R"({"mode":"agent","admitted_at_ms":1})").as_object()});
    for (auto const& [kind, text] : rows)
        out.push_back(record{run, out.size() + 1, kind, json::parse(text).as_object()});
    return out;
}

call_model_action model_call() {
    call_model_action a;
    a.effect_key = model_key;
    a.request.model = "teller-1";
    a.request_sha256 = "9f2c41aa";
    return a;
}

call_tool_action tool_call(bool mutates, bool idempotent = false) {
    auto tool = tool_id::parse(mutates ? "tool://ledger/post" : "tool://ledger/read").value();
    return call_tool_action{tool_key, tool, json::parse(R"({"account":"AC-1"})"), label{}, mutates, idempotent, "c1"};
}

finish_action finished() {
    finish_action f;
    f.status = run_status::succeeded;
    f.output = "AC-1 holds 5";
    return f;
}

// The bodies the runner writes (service/agents/runner_driver.cpp), cut to what recovery reads.
std::string model_started() {
    return R"({"effect_key":")" + model_key +
           R"(","target":"model","provider":"scripted","model":"teller-1","request_sha256":"9f2c41aa","mutates":false,"attempt":1,"at_ms":2})";
}
std::string model_done() {
    return R"({"effect_key":")" + model_key +
           R"(","output":{"text":"","tool_calls":[{"id":"c1","name":"ledger__read","arguments":{"account":"AC-1"}}]},"at_ms":3})";
}
std::string tool_started(std::string const& tool, std::string const& args = R"({"account":"AC-1"})") {
    return R"({"effect_key":")" + tool_key + R"(","target":"tool","tool":")" + tool + R"(","arguments":)" + args +
           R"(,"mutates":false,"idempotent":false,"attempt":1,"at_ms":4})";
}
std::string tool_done() { return R"({"effect_key":")" + tool_key + R"(","output":{"balance":5},"at_ms":5})"; }
std::string output_note() {
    return R"({"event":"run_output","status":"succeeded","reason":"","output":"AC-1 holds 5","output_label":{}})";
}
std::string sealed_as(std::string const& status) { return R"({"status":")" + status + R"(","reason":"r","chain_head":"00"})"; }

template <class T>
T const& as(rec::decision const& d) {
    REQUIRE(std::holds_alternative<T>(d));
    return std::get<T>(d);
}

}  // namespace

TEST_CASE("strict replay of a finished run feeds every recorded outcome and ends as the journal says") {
    auto records = journal({{record_kind::effect_started, model_started()},
                            {record_kind::effect_done, model_done()},
                            {record_kind::effect_started, tool_started("tool://ledger/read")},
                            {record_kind::effect_done, tool_done()},
                            {record_kind::note, output_note()},
                            {record_kind::run_sealed, sealed_as("succeeded")}});
    rec::journal_cursor cursor(run, records);

    auto reply = as<rec::replay_event>(rec::next(model_call(), cursor, rec::mode::replay));
    REQUIRE(std::holds_alternative<model_done_event>(reply.event.what));
    CHECK(std::get<model_done_event>(reply.event.what).result.tool_calls.size() == 1);
    CHECK(reply.event.now_ms == 3);

    auto result = as<rec::replay_event>(rec::next(tool_call(false), cursor, rec::mode::replay));
    REQUIRE(std::holds_alternative<tool_done_event>(result.event.what));
    CHECK(std::get<tool_done_event>(result.event.what).result == json::parse(R"({"balance":5})"));

    auto end = as<rec::finish>(rec::next(finished(), cursor, rec::mode::replay));
    CHECK_FALSE(end.write_output);
    CHECK_FALSE(end.write_seal);
    CHECK(cursor.matched() == 6);
    CHECK(cursor.at_end());
}

TEST_CASE("resuming after a model reply replays the reply and performs the next call live") {
    auto records = journal({{record_kind::effect_started, model_started()}, {record_kind::effect_done, model_done()}});
    rec::journal_cursor cursor(run, records);
    as<rec::replay_event>(rec::next(model_call(), cursor, rec::mode::live));
    as<rec::perform>(rec::next(tool_call(true), cursor, rec::mode::live));
    auto end = as<rec::finish>(rec::next(finished(), cursor, rec::mode::live));
    CHECK(end.write_output);
    CHECK(end.write_seal);
}

TEST_CASE("in strict replay a journal that ends before the run finished is incomplete, naming the next action") {
    auto records = journal({{record_kind::effect_started, model_started()}, {record_kind::effect_done, model_done()}});
    rec::journal_cursor cursor(run, records);
    as<rec::replay_event>(rec::next(model_call(), cursor, rec::mode::replay));
    auto r = as<rec::refuse>(rec::next(tool_call(false), cursor, rec::mode::replay));
    CHECK(r.why.code == "incomplete");
    CHECK(r.why.message == "the journal of run " + run + " ends at seq 3 before the run finished (next: call_tool)");
}

TEST_CASE("an effect started without an outcome is decided by its grant when resuming, and incomplete in replay") {
    struct row {
        char const* what;
        bool tool, mutates, idempotent;
        rec::mode mode;
        char const* expect;  // retry, quarantine, incomplete
    };
    row const table[] = {
        {"a model call is asked again", false, false, false, rec::mode::live, "retry"},
        {"a read-only tool call is made again", true, false, false, rec::mode::live, "retry"},
        {"an idempotent mutating call is made again", true, true, true, rec::mode::live, "retry"},
        {"a mutating call that is not idempotent is quarantined", true, true, false, rec::mode::live, "quarantine"},
        {"strict replay stops", true, true, false, rec::mode::replay, "incomplete"},
        {"strict replay stops on a model call too", false, false, false, rec::mode::replay, "incomplete"},
    };
    for (auto const& t : table) {
        SECTION(t.what) {
            auto tool = t.mutates ? "tool://ledger/post" : "tool://ledger/read";
            auto records = journal({{record_kind::effect_started, t.tool ? tool_started(tool) : model_started()}});
            rec::journal_cursor cursor(run, records);
            auto d = t.tool ? rec::next(tool_call(t.mutates, t.idempotent), cursor, t.mode)
                            : rec::next(model_call(), cursor, t.mode);
            std::string expect = t.expect;
            if (expect == "retry") {
                auto const& r = as<rec::retry>(d);
                CHECK(r.note.kind == record_kind::note);
                CHECK(r.note.body.at("event") == "effect_retried");
                CHECK(r.note.body.at("attempt") == 2);
                CHECK(std::string(r.note.body.at("effect_key").as_string()) == (t.tool ? tool_key : model_key));
            } else if (expect == "quarantine") {
                CHECK(as<rec::quarantine>(d).reason ==
                      "effect " + tool_key +
                          " (tool://ledger/post) was started and its outcome is unknown; it mutates and is not idempotent, "
                          "so it is not performed again");
            } else {
                auto const& r = as<rec::refuse>(d);
                CHECK(r.why.code == "incomplete");
                CHECK(r.why.message == "seq 2: " + std::string(t.tool ? "tool" : "model") + " call " +
                                           (t.tool ? tool_key : model_key) + " has no outcome");
            }
        }
    }
}

TEST_CASE("a recorded call other than the one the loop would make is a divergence naming the seq") {
    SECTION("other arguments") {
        auto records = journal({{record_kind::effect_started, tool_started("tool://ledger/read", R"({"account":"AC-2"})")}});
        rec::journal_cursor cursor(run, records);
        auto r = as<rec::refuse>(rec::next(tool_call(false), cursor, rec::mode::replay));
        CHECK(r.why.code == "divergence");
        CHECK(r.why.message == "seq 2: the current manifest and code would call tool://ledger/read as " + tool_key +
                                   ", the journal has effect_started " + tool_key + " (tool://ledger/read)");
    }
    SECTION("a model call where the loop calls a tool") {
        auto records = journal({{record_kind::effect_started, model_started()}});
        rec::journal_cursor cursor(run, records);
        CHECK(as<rec::refuse>(rec::next(tool_call(false), cursor, rec::mode::live)).why.code == "divergence");
    }
    SECTION("another model request") {
        auto records = journal({{record_kind::effect_started, model_started()}});
        rec::journal_cursor cursor(run, records);
        auto changed = model_call();
        changed.request_sha256 = "00ff";
        CHECK(as<rec::refuse>(rec::next(changed, cursor, rec::mode::live)).why.code == "divergence");
    }
    SECTION("another outcome than the call's") {
        auto records = journal({{record_kind::effect_started, model_started()}, {record_kind::effect_done, tool_done()}});
        rec::journal_cursor cursor(run, records);
        auto r = as<rec::refuse>(rec::next(model_call(), cursor, rec::mode::replay));
        CHECK(r.why.message == "seq 3: the current manifest and code would see the outcome of " + model_key +
                                   ", the journal has effect_done " + tool_key);
    }
}

TEST_CASE("a tool call the gateway journaled, without label, idempotent or time, matches the same call") {
    auto gateway_started = R"({"effect_key":")" + tool_key +
                           R"(","target":"tool","tool":"tool://ledger/read","arguments":{"account":"AC-1"},"mutates":false,)"
                           R"("attempt":1,"provenance":{},"request_id":"7"})";
    auto gateway_failed = R"({"effect_key":")" + tool_key +
                          R"(","error_kind":"timed_out","disposition":"in_doubt","detail":"the client cancelled the call"})";
    auto records = journal({{record_kind::effect_started, gateway_started}, {record_kind::effect_failed, gateway_failed}});
    rec::journal_cursor cursor(run, records);
    auto r = as<rec::replay_event>(rec::next(tool_call(false), cursor, rec::mode::replay));
    REQUIRE(std::holds_alternative<tool_failed_event>(r.event.what));
    auto const& e = std::get<tool_failed_event>(r.event.what).error;
    CHECK(e.kind == tool_error_kind::timed_out);
    CHECK(e.tool == "tool://ledger/read");
    CHECK(e.detail == "the client cancelled the call");
    CHECK(r.event.now_ms == 0);
}

TEST_CASE("a model call's recorded failure is fed to the loop as a model failure") {
    auto failed = R"({"effect_key":")" + model_key +
                  R"(","error_kind":"unreachable","disposition":"did_not_happen","detail":"egress_denied","at_ms":9})";
    auto records = journal({{record_kind::effect_started, model_started()}, {record_kind::effect_failed, failed}});
    rec::journal_cursor cursor(run, records);
    auto r = as<rec::replay_event>(rec::next(model_call(), cursor, rec::mode::replay));
    REQUIRE(std::holds_alternative<model_failed_event>(r.event.what));
    CHECK(std::get<model_failed_event>(r.event.what).error.detail == "egress_denied");
    CHECK(r.event.now_ms == 9);
}

TEST_CASE("a run sealed from outside ends as recorded, even where the loop would finish when it was cancelled") {
    auto records = journal({{record_kind::run_sealed, sealed_as("cancelled")}});
    SECTION("the loop would call its model") {
        rec::journal_cursor cursor(run, records);
        auto s = as<rec::sealed>(rec::next(model_call(), cursor, rec::mode::replay));
        CHECK(s.status == run_status::cancelled);
        CHECK(s.reason == "r");
    }
    SECTION("the loop would finish") {
        rec::journal_cursor cursor(run, records);
        CHECK(as<rec::sealed>(rec::next(finished(), cursor, rec::mode::replay)).status == run_status::cancelled);
    }
}

TEST_CASE("an approval not yet decided parks the run; a recorded decision is fed to the loop") {
    await_approval_action wait{tool_key};
    auto none = journal({});
    rec::journal_cursor parked(run, none);
    as<rec::park>(rec::next(wait, parked, rec::mode::replay));

    auto decided = journal({{record_kind::approval_decided, R"({"effect_key":")" + tool_key + R"(","approved":true,"at_ms":7})"}});
    rec::journal_cursor cursor(run, decided);
    auto r = as<rec::replay_event>(rec::next(wait, cursor, rec::mode::live));
    REQUIRE(std::holds_alternative<approval_event>(r.event.what));
    CHECK(std::get<approval_event>(r.event.what).approved);
    CHECK(r.event.now_ms == 7);
}

TEST_CASE("records the loop appends are matched where journaled and written where not, annotations skipped") {
    append_action add;
    add.records.push_back({record_kind::policy_denied, json::parse(R"({"tool":"tool://ledger/post","reason":"r"})").as_object()});
    add.records.push_back({record_kind::note, json::parse(R"({"text":"second"})").as_object()});
    auto records = journal({{record_kind::note, R"({"event":"resumed"})"},
                            {record_kind::policy_denied, R"({"reason":"r","tool":"tool://ledger/post"})"}});
    rec::journal_cursor cursor(run, records);
    auto w = as<rec::write>(rec::next(add, cursor, rec::mode::live));
    REQUIRE(w.records.size() == 1);
    CHECK(w.records.front().body.at("text") == "second");
    CHECK(cursor.matched() == 1);

    auto other = journal({{record_kind::policy_denied, R"({"reason":"another","tool":"tool://ledger/post"})"}});
    rec::journal_cursor diverged(run, other);
    CHECK(as<rec::refuse>(rec::next(add, diverged, rec::mode::live)).why.code == "divergence");
}

TEST_CASE("a finished run whose seal is missing is sealed when resumed and incomplete in strict replay") {
    auto records = journal({{record_kind::note, output_note()}});
    rec::journal_cursor live(run, records);
    auto f = as<rec::finish>(rec::next(finished(), live, rec::mode::live));
    CHECK_FALSE(f.write_output);
    CHECK(f.write_seal);

    rec::journal_cursor replay(run, records);
    auto r = as<rec::refuse>(rec::next(finished(), replay, rec::mode::replay));
    CHECK(r.why.message == "the journal of run " + run + " ends before its seal (succeeded)");

    auto other = journal({{record_kind::note, output_note()}, {record_kind::run_sealed, sealed_as("failed")}});
    rec::journal_cursor diverged(run, other);
    CHECK(as<rec::refuse>(rec::next(finished(), diverged, rec::mode::replay)).why.code == "divergence");
}
