#include "core/pin_review.hpp"

#include "core/canonical_json.hpp"
#include "core/utf8.hpp"
#include "core/visible_text.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <cstdio>
#include <set>

namespace airlock::core {

namespace json = boost::json;

namespace {

void append_scalar(std::string& out, json::value const& v) {
    // Strings and numbers as the canonical form writes them; a value it refuses still shows.
    std::string text;
    if (append_json(text, v)) out += text;
    else out += json::serialize(v);
}

void append_pretty(std::string& out, json::value const& v, std::size_t indent) {
    std::string const pad(indent + 2, ' ');
    if (auto const* o = v.if_object(); o && !o->empty()) {
        std::vector<json::key_value_pair const*> members;
        for (auto const& kv : *o) members.push_back(&kv);
        std::ranges::sort(members, [](auto* a, auto* b) { return a->key() < b->key(); });
        out += "{\n";
        for (std::size_t i = 0; i < members.size(); ++i) {
            out += pad;
            append_scalar(out, json::value(members[i]->key()));
            out += ": ";
            append_pretty(out, members[i]->value(), indent + 2);
            out += i + 1 < members.size() ? ",\n" : "\n";
        }
        out += std::string(indent, ' ') + "}";
    } else if (auto const* a = v.if_array(); a && !a->empty()) {
        out += "[\n";
        for (std::size_t i = 0; i < a->size(); ++i) {
            out += pad;
            append_pretty(out, (*a)[i], indent + 2);
            out += i + 1 < a->size() ? ",\n" : "\n";
        }
        out += std::string(indent, ' ') + "]";
    } else {
        append_scalar(out, v);
    }
}

std::vector<std::string> lines_of(std::string_view text) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (true) {
        auto j = text.find('\n', i);
        out.emplace_back(text.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
        if (j == std::string_view::npos) break;
        i = j + 1;
    }
    return out;
}

// A text field as lines to compare; absent is no lines at all, so a new description reads as added.
std::vector<std::string> field_lines(json::value const* v, bool text) {
    if (!v) return {};
    if (text && v->is_string()) return lines_of(with_hidden_shown(v->get_string()));
    return lines_of(with_hidden_shown(pretty_json(*v)));
}

// A reviewer reads what a tool is called and claims before how it is called.
std::vector<std::string> field_order(json::object const* a, json::object const* b) {
    std::vector<std::string> out{"name", "title", "description", "inputSchema", "outputSchema", "annotations"};
    std::set<std::string> rest;
    for (auto const* o : {a, b})
        if (o)
            for (auto const& kv : *o)
                if (std::ranges::find(out, kv.key()) == out.end()) rest.emplace(kv.key());
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}

}  // namespace

std::string pretty_json(json::value const& v) {
    std::string out;
    append_pretty(out, v, 0);
    return out;
}

std::vector<std::string> line_diff(std::vector<std::string> const& before, std::vector<std::string> const& after) {
    auto const n = before.size(), m = after.size();
    // Definitions are a few hundred lines at most; past this the table would be too large, and the
    // whole field is shown as replaced instead.
    constexpr std::size_t max_cells = 4'000'000;
    std::vector<std::string> out;
    if (n * m > max_cells) {
        for (auto const& l : before) out.push_back("- " + l);
        for (auto const& l : after) out.push_back("+ " + l);
        return out;
    }
    // lcs[i][j]: the longest common subsequence of before[i..] and after[j..].
    std::vector<std::vector<std::uint32_t>> lcs(n + 1, std::vector<std::uint32_t>(m + 1, 0));
    for (std::size_t i = n; i-- > 0;)
        for (std::size_t j = m; j-- > 0;)
            lcs[i][j] = before[i] == after[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && before[i] == after[j]) {
            out.push_back("  " + before[i++]);
            ++j;
        } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
            // What went comes before what replaced it, as in a unified diff.
            out.push_back("- " + before[i++]);
        } else {
            out.push_back("+ " + after[j++]);
        }
    }
    return out;
}

std::string with_hidden_shown(std::string_view text) {
    std::string out;
    bool after_visible = false;
    for (std::size_t i = 0; i < text.size();) {
        auto const start = i;
        long cp = decode_utf8(text, i);
        if (cp < 0) {
            out += "<not UTF-8>";
            ++i;
            after_visible = false;
            continue;
        }
        auto const c = static_cast<char32_t>(cp);
        if (c != U'\t' && is_hidden_character(c, after_visible)) {
            char buf[24];
            std::snprintf(buf, sizeof buf, "<U+%04lX>", static_cast<unsigned long>(cp));
            out += buf;
            after_visible = false;
        } else {
            out.append(text.substr(start, i - start));
            after_visible = c > U' ';
        }
    }
    return out;
}

std::string render_definition_diff(json::value const& pinned, json::value const& changed) {
    auto const* a = pinned.if_object();
    auto const* b = changed.if_object();
    std::string out;
    for (auto const& field : field_order(a, b)) {
        auto const* before = a ? a->if_contains(field) : nullptr;
        auto const* after = b ? b->if_contains(field) : nullptr;
        if ((!before && !after) || (before && after && *before == *after)) continue;
        bool const text = field == "title" || field == "description";
        out += field + ":" + (!before ? " (added)" : !after ? " (removed)" : "") + "\n";
        for (auto const& l : line_diff(field_lines(before, text), field_lines(after, text))) out += "  " + l + "\n";
    }
    return out;
}

namespace {

std::pair<std::string_view, std::string_view> split_key(std::string_view key) {
    auto slash = key.find('/');
    if (slash == std::string_view::npos) return {key, {}};
    return {key.substr(0, slash), key.substr(slash + 1)};
}

std::string joined(std::set<std::string> const& names) {
    std::string out;
    for (auto const& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "none" : out;
}

// A kept definition, or nothing when it was not kept (or cannot be read back).
std::optional<json::value> definition_of(std::string const& text) {
    if (text.empty()) return std::nullopt;
    auto v = parse_ijson(text);
    return v ? std::optional<json::value>(std::move(*v)) : std::nullopt;
}

void append_definition(std::string& out, std::optional<json::value> const& def, std::string_view not_kept) {
    if (!def) {
        out += "  (" + std::string(not_kept) + ")\n";
        return;
    }
    for (auto const& l : lines_of(with_hidden_shown(pretty_json(*def)))) out += "  " + l + "\n";
}

constexpr std::string_view pinned_not_kept =
    "not kept: pinned by an airlock that kept only digests; it is kept the next time the upstream lists it";
constexpr std::string_view pending_not_kept =
    "not kept: seen by an airlock that kept only digests; it is kept the next time the upstream lists it";

}  // namespace

result<pin> find_pin(std::vector<pin> const& pins, std::string_view server, std::string_view tool) {
    std::set<std::string> servers, tools;
    for (auto const& p : pins) {
        auto [s, t] = split_key(p.key);
        if (s == server && t == tool) return p;
        servers.emplace(s);
        if (s == server) tools.emplace(t);
    }
    if (!servers.contains(std::string(server)))
        return make_error("unknown_server", "no tool of server '" + std::string(server) +
                                                "' is pinned; servers with pinned tools: " + joined(servers));
    return make_error("unknown_tool", "server '" + std::string(server) + "' has no pinned tool '" + std::string(tool) +
                                          "'; its pinned tools: " + joined(tools));
}

json::object pin_json(pin const& p, bool full) {
    auto [server, tool] = split_key(p.key);
    json::object o{{"key", p.key},
                   {"server", server},
                   {"tool", tool},
                   {"status", p.pending ? "changed" : "pinned"},
                   {"pinned_digest", p.pinned},
                   {"pending_digest", p.pending ? json::value(*p.pending) : json::value(nullptr)}};
    if (!full) return o;
    auto pinned = definition_of(p.pinned_definition);
    auto pending = definition_of(p.pending_definition);
    o["pinned_definition"] = pinned ? *pinned : json::value(nullptr);
    o["pending_definition"] = pending ? *pending : json::value(nullptr);
    o["diff"] = pinned && pending ? json::value(render_definition_diff(*pinned, *pending)) : json::value(nullptr);
    return o;
}

std::string render_pin_review(pin const& p) {
    auto [server, tool] = split_key(p.key);
    auto pinned = definition_of(p.pinned_definition);
    std::string out;
    if (!p.pending) {
        out += p.key + ": pinned and unchanged; nothing awaits acceptance\n";
        out += "pinned definition (sha256 " + p.pinned + "):\n";
        append_definition(out, pinned, pinned_not_kept);
        return out;
    }
    auto pending = definition_of(p.pending_definition);
    out += p.key + ": CHANGED since it was pinned; withheld until accepted\n";
    out += "pinned definition (sha256 " + p.pinned + "):\n";
    append_definition(out, pinned, pinned_not_kept);
    out += "new definition (sha256 " + *p.pending + "):\n";
    append_definition(out, pending, pending_not_kept);
    out += "what changed (- pinned, + new):\n";
    auto diff = pinned && pending ? render_definition_diff(*pinned, *pending) : std::string();
    if (!pinned || !pending) out += "  (cannot be shown: a definition was not kept)\n";
    // Different digests with the same kept definitions: the pending one was kept by an earlier
    // sighting than the digest (the upstream changed twice between reads).
    else if (diff.empty()) out += "  (the kept definitions do not differ; the next catalogue read keeps the new one)\n";
    else out += diff;
    // With the digest, a definition the upstream changed again before the acceptance, which
    // nobody has read, is refused.
    out += "accept it: airlock pins accept " + std::string(server) + " " + std::string(tool) + " --digest " + *p.pending +
           "\n";
    return out;
}

}  // namespace airlock::core
