#include "core/policy.hpp"

#include "core/ascii.hpp"

#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>
#include <variant>

// Details name tools, pointers, sources, levels and destinations, and never an argument's value:
// the journal outlives the call, and a secret placed in an argument must not be copied into it.

namespace airlock::core {

namespace {

constexpr std::array<std::pair<deny_reason, std::string_view>, 8> reason_names{{
    {deny_reason::not_granted, "not_granted"},
    {deny_reason::egress_ceiling, "egress_ceiling"},
    {deny_reason::tainted_mutation, "tainted_mutation"},
    {deny_reason::protected_field_missing, "protected_field_missing"},
    {deny_reason::protected_field_untrusted, "protected_field_untrusted"},
    {deny_reason::protected_field_source, "protected_field_source"},
    {deny_reason::protected_field_sensitivity, "protected_field_sensitivity"},
    {deny_reason::destination_not_allowed, "destination_not_allowed"},
}};

// Hosts are compared ASCII-only: a non-ASCII host reaches us as punycode, and locale-aware folding
// would let two different byte strings name "the same" host.
bool host_equal(std::string_view a, std::string_view b) noexcept { return iequals(a, b); }

bool same_destination(destination const& listed, destination const& asked) noexcept {
    if (listed.index() != asked.index()) return false;
    return std::visit(
        [&](auto const& l) -> bool {
            using T = std::decay_t<decltype(l)>;
            auto const& a = std::get<T>(asked);
            if constexpr (std::is_same_v<T, local_destination>) {
                return true;
            } else if constexpr (std::is_same_v<T, process_destination>) {
                return l.argv0 == a.argv0;
            } else {
                return l.scheme == a.scheme && l.port == a.port && host_equal(l.host, a.host);
            }
        },
        listed);
}

// True when `pointer` addresses something strictly inside the value at `ancestor`.
bool is_beneath(std::string_view pointer, std::string_view ancestor) noexcept {
    return pointer.size() > ancestor.size() && pointer.starts_with(ancestor) && pointer[ancestor.size()] == '/';
}

// The label of everything a protected field's value is made of. label_at gives the label the field
// inherits; a labelled part beneath it (an untrusted `/account/id` inside `/account`) is part of
// the same value, and ignoring it would let untrusted bytes ride inside a trusted-looking field.
label field_label(tainted const& arguments, std::string const& path) {
    label l = arguments.label_at(path);
    for (auto const& [pointer, part] : arguments.fields) {
        if (is_beneath(pointer, path)) l = l.join(part);
    }
    return l;
}

// What a protected field's label must satisfy, whatever its value.
decision check_field_label(tool_grant const& grant, protected_field const& field, label const& l) {
    std::string const where = grant.ref.uri() + " argument " + field.path;
    if (field.require_trusted && l.trust != trust::trusted) {
        return decision::deny(deny_reason::protected_field_untrusted,
                              where + " is untrusted and the grant requires it trusted");
    }

    if (!field.allowed_sources.empty()) {
        // A value with no recorded source cannot show it came from an allowed one.
        if (l.sources.empty()) {
            return decision::deny(deny_reason::protected_field_source, where + " has no source");
        }
        for (auto const& s : l.sources) {
            if (std::find(field.allowed_sources.begin(), field.allowed_sources.end(), s) ==
                field.allowed_sources.end()) {
                return decision::deny(deny_reason::protected_field_source,
                                      where + " has source '" + s + "', not in allowed_sources");
            }
        }
    }

    if (field.max_sensitivity && l.sensitivity > *field.max_sensitivity) {
        return decision::deny(deny_reason::protected_field_sensitivity,
                              where + " is " + std::string(to_string(l.sensitivity)) + ", above its ceiling " +
                                  std::string(to_string(*field.max_sensitivity)));
    }
    return decision::allow();
}

decision check_protected_field(tool_grant const& grant, protected_field const& field, tainted const& arguments) {
    boost::system::error_code ec;
    if (arguments.value.find_pointer(field.path, ec) == nullptr)
        return decision::deny(deny_reason::protected_field_missing, grant.ref.uri() + " argument " + field.path + " is missing");
    return check_field_label(grant, field, field_label(arguments, field.path));
}

}  // namespace

std::string_view to_string(deny_reason r) noexcept {
    for (auto const& [reason, name] : reason_names) {
        if (reason == r) return name;
    }
    return "unknown";
}

std::optional<deny_reason> parse_deny_reason(std::string_view s) noexcept {
    for (auto const& [reason, name] : reason_names) {
        if (name == s) return reason;
    }
    return std::nullopt;
}

decision decision::deny(deny_reason reason, std::string detail) {
    decision d;
    d.refusal_ = denial{reason, std::move(detail)};
    return d;
}

std::string_view decision::model_text() const noexcept { return allowed() ? std::string_view{} : refusal_text; }

result<void> egress_allowlist::add(destination d) {
    std::string const entry = to_string(d);
    if (auto const* p = std::get_if<process_destination>(&d); p && p->argv0.empty()) {
        return make_error("invalid_destination", "egress entry '" + entry + "': argv0 is empty");
    }
    if (auto const* r = std::get_if<remote_destination>(&d)) {
        if (r->scheme != "http" && r->scheme != "https") {
            return make_error("invalid_destination",
                              "egress entry '" + entry + "': scheme must be exactly \"http\" or \"https\"");
        }
        if (r->host.empty()) {
            return make_error("invalid_destination", "egress entry '" + entry + "': host is empty");
        }
        // Entries are exact; a pattern-looking host would never match anything, and an operator who
        // wrote one believes it does.
        if (r->host.find('*') != std::string::npos || r->host.front() == '.') {
            return make_error("invalid_destination",
                              "egress entry '" + entry + "': host must be exact (no wildcards or suffixes)");
        }
        if (r->port == 0) {
            return make_error("invalid_destination", "egress entry '" + entry + "': port is 0");
        }
    }
    if (!permits(d)) entries_.push_back(std::move(d));
    return {};
}

bool egress_allowlist::permits(destination const& d) const noexcept {
    return std::any_of(entries_.begin(), entries_.end(),
                       [&](destination const& listed) { return same_destination(listed, d); });
}

decision grant_gate(manifest const& m, tool_id const& tool) {
    if (m.grant_for(tool) == nullptr) {
        return decision::deny(deny_reason::not_granted, tool.uri() + " is not granted to agent " + m.name);
    }
    return decision::allow();
}

decision egress_ceiling_gate(manifest const& m, tool_grant const& grant, std::optional<sensitivity> tool_ceiling,
                             tainted const& arguments) {
    std::optional<sensitivity> ceiling;
    std::string_view from;
    auto lower = [&](std::optional<sensitivity> c, std::string_view name) {
        if (c && (!ceiling || *c < *ceiling)) {
            ceiling = c;
            from = name;
        }
    };
    lower(tool_ceiling, "tool");
    lower(grant.max_sensitivity, "grant");
    lower(m.max_sensitivity_egress, "manifest");
    if (!ceiling) return decision::allow();

    sensitivity const level = arguments.overall().sensitivity;
    if (level > *ceiling) {
        return decision::deny(deny_reason::egress_ceiling,
                              grant.ref.uri() + " arguments are " + std::string(to_string(level)) +
                                  ", above the " + std::string(from) + " ceiling " +
                                  std::string(to_string(*ceiling)));
    }
    return decision::allow();
}

decision taint_gate(tool_grant const& grant, tainted const& arguments) {
    // With protected_fields the operator has said which fields untrusted data may not select;
    // the rest is content a model may choose, so the whole-value rule would refuse too much.
    if (!grant.mutates || !grant.protected_fields.empty()) return decision::allow();
    if (arguments.overall().trust != trust::trusted) {
        return decision::deny(deny_reason::tainted_mutation,
                              grant.ref.uri() + " mutates, its arguments are untrusted and the grant declares "
                                                "no protected_fields");
    }
    return decision::allow();
}

decision protected_fields_gate(tool_grant const& grant, tainted const& arguments) {
    for (auto const& field : grant.protected_fields) {
        if (auto d = check_protected_field(grant, field, arguments); !d) return d;
    }
    return decision::allow();
}

decision refused_whatever_the_arguments(tool_grant const& grant, label const& whole) {
    tainted arguments;
    arguments.whole = whole;
    if (auto d = taint_gate(grant, arguments); !d) return d;
    // Every part of the value carries the whole label, so each protected field's label is that label.
    for (auto const& field : grant.protected_fields)
        if (auto d = check_field_label(grant, field, whole); !d) return d;
    return decision::allow();
}

decision destination_gate(egress_allowlist const& allowlist, destination const& dest) {
    if (!allowlist.permits(dest)) {
        return decision::deny(deny_reason::destination_not_allowed,
                              to_string(dest) + " is not in the egress allowlist");
    }
    return decision::allow();
}

decision evaluate(manifest const& m, egress_allowlist const& allowlist, tool_id const& tool,
                  tainted const& arguments, destination const& dest, std::optional<sensitivity> tool_ceiling) {
    // Grant and destination first: they are properties of the arrangement, so a call that could
    // never be made is recorded as such whatever the model put in its arguments. Integrity
    // (taint, protected fields) before confidentiality (the ceiling) is an arbitrary but fixed order.
    if (auto d = grant_gate(m, tool); !d) return d;
    tool_grant const& grant = *m.grant_for(tool);  // present: the grant gate just found it
    if (auto d = destination_gate(allowlist, dest); !d) return d;
    if (auto d = taint_gate(grant, arguments); !d) return d;
    if (auto d = protected_fields_gate(grant, arguments); !d) return d;
    return egress_ceiling_gate(m, grant, tool_ceiling, arguments);
}

}  // namespace airlock::core
