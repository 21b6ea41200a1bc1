#pragma once
// The rules every journal store applies to an append, whatever it keeps its data in: the first record
// admits the run, effect keys start once, a sealed run takes nothing more, and the status follows
// the records. Stores call plan_append inside their own atomic section and write what it returns.

#include "core/journal.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::core {

// Run ids are 1 to 128 bytes of UTF-8 without NUL: the LMDB store keys records by run id, a NUL and the seq,
// and every store refuses the same ids so a run that works in tests works on disk.
inline constexpr std::size_t max_run_id_bytes = 128;
result<void> check_run_id(std::string_view run_id);

struct append_plan {
    std::vector<record> records;           // chained, ready to write
    run_summary summary;                   // the run's index entry after the append
    std::vector<std::string> new_effects;  // effect keys started by this append
};

// `current` is the run's index entry, or nullopt for a run not yet admitted. `effect_started_before`
// answers whether (run, effect_key) already has an effect_started record in the store.
result<append_plan> plan_append(std::string_view run_id, std::optional<run_summary> const& current,
                                std::vector<new_record> const& batch,
                                std::function<bool(std::string_view effect_key)> const& effect_started_before);

// The run_sealed record body a seal appends, refusing a status that is unknown or not terminal.
// `sealed_at` (RFC 3339) is when; retention counts from it.
result<new_record> make_seal(run_summary const& current, std::string_view status, std::string_view reason,
                             std::string_view sealed_at);

// The kind (run_kinds) of the run a run_admitted body admits: mode "agent" is an agent's run; the
// agents airlock-gateway and airlock-journal are airlock's own; anything else is a gateway session
// (mode "gateway", or no mode: session runs written before modes were recorded).
std::string run_kind_of(boost::json::object const& admitted_body);
// Who owns the run a run_admitted body admits (run_summary::principal).
std::string run_owner_of(boost::json::object const& admitted_body);

// run_summary ↔ JSON, for stores that keep the index as documents.
boost::json::object to_json(run_summary const& s);
result<run_summary> run_summary_from_json(boost::json::value const& v);

// Does the summary pass the filter's status/agent/since conditions (not limit or cursor)?
bool matches(run_filter const& f, run_summary const& s);

}  // namespace airlock::core
