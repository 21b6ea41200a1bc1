#include "core/label.hpp"

#include <boost/json/array.hpp>

#include "core/canonical_json.hpp"

#include <algorithm>

namespace airlock::core {

std::string_view to_string(trust t) noexcept {
    switch (t) {
        case trust::trusted: return "trusted";
        case trust::untrusted: return "untrusted";
    }
    return "untrusted";
}

std::string_view to_string(sensitivity s) noexcept {
    switch (s) {
        case sensitivity::public_: return "public";
        case sensitivity::internal: return "internal";
        case sensitivity::confidential: return "confidential";
        case sensitivity::secret: return "secret";
    }
    return "secret";
}

// Byte-exact, like tool ids: "Internal" or " internal" is a typo in a manifest, and guessing what
// was meant would make a ceiling depend on the guess.
std::optional<trust> parse_trust(std::string_view s) noexcept {
    if (s == "trusted") return trust::trusted;
    if (s == "untrusted") return trust::untrusted;
    return std::nullopt;
}

std::optional<sensitivity> parse_sensitivity(std::string_view s) noexcept {
    if (s == "public") return sensitivity::public_;
    if (s == "internal") return sensitivity::internal;
    if (s == "confidential") return sensitivity::confidential;
    if (s == "secret") return sensitivity::secret;
    return std::nullopt;
}

label label::join(label const& other) const {
    label out;
    out.sources = sources;
    out.sources.insert(other.sources.begin(), other.sources.end());
    out.trust = std::max(trust, other.trust);
    out.sensitivity = std::max(sensitivity, other.sensitivity);
    return out;
}

namespace {

// `ancestor` is `pointer` itself or a whole-token prefix of it: "/ab" is not an ancestor of "/abc",
// and "" (the root) is the ancestor of everything.
bool is_ancestor_or_self(std::string_view ancestor, std::string_view pointer) noexcept {
    if (!pointer.starts_with(ancestor)) return false;
    return pointer.size() == ancestor.size() || pointer[ancestor.size()] == '/';
}

}  // namespace

label tainted::label_at(std::string_view pointer) const {
    // Longest ancestor wins. Two entries for the same pointer are joined rather than letting list
    // order decide which one counts: the worse label must never be the one that gets dropped.
    std::optional<std::size_t> best_length;
    label best;
    for (auto const& [path, l] : fields) {
        if (!is_ancestor_or_self(path, pointer)) continue;
        if (!best_length || path.size() > *best_length) {
            best_length = path.size();
            best = l;
        } else if (path.size() == *best_length) {
            best = best.join(l);
        }
    }
    return best_length ? best : whole;
}

label tainted::overall() const {
    // `whole` reaches every part not covered by a field label; only a label on the root itself
    // ("") covers all of them. Counting `whole` whenever some part might be uncovered errs towards
    // the worse label, which is the safe direction for a gate.
    bool root_labelled = std::any_of(fields.begin(), fields.end(), [](auto const& f) { return f.first.empty(); });
    std::optional<label> out;
    if (!root_labelled) out = whole;
    for (auto const& field : fields) out = out ? out->join(field.second) : field.second;
    return out.value_or(whole);
}

bool is_json_pointer(std::string_view pointer) noexcept {
    // The grammar is over Unicode characters, so the bytes must be well-formed UTF-8: a pointer
    // that is not text cannot be compared with the member names of a JSON document.
    if (!is_valid_utf8(pointer)) return false;
    if (pointer.empty()) return true;
    if (pointer.front() != '/') return false;
    for (std::size_t i = 0; i < pointer.size(); ++i) {
        if (pointer[i] != '~') continue;
        if (i + 1 >= pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1')) return false;
        ++i;
    }
    return true;
}

boost::json::object to_json(label const& l) {
    boost::json::array sources;
    for (auto const& s : l.sources) sources.push_back(boost::json::value(s));
    return {{"trust", to_string(l.trust)}, {"sensitivity", to_string(l.sensitivity)}, {"sources", std::move(sources)}};
}

result<label> label_from_json(boost::json::value const& v) {
    auto const* o = v.if_object();
    if (!o) return make_error("invalid_label", "a label must be an object");
    label l;
    if (auto const* t = o->if_contains("trust")) {
        auto parsed = t->is_string() ? parse_trust(t->get_string()) : std::nullopt;
        if (!parsed) return make_error("invalid_label", "label.trust must be trusted or untrusted");
        l.trust = *parsed;
    }
    if (auto const* s = o->if_contains("sensitivity")) {
        auto parsed = s->is_string() ? parse_sensitivity(s->get_string()) : std::nullopt;
        if (!parsed) return make_error("invalid_label", "label.sensitivity must be public, internal, confidential or secret");
        l.sensitivity = *parsed;
    }
    if (auto const* s = o->if_contains("sources")) {
        if (!s->is_array()) return make_error("invalid_label", "label.sources must be an array of strings");
        for (auto const& item : s->get_array()) {
            if (!item.is_string()) return make_error("invalid_label", "label.sources must be an array of strings");
            l.sources.insert(std::string(item.get_string()));
        }
    }
    return l;
}

}  // namespace airlock::core
