#include "core/manifest.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"
#include "core/strict_yaml.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

// The digest covers this JSON shape (see to_json). It mirrors the YAML, with every optional field
// present: absent optionals are null, defaults are written out, protected fields are sorted by path
// and allowed_sources sorted, `identity.constraints` is always a list.
//
// {"apiVersion": s, "kind": "Agent", "metadata": {"name": s, "version": s},
//  "spec": {"identity": null | {"role": s, "constraints": [s]},
//           "capabilities": {"provides": [s]},
//           "models": {"privileged": null | {"provider": s, "model": s, "max_tokens": null | n}},
//           "security": {"max_sensitivity_egress": null | s},
//           "tools": [{"ref": "tool://server/name", "mutates": b, "max_sensitivity": null | s,
//                      "description": s, "requires_approval": b, "idempotent": b,
//                      "protected_fields": [{"path": s, "require_trusted": b,
//                                            "allowed_sources": [s], "max_sensitivity": null | s}],
//                      "arguments": null | {...}, "journal"?: "hash" | "omit"}],
//           "execution": null | {"kind": "completion" | "tool-calling", "max_turns": n},
//           "budgets": {"max_steps": null | n, "max_effects": null | n, "max_tokens": null | n,
//                       "max_wallclock_secs": null | n}}}
//
// "journal" is written only when it is not "full" (spec.security.journal is folded into each grant),
// so a manifest written before journal privacy existed keeps its digest.
//
// Tools keep their written order: it is the order a model is offered them in, which can change
// what the model does, so reordering them is a change a reviewer should see in the digest.

namespace airlock::core {

namespace {

constexpr std::string_view api_agentplane = "agentplane.hupe1980.github.io/v1alpha1";
constexpr std::string_view api_airlock = "airlock/v1";
constexpr std::string_view tool_scheme = "tool://";

// An `arguments` schema is the only place a YAML alias could be expanded recursively; a bound keeps
// a few hundred bytes of aliases from becoming gigabytes of JSON.
constexpr std::size_t max_argument_nodes = yaml::max_json_nodes;

using yaml::all_digits;
using yaml::child_path;
using yaml::classify;
using yaml::describe;
using yaml::in_quotes;
using yaml::index_path;
using yaml::is_blank;
using yaml::scalar_kind;

// The manifest's own typed values, on top of the strict reader every YAML document in airlock uses.
class reader : public yaml::reader {
public:
    reader() : yaml::reader({.document = "the manifest", .utf8_strings = true}) {}

    std::optional<std::uint64_t> count(YAML::Node const& n, std::string const& path,
                                       std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
        if (!n.IsScalar() || classify(n) != scalar_kind::integer) {
            fail("wrong_type", path + " must be an integer, not " + describe(n));
            return std::nullopt;
        }
        std::string_view s = n.Scalar();
        if (s.starts_with('-')) {
            fail("invalid_value", path + " must not be negative (" + std::string(s) + ")");
            return std::nullopt;
        }
        if (s.starts_with('+')) s.remove_prefix(1);
        if (!all_digits(s, 10)) {
            fail("invalid_value", path + " must be written in decimal (" + n.Scalar() + ")");
            return std::nullopt;
        }
        std::uint64_t v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc{} || end != s.data() + s.size() || v > max) {
            fail("invalid_value", path + " is too large (at most " + std::to_string(max) + ")");
            return std::nullopt;
        }
        return v;
    }

    // A count that must be at least 1: 0 would make the thing it limits impossible, which is never
    // what a reviewer meant; leaving the field out is how to say "no limit".
    std::optional<std::uint64_t> positive(YAML::Node const& n, std::string const& path, std::string const& code,
                                          std::string const& why,
                                          std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
        auto v = count(n, path, max);
        if (v && *v == 0) {
            fail(code, path + " is 0, which " + why);
            return std::nullopt;
        }
        return v;
    }

    std::optional<core::sensitivity> sensitivity(YAML::Node const& n, std::string const& path) {
        auto s = string(n, path);
        if (!s) return std::nullopt;
        auto level = parse_sensitivity(*s);
        if (!level)
            fail("invalid_value",
                 path + " is " + in_quotes(*s) + "; expected public, internal, confidential or secret");
        return level;
    }

    // A sequence of non-blank strings, none repeated.
    std::optional<std::vector<std::string>> names(YAML::Node const& n, std::string const& path) {
        if (!sequence(n, path)) return std::nullopt;
        std::vector<std::string> out;
        bool ok = true;
        for (std::size_t i = 0; i < n.size(); ++i) {
            auto item_path = index_path(path, i);
            auto s = text(n[i], item_path);
            if (!s) {
                ok = false;
                continue;
            }
            if (auto at = std::find(out.begin(), out.end(), *s); at != out.end()) {
                fail("duplicate_entry", item_path + " repeats " + in_quotes(*s) + " from " +
                                            index_path(path, static_cast<std::size_t>(at - out.begin())));
                ok = false;
                continue;
            }
            out.push_back(std::move(*s));
        }
        if (!ok) return std::nullopt;
        return out;
    }
};

// ── the manifest's sections ──────────────────────────────────────────────────────────────────

// Where a section was written, for the checks that need more than one section to decide.
struct source_notes {
    bool constraints_is_list = false;
    bool tools_all_parsed = true;
    bool models_failed = false;    // spec.models was written but refused
    bool provides_failed = false;  // spec.capabilities was written but refused
    std::vector<std::size_t> grant_index;  // m.tools[i] was written at spec.tools[grant_index[i]]
    journal_keep journal = journal_keep::full;  // spec.security.journal: each grant's default
};

std::optional<journal_keep> read_journal_keep(reader& r, YAML::Node const& n, std::string const& path) {
    auto s = r.string(n, path);
    if (!s) return std::nullopt;
    if (*s == "full") return journal_keep::full;
    if (*s == "hash") return journal_keep::hash;
    if (*s == "omit") return journal_keep::omit;
    r.fail("invalid_value", path + " is " + in_quotes(*s) + "; it must be full, hash or omit");
    return std::nullopt;
}

std::optional<protected_field> read_protected_field(reader& r, YAML::Node const& n, std::string const& path) {
    if (!r.mapping(n, path, {"path", "require_trusted", "allowed_sources", "max_sensitivity"})) return std::nullopt;
    std::size_t before = r.problems.size();
    protected_field f;
    if (auto p = n["path"]; !p) {
        r.fail("missing_field", path + ".path is required");
    } else if (auto s = r.string(p, path + ".path")) {
        if (!is_json_pointer(*s)) {
            std::string hint = (!s->empty() && s->front() != '/') ? " (write " + in_quotes("/" + *s) + ")" : "";
            r.fail("invalid_pointer", path + ".path " + in_quotes(*s) +
                                          " is not an absolute RFC 6901 JSON pointer" + hint);
        } else {
            f.path = *s;
        }
    }
    if (auto v = n["require_trusted"]) f.require_trusted = r.boolean(v, path + ".require_trusted").value_or(false);
    bool sources_written = false;
    if (auto v = n["allowed_sources"]) {
        sources_written = true;
        if (auto list = r.names(v, path + ".allowed_sources")) {
            // An empty list could never be satisfied (a value needs a source, and all of them listed):
            // the field would refuse every call while reading like a permission.
            if (list->empty())
                r.fail("empty_field", path + ".allowed_sources lists no source, so no value could ever satisfy it");
            f.allowed_sources = std::move(*list);
            std::sort(f.allowed_sources.begin(), f.allowed_sources.end());
        }
    }
    if (auto v = n["max_sensitivity"]) f.max_sensitivity = r.sensitivity(v, path + ".max_sensitivity");
    if (r.problems.size() != before) return std::nullopt;

    if (f.require_trusted && sources_written) {
        // allowed_sources admits untrusted values from the listed sources; require_trusted admits no
        // untrusted value at all. Together one of them is dead, and which one was meant is a guess.
        r.fail("conflicting_constraints", path + " sets both require_trusted and allowed_sources; choose one: "
                                                 "require_trusted admits only trusted values, allowed_sources "
                                                 "admits values whose every source is listed");
        return std::nullopt;
    }
    if (!f.require_trusted && f.allowed_sources.empty() && !f.max_sensitivity) {
        r.fail("unconstrained_field", path + " protects nothing: set require_trusted, allowed_sources or "
                                             "max_sensitivity");
        return std::nullopt;
    }
    return f;
}

// A grant's protected_fields, sorted by path; a path written twice is refused naming both places.
std::vector<protected_field> read_protected_fields(reader& r, YAML::Node const& v, std::string const& fields_path) {
    std::vector<protected_field> fields;
    if (!v) return fields;
    if (r.sequence(v, fields_path)) {
        std::vector<std::size_t> written_at;
        for (std::size_t i = 0; i < v.size(); ++i) {
            auto field_path = index_path(fields_path, i);
            auto f = read_protected_field(r, v[i], field_path);
            if (!f) continue;
            for (std::size_t k = 0; k < fields.size(); ++k) {
                if (fields[k].path == f->path) {
                    r.fail("duplicate_protected_path", field_path + ".path " + in_quotes(f->path) +
                                                           " is already protected by " +
                                                           index_path(fields_path, written_at[k]));
                    f.reset();
                    break;
                }
            }
            if (!f) continue;
            fields.push_back(std::move(*f));
            written_at.push_back(i);
        }
    }
    std::sort(fields.begin(), fields.end(), [](auto const& a, auto const& b) { return a.path < b.path; });
    return fields;
}

// `ref` is set whenever the ref itself parsed, even if another field of the grant did not, so a
// second grant of the same tool is reported either way.
std::optional<tool_grant> read_grant(reader& r, YAML::Node const& n, std::string const& path,
                                     std::optional<tool_id>& ref, journal_keep journal) {
    if (!r.mapping(n, path, {"ref", "mutates", "max_sensitivity", "description", "requires_approval", "idempotent",
                             "protected_fields", "arguments", "journal"}))
        return std::nullopt;
    std::size_t before = r.problems.size();

    if (auto v = n["ref"]; !v) {
        r.fail("missing_field", path + ".ref is required");
    } else if (auto s = r.string(v, path + ".ref")) {
        auto parsed = tool_id::parse(*s);
        if (parsed)
            ref = *parsed;
        else if (auto meant = meant_by_wire_spelling(*s))
            // Copied from a client's tools/list or from the upstream's own name: the fix is
            // certain, so say it rather than the grammar it breaks.
            r.fail("invalid_tool_ref", path + ".ref " + in_quotes(*s) +
                                           " is the wire spelling of a tool, which a ref cannot hold (a ref writes "
                                           "'-' as '.', \"__\" as \"_.\" and tool://server/name); write " +
                                           meant->uri());
        else
            r.fail("invalid_tool_ref", path + ".ref is not an exact tool://server/name: " + parsed.error().message);
    }

    bool mutates = true;
    if (auto v = n["mutates"]) mutates = r.boolean(v, path + ".mutates").value_or(true);
    std::optional<sensitivity> ceiling;
    if (auto v = n["max_sensitivity"]) ceiling = r.sensitivity(v, path + ".max_sensitivity");
    std::string description;
    if (auto v = n["description"]) description = r.string(v, path + ".description").value_or("");
    bool requires_approval = false;
    if (auto v = n["requires_approval"]) requires_approval = r.boolean(v, path + ".requires_approval").value_or(false);
    bool idempotent = false;
    if (auto v = n["idempotent"]) idempotent = r.boolean(v, path + ".idempotent").value_or(false);

    auto fields = read_protected_fields(r, n["protected_fields"], path + ".protected_fields");

    std::optional<boost::json::value> arguments;
    if (auto v = n["arguments"]) {
        if (!v.IsMap()) {
            r.fail("wrong_type", path + ".arguments must be a mapping (a JSON Schema), not " + describe(v));
        } else {
            std::size_t budget = max_argument_nodes;
            arguments = r.json(v, path + ".arguments", budget);
        }
    }

    if (auto v = n["journal"]) journal = read_journal_keep(r, v, path + ".journal").value_or(journal);

    if (!ref || r.problems.size() != before) return std::nullopt;
    return tool_grant{.ref = *ref,
                      .mutates = mutates,
                      .max_sensitivity = ceiling,
                      .description = std::move(description),
                      .requires_approval = requires_approval,
                      .idempotent = idempotent,
                      .protected_fields = std::move(fields),
                      .arguments = std::move(arguments),
                      .journal = journal};
}

void read_metadata(reader& r, YAML::Node const& n, manifest& m) {
    if (!n) {
        r.fail("missing_field", "metadata is required");
        return;
    }
    if (!r.mapping(n, "metadata", {"name", "version"})) return;
    for (auto [key, target] : {std::pair{"name", &m.name}, std::pair{"version", &m.version}}) {
        auto path = std::string("metadata.") + key;
        if (auto v = n[key]; !v)
            r.fail("missing_field", path + " is required");
        else if (auto s = r.text(v, path))
            *target = std::move(*s);
    }
}

void read_identity(reader& r, YAML::Node const& n, manifest& m, source_notes& notes) {
    if (!r.mapping(n, "spec.identity", {"role", "constraints"})) return;
    identity_spec id;
    // A present identity is the model's instructions; one without a role is an agent told nothing
    // about what it is for, which is a mistake rather than a choice.
    if (auto v = n["role"]; !v)
        r.fail("empty_field", "spec.identity.role is required when spec.identity is present");
    else
        id.role = r.text(v, "spec.identity.role").value_or("");
    if (auto v = n["constraints"]) {
        // The seed writes constraints as one string; a list of them reads as well. Both normalise
        // to a list, so the two spellings of one constraint digest the same.
        if (v.IsSequence()) {
            notes.constraints_is_list = true;
            for (std::size_t i = 0; i < v.size(); ++i)
                if (auto s = r.string(v[i], index_path("spec.identity.constraints", i))) id.constraints.push_back(*s);
        } else if (auto s = r.string(v, "spec.identity.constraints")) {
            id.constraints.push_back(*s);
        }
    }
    m.identity = std::move(id);
}

void read_models(reader& r, YAML::Node const& n, manifest& m) {
    if (!r.mapping(n, "spec.models", {"privileged"})) return;
    auto p = n["privileged"];
    if (!p) return;
    if (!r.mapping(p, "spec.models.privileged", {"provider", "model", "max_tokens"})) return;
    model_spec spec;
    for (auto [key, target] : {std::pair{"provider", &spec.provider}, std::pair{"model", &spec.model}}) {
        auto path = std::string("spec.models.privileged.") + key;
        if (auto v = p[key]; !v)
            r.fail("missing_field", path + " is required");
        else
            *target = r.text(v, path).value_or("");
    }
    if (auto v = p["max_tokens"])
        spec.max_tokens = r.positive(v, "spec.models.privileged.max_tokens", "zero_limit",
                                     "would leave the model no room to answer");
    m.privileged_model = std::move(spec);
}

void read_execution(reader& r, YAML::Node const& n, manifest& m) {
    if (!r.mapping(n, "spec.execution", {"kind", "max_turns"})) return;
    execution_spec e;
    // No default kind: a tool-calling agent is held to rules a completion is not, and which one an
    // agent is should be read off the manifest, not inferred from an omission.
    if (auto v = n["kind"]; !v) {
        r.fail("missing_field", "spec.execution.kind is required (completion or tool-calling)");
    } else if (auto s = r.string(v, "spec.execution.kind")) {
        if (*s == "completion")
            e.kind = execution_kind::completion;
        else if (*s == "tool-calling")
            e.kind = execution_kind::tool_calling;
        else
            r.fail("invalid_value",
                   "spec.execution.kind is " + in_quotes(*s) + "; expected completion or tool-calling");
    }
    if (auto v = n["max_turns"]) {
        if (auto t = r.positive(v, "spec.execution.max_turns", "zero_limit",
                                "would end every run before its first turn", std::numeric_limits<std::uint32_t>::max()))
            e.max_turns = static_cast<std::uint32_t>(*t);
    }
    m.execution = e;
}

void read_budgets(reader& r, YAML::Node const& n, manifest& m) {
    // Required so that "unbounded" is always something a person wrote (`budgets: {}`), never
    // something they forgot.
    if (!n) {
        r.fail("missing_field", "spec.budgets is required (write `budgets: {}` for deliberately unbounded)");
        return;
    }
    if (!r.mapping(n, "spec.budgets", {"max_steps", "max_effects", "max_tokens", "max_wallclock_secs"})) return;
    for (auto [key, target] : {std::pair{"max_steps", &m.limits.max_steps},
                               std::pair{"max_effects", &m.limits.max_effects},
                               std::pair{"max_tokens", &m.limits.max_tokens},
                               std::pair{"max_wallclock_secs", &m.limits.max_wallclock_secs}}) {
        if (auto v = n[key])
            *target = r.positive(v, std::string("spec.budgets.") + key, "zero_budget",
                                 "would refuse every run; leave the field out for no ceiling");
    }
}

void read_tools(reader& r, YAML::Node const& n, manifest& m, source_notes& notes) {
    if (!r.sequence(n, "spec.tools")) {
        notes.tools_all_parsed = false;
        return;
    }
    std::vector<std::pair<tool_id, std::size_t>> refs;  // every ref that parsed, and where
    for (std::size_t i = 0; i < n.size(); ++i) {
        auto path = index_path("spec.tools", i);
        std::optional<tool_id> ref;
        auto g = read_grant(r, n[i], path, ref, notes.journal);
        if (ref) {
            auto earlier = std::find_if(refs.begin(), refs.end(), [&](auto const& e) { return e.first == *ref; });
            if (earlier != refs.end()) {
                // Two grants of one tool may disagree (mutates, protected fields); which one a gate
                // applied would depend on lookup order.
                r.fail("duplicate_grant", path + ".ref grants " + ref->uri() + " again; it is already granted by " +
                                              index_path("spec.tools", earlier->second));
                continue;
            }
            refs.emplace_back(*ref, i);
        }
        if (!g) {
            notes.tools_all_parsed = false;
            continue;
        }
        m.tools.push_back(std::move(*g));
        notes.grant_index.push_back(i);
    }
}

void read_spec(reader& r, YAML::Node const& n, manifest& m, source_notes& notes) {
    if (!n) {
        r.fail("missing_field", "spec is required");
        return;
    }
    if (!r.mapping(n, "spec", {"identity", "capabilities", "models", "security", "tools", "execution", "budgets"}))
        return;
    if (auto v = n["identity"]) read_identity(r, v, m, notes);
    if (auto v = n["capabilities"]) {
        std::size_t before = r.problems.size();
        if (r.mapping(v, "spec.capabilities", {"provides"})) {
            if (auto p = v["provides"])
                m.provides = r.names(p, "spec.capabilities.provides").value_or(std::vector<std::string>{});
        }
        notes.provides_failed = r.problems.size() != before;
    }
    if (auto v = n["models"]) {
        std::size_t before = r.problems.size();
        read_models(r, v, m);
        notes.models_failed = r.problems.size() != before;
    }
    if (auto v = n["security"]; v && r.mapping(v, "spec.security", {"max_sensitivity_egress", "journal"})) {
        if (auto s = v["max_sensitivity_egress"])
            m.max_sensitivity_egress = r.sensitivity(s, "spec.security.max_sensitivity_egress");
        if (auto j = v["journal"]) notes.journal = read_journal_keep(r, j, "spec.security.journal").value_or(notes.journal);
    }
    if (auto v = n["tools"]) read_tools(r, v, m, notes);
    if (auto v = n["execution"]) read_execution(r, v, m);
    read_budgets(r, n["budgets"], m);
}

// ── rules that need more than one section ────────────────────────────────────────────────────

// An agent run replays and resumes from its journal, which needs the values; journal privacy is
// for the manifests of gateway principals, whose calls nobody replays.
void check_replayable(reader& r, manifest const& m, source_notes const& notes) {
    if (!m.execution && !m.privileged_model) return;
    for (std::size_t k = 0; k < m.tools.size(); ++k) {
        if (m.tools[k].journal == journal_keep::full) continue;
        r.fail("invalid_value", index_path("spec.tools", notes.grant_index[k]) + ".journal is " +
                                    std::string(to_string(m.tools[k].journal)) +
                                    ", but this manifest is an agent's (it has a model or execution): an agent run "
                                    "replays and resumes from the arguments and outputs its journal keeps, so its grants keep them "
                                    "in full; hash and omit are for gateway principals' manifests");
    }
}

void check_tool_calling(reader& r, manifest const& m, source_notes const& notes) {
    if (!m.execution || m.execution->kind != execution_kind::tool_calling) return;
    for (std::size_t k = 0; k < m.tools.size(); ++k) {
        auto const& g = m.tools[k];
        auto path = index_path("spec.tools", notes.grant_index[k]);
        // The description is all a model is told about the tool; without it the model guesses.
        if (is_blank(g.description))
            r.fail("missing_description", path + ".description is required: a tool-calling agent's model is told "
                                                 "what " + g.ref.uri() + " does only by its description");
        if (!g.mutates) continue;
        if (g.protected_fields.empty()) {
            r.fail("unreachable_grant",
                   path + ".protected_fields is missing: " + g.ref.uri() + " mutates, and on a tool-calling agent "
                   "its arguments come from the model and are untrusted, so the taint gate would refuse every call. "
                   "Declare the fields the model may not choose (require_trusted or allowed_sources), or set "
                   "mutates: false if the tool changes nothing");
            continue;
        }
        bool gates_trust = std::any_of(g.protected_fields.begin(), g.protected_fields.end(),
                                       [](auto const& f) { return f.require_trusted || !f.allowed_sources.empty(); });
        if (!gates_trust)
            r.fail("ungated_grant",
                   path + ".protected_fields carry only sensitivity ceilings: " + g.ref.uri() + " mutates, and "
                   "declaring protected fields replaces the whole-value taint gate, so model-chosen values would "
                   "reach it unchecked. At least one field must say whose values it accepts (require_trusted or "
                   "allowed_sources)");
    }
}

void check_execution(reader& r, manifest const& m, source_notes const& notes) {
    if (!m.execution) return;
    if (!m.privileged_model && !notes.models_failed)
        r.fail("execution_without_model",
               "spec.models.privileged is required when spec.execution is set: an agent that runs needs a model");
    if (m.provides.empty() && !notes.provides_failed)
        r.fail("execution_without_capability", "spec.capabilities.provides must name at least one capability when "
                                               "spec.execution is set: nothing could ask this agent to run");
}

bool tool_ref_char(char c) noexcept {
    // Wider than a component, so that a malformed mention ("tool://my-server/x") is quoted whole in
    // the refusal instead of being cut at the first character tool_id would refuse.
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-' || c == '/';
}

// The model reads its role and constraints; a tool named there that it cannot call is either a
// stale manifest or a reviewer misled about what the agent can reach.
void check_text_mentions(reader& r, manifest const& m, std::string_view text, std::string const& path) {
    auto granted = [&m](std::string_view uri) {
        return std::any_of(m.tools.begin(), m.tools.end(), [uri](auto const& g) { return g.ref.uri() == uri; });
    };
    std::vector<std::string> reported;
    for (auto at = text.find(tool_scheme); at != std::string_view::npos; at = text.find(tool_scheme, at + 1)) {
        auto end = at + tool_scheme.size();
        while (end < text.size() && tool_ref_char(text[end])) ++end;
        auto mention = text.substr(at, end - at);
        // A sentence may end right after a reference ("... with tool://ledger/read."): the full run of
        // characters is tried first, then the same without its trailing full stops.
        auto trimmed = mention;
        while (trimmed.ends_with('.')) trimmed.remove_suffix(1);
        if (granted(mention) || granted(trimmed)) continue;
        if (std::find(reported.begin(), reported.end(), trimmed) != reported.end()) continue;
        reported.emplace_back(trimmed);
        r.fail("ungranted_tool_reference",
               path + " mentions " + std::string(trimmed) + ", which spec.tools does not grant");
    }
}

void check_mentions(reader& r, manifest const& m, source_notes const& notes) {
    // With a grant that failed to parse, every mention of it would be reported a second time.
    if (!m.identity || !notes.tools_all_parsed) return;
    check_text_mentions(r, m, m.identity->role, "spec.identity.role");
    for (std::size_t i = 0; i < m.identity->constraints.size(); ++i) {
        auto path = notes.constraints_is_list ? index_path("spec.identity.constraints", i)
                                              : std::string("spec.identity.constraints");
        check_text_mentions(r, m, m.identity->constraints[i], path);
    }
}

std::pair<manifest, std::vector<error>> read_manifest(std::string_view yaml_text) {
    reader r;
    manifest m;
    yaml::documents docs;
    if (auto nul = yaml::nul_byte(yaml_text)) {
        r.fail("invalid_yaml", "the manifest holds " + *nul);
        return {std::move(m), std::move(r.problems)};
    }
    try {
        docs = yaml::read_documents(std::string(yaml_text));
    } catch (YAML::ParserException const& e) {
        r.fail("invalid_yaml", "YAML syntax error at line " + std::to_string(e.mark.line + 1) + ", column " +
                                   std::to_string(e.mark.column + 1) + ": " + e.msg);
        return {std::move(m), std::move(r.problems)};
    } catch (YAML::Exception const& e) {
        r.fail("invalid_yaml", std::string("YAML cannot be read: ") + e.what());
        return {std::move(m), std::move(r.problems)};
    }
    if (docs.count != 1) {
        r.fail("invalid_yaml", docs.count == 0 ? std::string("the manifest is empty")
                                               : "the text holds " + std::to_string(docs.count) +
                                                     " YAML documents; a manifest is exactly one");
        return {std::move(m), std::move(r.problems)};
    }
    auto const root = docs.first;
    if (!r.mapping(root, "", {"apiVersion", "kind", "metadata", "spec"})) return {std::move(m), std::move(r.problems)};

    if (auto v = root["apiVersion"]; !v) {
        r.fail("missing_field", "apiVersion is required");
    } else if (auto s = r.string(v, "apiVersion")) {
        if (*s != api_airlock && *s != api_agentplane)
            r.fail("unsupported_api_version", "apiVersion is " + in_quotes(*s) + "; expected " +
                                                  in_quotes(api_airlock) + " or " + in_quotes(api_agentplane));
        else
            m.api_version = *s;
    }
    if (auto v = root["kind"]; !v) {
        r.fail("missing_field", "kind is required");
    } else if (auto s = r.string(v, "kind"); s && *s != "Agent") {
        r.fail("unsupported_kind", "kind is " + in_quotes(*s) + "; expected \"Agent\"");
    }
    read_metadata(r, root["metadata"], m);

    source_notes notes;
    read_spec(r, root["spec"], m, notes);
    check_tool_calling(r, m, notes);
    check_replayable(r, m, notes);
    check_execution(r, m, notes);
    check_mentions(r, m, notes);

    if (r.problems.empty()) {
        auto text = canonical(to_json(m));
        if (!text)
            r.fail(text.error().code, "the manifest has no canonical JSON form: " + text.error().message);
        else
            m.digest = sha256_hex(*text);
    }
    return {std::move(m), std::move(r.problems)};
}

boost::json::value optional_json(std::optional<sensitivity> s) {
    return s ? boost::json::value(to_string(*s)) : boost::json::value(nullptr);
}

boost::json::value optional_json(std::optional<std::uint64_t> n) {
    return n ? boost::json::value(*n) : boost::json::value(nullptr);
}

boost::json::array string_array(std::vector<std::string> const& items) {
    boost::json::array out;
    for (auto const& s : items) out.emplace_back(s);
    return out;
}

}  // namespace

tool_grant const* manifest::grant_for(tool_id const& tool) const noexcept {
    for (auto const& g : tools)
        if (g.ref == tool) return &g;
    return nullptr;
}

result<manifest> parse_manifest(std::string_view yaml_text) {
    auto [m, problems] = read_manifest(yaml_text);
    if (!problems.empty()) return problems.front();
    return std::move(m);
}

std::vector<error> manifest_problems(std::string_view yaml_text) { return read_manifest(yaml_text).second; }

std::string_view to_string(journal_keep k) noexcept {
    switch (k) {
        case journal_keep::hash: return "hash";
        case journal_keep::omit: return "omit";
        case journal_keep::full: break;
    }
    return "full";
}

boost::json::value to_json(manifest const& m) {
    boost::json::object metadata{{"name", m.name}, {"version", m.version}};

    boost::json::value identity = nullptr;
    if (m.identity)
        identity = boost::json::object{{"role", m.identity->role},
                                       {"constraints", string_array(m.identity->constraints)}};

    boost::json::value privileged = nullptr;
    if (m.privileged_model)
        privileged = boost::json::object{{"provider", m.privileged_model->provider},
                                         {"model", m.privileged_model->model},
                                         {"max_tokens", optional_json(m.privileged_model->max_tokens)}};

    boost::json::array tools;
    for (auto const& g : m.tools) {
        // Sorted here as well as at parse time, so a manifest assembled in code digests the same as
        // its YAML spelling.
        auto fields_sorted = g.protected_fields;
        std::sort(fields_sorted.begin(), fields_sorted.end(),
                  [](auto const& a, auto const& b) { return a.path < b.path; });
        boost::json::array fields;
        for (auto const& f : fields_sorted) {
            auto sources = f.allowed_sources;
            std::sort(sources.begin(), sources.end());
            fields.push_back(boost::json::object{{"path", f.path},
                                                 {"require_trusted", f.require_trusted},
                                                 {"allowed_sources", string_array(sources)},
                                                 {"max_sensitivity", optional_json(f.max_sensitivity)}});
        }
        boost::json::object tool{{"ref", g.ref.uri()},
                                 {"mutates", g.mutates},
                                 {"max_sensitivity", optional_json(g.max_sensitivity)},
                                 {"description", g.description},
                                 {"requires_approval", g.requires_approval},
                                 {"idempotent", g.idempotent},
                                 {"protected_fields", std::move(fields)},
                                 {"arguments", g.arguments ? *g.arguments : boost::json::value(nullptr)}};
        if (g.journal != journal_keep::full) tool["journal"] = to_string(g.journal);
        tools.push_back(std::move(tool));
    }

    boost::json::value execution = nullptr;
    if (m.execution)
        execution = boost::json::object{
            {"kind", m.execution->kind == execution_kind::tool_calling ? "tool-calling" : "completion"},
            {"max_turns", static_cast<std::uint64_t>(m.execution->max_turns)}};

    boost::json::object budgets{{"max_steps", optional_json(m.limits.max_steps)},
                                {"max_effects", optional_json(m.limits.max_effects)},
                                {"max_tokens", optional_json(m.limits.max_tokens)},
                                {"max_wallclock_secs", optional_json(m.limits.max_wallclock_secs)}};

    boost::json::object spec{{"identity", std::move(identity)},
                             {"capabilities", boost::json::object{{"provides", string_array(m.provides)}}},
                             {"models", boost::json::object{{"privileged", std::move(privileged)}}},
                             {"security", boost::json::object{{"max_sensitivity_egress",
                                                               optional_json(m.max_sensitivity_egress)}}},
                             {"tools", std::move(tools)},
                             {"execution", std::move(execution)},
                             {"budgets", std::move(budgets)}};

    return boost::json::object{{"apiVersion", m.api_version},
                               {"kind", "Agent"},
                               {"metadata", std::move(metadata)},
                               {"spec", std::move(spec)}};
}

}  // namespace airlock::core
