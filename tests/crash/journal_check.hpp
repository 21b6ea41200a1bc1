#pragma once
// What the crash rounds check after each restart, from outside: the journal as `airlock journal
// export --all` writes it, `airlock journal verify --all`, and the counting upstream's own log of
// the calls it performed.

#include "tests/crash/load.hpp"

#include <boost/json/object.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace airlock::crash {

// One tool call as the journal holds it.
struct journaled_effect {
    std::string run_id;
    std::string tool;
    boost::json::object arguments;
    bool mutates = true;
    std::string outcome;  // "done", "failed" or "" (none)
    bool noted_in_doubt = false;
};

struct journaled_run {
    std::string status;  // the seal's status, "" while unsealed
    std::string reason;  // the seal's reason
    bool admitted = false;
    bool gateway = false;  // a gateway session's run (run_admitted.body.mode)
    std::vector<std::string> effects;  // effect keys of its tool calls, in order
};

struct journal_view {
    std::map<std::string, journaled_run> runs;
    std::map<std::string, journaled_effect> effects;  // by effect key
    std::set<std::string> approved;                   // effect keys with an approval_decided approving them
    std::map<std::string, std::vector<std::string>> by_counter_key;  // counter add's key -> effect keys
    std::string error;                                // why it could not be read, "" when it could
};

// Every run of the journal in `journal_dir`, exported to `scratch` and read back.
journal_view read_journal(std::filesystem::path const& journal_dir, std::filesystem::path const& scratch);

// `airlock journal verify --all`: how many runs it reports broken (-1: it could not run).
int broken_chains(std::filesystem::path const& journal_dir, std::string& output);

// The effect keys of the adds the counting upstream performed, each with how many times.
std::map<std::string, int> performed_adds(std::filesystem::path const& counter_log);

// The promises, each broken one a line of `problems`.
struct promise_check {
    int in_doubt = 0;    // tool calls journaled without an outcome, noted in doubt or quarantined
    int duplicates = 0;  // adds the upstream performed more than once
    std::vector<std::string> problems;
};
promise_check check_promises(journal_view const& journal, std::map<std::string, int> const& adds,
                             told const& clients);

}  // namespace airlock::crash
