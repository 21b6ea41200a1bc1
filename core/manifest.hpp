#pragma once
// The agent manifest: YAML → typed structs → validated, with a digest over its canonical JSON.

#include "core/error.hpp"
#include "core/label.hpp"
#include "core/tool_id.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::core {

struct protected_field {
    std::string path;                          // absolute RFC 6901 pointer into the arguments
    bool require_trusted = false;
    std::vector<std::string> allowed_sources;  // every source of the value must be listed
    std::optional<sensitivity> max_sensitivity;
};

// What the journal keeps of a granted tool's arguments and outputs: `full` (the values), `hash`
// (the SHA-256 of each value's canonical JSON, which provenance's args_sha256 also signs), or
// `omit` (nothing but that there was a value). Only `full` can be replayed.
enum class journal_keep { full, hash, omit };
std::string_view to_string(journal_keep k) noexcept;

struct tool_grant {
    tool_id ref;
    bool mutates = true;
    std::optional<sensitivity> max_sensitivity;
    std::string description;
    bool requires_approval = false;
    bool idempotent = false;
    std::vector<protected_field> protected_fields;  // sorted by path after parsing
    // An argument schema written in the grant (`arguments:`). Parsed so that ToolBox::check_against
    // can refuse it by name: a typed tool derives its schema, and a second copy can only drift.
    std::optional<boost::json::value> arguments;
    // `journal:` of the grant, else spec.security.journal, else full.
    journal_keep journal = journal_keep::full;
};

struct identity_spec {
    std::string role;
    std::vector<std::string> constraints;
};

struct model_spec {
    std::string provider;
    std::string model;
    std::optional<std::uint64_t> max_tokens;
};

enum class execution_kind { completion, tool_calling };

struct execution_spec {
    execution_kind kind = execution_kind::completion;
    std::uint32_t max_turns = 8;
};

// An absent ceiling is deliberately unbounded; a ceiling of 0 is refused at parse time.
struct budgets {
    std::optional<std::uint64_t> max_steps;
    std::optional<std::uint64_t> max_effects;
    std::optional<std::uint64_t> max_tokens;
    std::optional<std::uint64_t> max_wallclock_secs;
};

struct manifest {
    std::string api_version;
    std::string name;
    std::string version;
    std::optional<identity_spec> identity;
    std::vector<std::string> provides;  // spec.capabilities.provides
    std::optional<model_spec> privileged_model;
    std::optional<sensitivity> max_sensitivity_egress;
    std::vector<tool_grant> tools;
    std::optional<execution_spec> execution;
    budgets limits;
    std::string digest;  // hex SHA-256 of canonical JSON of the normalized manifest

    // The grant whose ref is byte-identical to `tool`, or nullptr.
    tool_grant const* grant_for(tool_id const& tool) const noexcept;
};

// Parses and validates; the error message names the field path (e.g. "spec.tools[1].ref").
result<manifest> parse_manifest(std::string_view yaml_text);

// Every problem parse_manifest refuses for, in the order found; empty when it parses.
// parse_manifest reports the first of these; `airlock check` prints them all.
std::vector<error> manifest_problems(std::string_view yaml_text);

// The normalized manifest as JSON (defaults serialized, protected fields sorted): what the digest covers.
boost::json::value to_json(manifest const& m);

}  // namespace airlock::core
