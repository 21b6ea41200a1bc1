#pragma once
// Policy gates at the sink: whether one tool call, with these labelled arguments, to this
// destination, may leave. Pure: every input is passed in, nothing is looked up elsewhere.

#include "core/error.hpp"
#include "core/label.hpp"
#include "core/manifest.hpp"
#include "core/tool.hpp"
#include "core/tool_id.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::core {

// Why a call was refused. The string forms are stable: they are written to the journal's
// `policy_denied` record and read back by replay and by operators.
enum class deny_reason : std::uint8_t {
    not_granted,                  // the manifest grants no tool with this exact id
    egress_ceiling,               // argument sensitivity above min(tool, grant, manifest ceiling)
    tainted_mutation,             // mutating grant, untrusted arguments, no protected_fields
    protected_field_missing,      // a protected field is absent from the arguments
    protected_field_untrusted,    // require_trusted, and the field's value is untrusted
    protected_field_source,       // allowed_sources: a source is not listed, or there is none
    protected_field_sensitivity,  // the field's value is above the field's max_sensitivity
    destination_not_allowed,      // the destination is not in the egress allowlist
};

std::string_view to_string(deny_reason r) noexcept;
std::optional<deny_reason> parse_deny_reason(std::string_view s) noexcept;

// The only thing a model is ever told about a refusal, whatever the reason.
inline constexpr std::string_view refusal_text = "not permitted";

struct denial {
    deny_reason reason;
    std::string detail;  // for the journal and operators: names the tool, field or destination
};

// The outcome of a gate: allowed, or refused with a reason and a detail.
class decision {
public:
    static decision allow() noexcept { return decision{}; }
    static decision deny(deny_reason reason, std::string detail);

    bool allowed() const noexcept { return !refusal_.has_value(); }
    explicit operator bool() const noexcept { return allowed(); }
    // Present exactly when refused.
    std::optional<denial> const& refusal() const noexcept { return refusal_; }
    // Empty when allowed; `refusal_text` when refused, for every reason alike.
    std::string_view model_text() const noexcept;

private:
    std::optional<denial> refusal_;
};

// The deployment's egress allowlist: exact destinations only. An empty list permits nothing.
class egress_allowlist {
public:
    // Refuses an entry that names nothing or reads like a pattern (`*`, a leading `.`), since such
    // an entry would silently never match; the error names the entry.
    result<void> add(destination d);
    // Local and process destinations match exactly; remote ones match on exact scheme and port
    // and on the host compared ASCII case-insensitively.
    bool permits(destination const& d) const noexcept;
    std::vector<destination> const& entries() const noexcept { return entries_; }

private:
    std::vector<destination> entries_;
};

// Grant gate: the tool must be granted by a byte-identical tool id.
decision grant_gate(manifest const& m, tool_id const& tool);

// Egress ceiling: the arguments' overall sensitivity must not exceed the lowest of the ceilings
// present (the tool's own, the grant's, the manifest's); absent ceilings do not constrain.
decision egress_ceiling_gate(manifest const& m, tool_grant const& grant,
                             std::optional<sensitivity> tool_ceiling, tainted const& arguments);

// Taint gate: a mutating grant without protected_fields refuses arguments carrying any
// untrusted part. A grant with protected_fields is left to protected_fields_gate.
decision taint_gate(tool_grant const& grant, tainted const& arguments);

// Protected fields: each declared field must be present and its value (the field and everything
// beneath it) must satisfy require_trusted, allowed_sources and max_sensitivity.
decision protected_fields_gate(tool_grant const& grant, tainted const& arguments);

// Whether the taint and protected-field gates refuse every call under `grant` whose arguments are
// labelled `whole` throughout, whatever the arguments say: a gateway principal's arguments carry
// one label, so such a grant can never be used by it (tools/list leaves it out; `check` warns).
decision refused_whatever_the_arguments(tool_grant const& grant, label const& whole);

// Destination gate: the destination must be in the allowlist.
decision destination_gate(egress_allowlist const& allowlist, destination const& dest);

// Every gate, in order: grant, destination, taint, protected fields, egress ceiling. The first
// refusal is returned.
decision evaluate(manifest const& m, egress_allowlist const& allowlist, tool_id const& tool,
                  tainted const& arguments, destination const& dest,
                  std::optional<sensitivity> tool_ceiling = std::nullopt);

}  // namespace airlock::core
