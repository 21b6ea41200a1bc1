#pragma once
// The replay/resume decision: a pure step function over a run's journal. The agent runner's driver
// always starts from the journal and asks, for every action its core::agent_loop takes, what the
// journal says about it:
// - recorded: the journal holds the action and its outcome; the outcome is fed to the loop (replay);
// - past the end: the action is performed live (a new run, a resumed one, one continuing after an
//   approval), or, in strict replay, the journal is incomplete;
// - in doubt: an effect was started and has no outcome (a crash in between). A model call changes
//   nothing in the world and is asked again; a tool call is made again, with the same effect key,
//   only when its grant is `mutates: false` or `idempotent: true`; otherwise the run is quarantined,
//   naming the effect;
// - diverged: the current manifest and code would not do what the journal says was done, named by
//   seq; the caller refuses to go on (strict replay) or quarantines the run (resume).
// It performs nothing: service/agents/runner_driver performs the decisions.

#include "core/agent_loop.hpp"
#include "core/error.hpp"
#include "core/journal.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace airlock::core::recovery {

// The records of one run after its run_admitted, read in order as the loop acts. Annotations (notes
// the driver writes for people: effect_retried, resumed) match no action and are skipped.
class journal_cursor {
public:
    // `records` is the whole journal of `run_id`, run_admitted first; it must outlive the cursor.
    journal_cursor(std::string run_id, std::vector<record> const& records);

    record const* peek();  // the next record the loop must account for; nullptr past the end
    void take();           // the peeked record is accounted for
    bool at_end() { return peek() == nullptr; }
    std::uint64_t matched() const noexcept { return matched_; }  // records taken
    std::string const& run_id() const noexcept { return run_id_; }
    std::uint64_t last_seq() const noexcept;

private:
    std::string run_id_;
    std::vector<record> const* records_;
    std::size_t pos_ = 1;
    std::uint64_t matched_ = 0;
};

enum class mode {
    live,    // past the end of the journal, actions are performed
    replay,  // the journal alone: past its end the run is incomplete
};

// Feed the loop this event: the recorded outcome of the action (a model reply, a tool result or
// failure, a reviewer's decision).
struct replay_event {
    loop_event event;
};
// Past the end of the journal: perform the action, first attempt (effect_started, call, outcome).
struct perform {};
// In doubt and safe to repeat: journal `note` (effect_retried), then perform the call again as
// attempt 2, with the same effect key.
struct retry {
    new_record note;
};
// In doubt and not safe to repeat: seal the run quarantined with `reason`.
struct quarantine {
    std::string reason;
};
// Stop: a divergence ("divergence", naming the seq), a journal that ends too early ("incomplete"),
// a record that does not read ("malformed_record").
struct refuse {
    error why;
};
// The journal seals the run here, as decided from outside the loop (cancelled, quarantined, failed
// by a bug): the run ends as recorded.
struct sealed {
    run_status status = run_status::failed;
    std::string reason;
};
// Awaiting a reviewer's decision that is not in the journal yet.
struct park {};
// An append action: journal `records` (those not in the journal yet; possibly none), then feed the
// loop appended_event.
struct write {
    std::vector<new_record> records;
};
// A finish action: write the run_output note and/or the seal when the journal lacks them, then the
// run ends as the loop says.
struct finish {
    bool write_output = false;
    bool write_seal = false;
};

using decision = std::variant<replay_event, perform, retry, quarantine, refuse, sealed, park, write, finish>;

// What to do about `action`, the loop's next one, given the journal at `cursor`. Takes from the
// cursor the records that account for the action.
decision next(loop_action const& action, journal_cursor& cursor, mode m);

// The run_output note a finished run journals before its seal.
new_record output_note(finish_action const& fin);

}  // namespace airlock::core::recovery
