#include "tests/crash/journal_check.hpp"

#include "tests/crash/deployment.hpp"

#include <boost/json/parse.hpp>

#include <fstream>
#include <sstream>

namespace airlock::crash {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::string text_of(json::object const& o, char const* key) {
    auto const* v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

void read_record(journal_view& view, json::object const& record) {
    auto run_id = text_of(record, "run_id");
    auto kind = text_of(record, "kind");
    auto const& body = record.at("body").as_object();
    auto& run = view.runs[run_id];
    auto effect = text_of(body, "effect_key");
    if (kind == "run_admitted") {
        run.admitted = true;
        run.gateway = text_of(body, "mode") == "gateway";
    } else if (kind == "run_sealed") {
        run.status = text_of(body, "status");
        run.reason = text_of(body, "reason");
    }
    else if (kind == "effect_started" && text_of(body, "target") != "model" && !view.effects.contains(effect)) {
        journaled_effect e{run_id, text_of(body, "tool"), {}, true, "", false};
        if (auto const* a = body.if_contains("arguments"); a && a->is_object()) e.arguments = a->as_object();
        if (auto const* m = body.if_contains("mutates"); m && m->is_bool()) e.mutates = m->as_bool();
        if (e.tool == "tool://counter/add" && e.arguments.contains("key"))
            view.by_counter_key[text_of(e.arguments, "key")].push_back(effect);
        run.effects.push_back(effect);
        view.effects.emplace(effect, std::move(e));
    } else if ((kind == "effect_done" || kind == "effect_failed") && view.effects.contains(effect)) {
        view.effects[effect].outcome = kind == "effect_done" ? "done" : "failed";
    } else if (kind == "note" && text_of(body, "event") == "effect_in_doubt" && view.effects.contains(effect)) {
        view.effects[effect].noted_in_doubt = true;
    } else if (kind == "approval_decided") {
        if (auto const* ok = body.if_contains("approved"); ok && ok->is_bool() && ok->as_bool()) view.approved.insert(effect);
    }
}

}  // namespace

journal_view read_journal(fs::path const& journal_dir, fs::path const& scratch) {
    journal_view view;
    fs::remove_all(scratch);
    auto exported = airlock_command({"journal", "export", "--all", "--to", scratch.string(), "--journal", journal_dir.string()});
    if (exported.exit_code != 0) {
        view.error = "journal export failed: " + exported.err;
        return view;
    }
    for (auto const& file : fs::directory_iterator(scratch)) {
        std::ifstream in(file.path());
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            boost::system::error_code ec;
            auto v = json::parse(line, ec);
            if (ec || !v.is_object()) {
                view.error = "an exported record is not JSON: " + file.path().filename().string();
                return view;
            }
            read_record(view, v.as_object());
        }
    }
    return view;
}

int broken_chains(fs::path const& journal_dir, std::string& output) {
    auto r = airlock_command({"journal", "verify", "--all", "--journal", journal_dir.string()});
    output = r.out + r.err;
    if (r.exit_code != 0 && output.find("BROKEN") == std::string::npos) return -1;
    int broken = 0;
    for (std::size_t at = output.find("BROKEN"); at != std::string::npos; at = output.find("BROKEN", at + 1)) ++broken;
    return broken;
}

std::map<std::string, int> performed_adds(fs::path const& counter_log) {
    std::map<std::string, int> out;
    std::ifstream in(counter_log);
    std::string line;
    while (std::getline(in, line)) {
        boost::system::error_code ec;
        auto v = json::parse(line, ec);
        if (ec || !v.is_object() || text_of(v.as_object(), "tool") != "add") continue;
        auto const* effect = v.as_object().if_contains("effect");
        ++out[effect && effect->is_string() ? std::string(effect->as_string()) : std::string("(no effect key)")];
    }
    return out;
}

namespace {

// A key as a message shows it: the scenarios' keys are 60 kB long.
std::string shown(std::string const& key) { return key.size() <= 40 ? key : key.substr(0, 40) + "..."; }

// Every call a client was told the answer of is journaled, with that outcome or noted in doubt.
void check_told_calls(journal_view const& j, told const& clients, promise_check& c) {
    for (auto const& call : clients.calls) {
        auto found = j.by_counter_key.find(call.key);
        if (found == j.by_counter_key.end()) {
            c.problems.push_back("the " + call.era + " call with key " + shown(call.key) + " was answered and is not in the journal");
            continue;
        }
        auto const& e = j.effects.at(found->second.front());
        bool matches = e.outcome == (call.ok ? "done" : "failed");
        if (!matches && !(e.outcome.empty() && e.noted_in_doubt))
            c.problems.push_back("the " + call.era + " call with key " + shown(call.key) + " was answered " +
                                 (call.ok ? "ok" : "with an error") + "; the journal says " +
                                 (e.outcome.empty() ? "nothing (not even in doubt)" : e.outcome));
    }
    for (auto const& id : clients.runs) {
        auto run = j.runs.find(id);
        if (run == j.runs.end() || !run->second.admitted) c.problems.push_back("run " + id + " was admitted and is not in the journal");
    }
    for (auto const& effect : clients.approvals)
        if (!j.approved.contains(effect)) c.problems.push_back("the approval of " + effect + " was accepted and is not in the journal");
}

// A call with no outcome is in doubt: its run is sealed saying so (naming it), a gateway run notes
// it, and one that mutates quarantines its run.
void check_in_doubt(journal_view const& j, promise_check& c) {
    for (auto const& [key, e] : j.effects) {
        if (!e.outcome.empty()) continue;
        ++c.in_doubt;
        auto const& run = j.runs.at(e.run_id);
        auto what = "effect " + key + " (" + e.tool + ") is in doubt and ";
        if (e.mutates && run.status != "quarantined")
            c.problems.push_back(what + "its run is " + (run.status.empty() ? "not sealed" : run.status) + ", not quarantined");
        else if (run.reason.find(key) == std::string::npos)
            c.problems.push_back(what + "its run's seal does not name it: " + run.reason);
        if (run.gateway && !e.noted_in_doubt) c.problems.push_back(what + "its gateway run has no effect_in_doubt note for it");
    }
}

}  // namespace

promise_check check_promises(journal_view const& journal, std::map<std::string, int> const& adds, told const& clients) {
    promise_check c;
    if (!journal.error.empty()) c.problems.push_back(journal.error);
    check_told_calls(journal, clients, c);
    check_in_doubt(journal, c);
    for (auto const& [effect, times] : adds) {
        if (times > 1) {
            c.duplicates += times - 1;
            c.problems.push_back("the upstream performed " + effect + " " + std::to_string(times) + " times");
        }
        // The start record is durable before a call leaves, so nothing performed is missing from it.
        if (!journal.effects.contains(effect))
            c.problems.push_back("the upstream performed " + effect + ", which the journal does not hold");
    }
    return c;
}

}  // namespace airlock::crash
