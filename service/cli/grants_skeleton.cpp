#include "service/cli/grants_skeleton.hpp"

#include "core/visible_text.hpp"

namespace airlock::service {

namespace {

constexpr std::size_t comment_limit = 100;  // bytes of a description shown above its grant

// What of an upstream's description can sit in a YAML comment: its first line, without the
// characters a reader cannot see, cut short on a character boundary. The upstream chose the text;
// it must not be able to end the comment and write a grant of its own.
std::string comment_text(std::string_view description) {
    core::hidden_characters removed;
    auto visible = core::without_hidden_characters(description, removed);
    std::string text = visible ? std::move(*visible) : std::string(description);
    // U+2028 and U+2029 end a line for some YAML readers.
    for (std::string_view sep : {"\xE2\x80\xA8", "\xE2\x80\xA9"})
        for (auto at = text.find(sep); at != std::string::npos; at = text.find(sep)) text.replace(at, sep.size(), " ");
    text = text.substr(0, text.find_first_of("\r\n"));
    for (auto& c : text)
        if (c == '\t') c = ' ';
    if (text.size() > comment_limit) {
        auto cut = comment_limit;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
        text = text.substr(0, cut) + "...";
    }
    auto end = text.find_last_not_of(' ');
    return end == std::string::npos ? std::string() : text.substr(0, end + 1);
}

constexpr char header[] =
    "# Keep the grants this principal should have and delete the rest: a tool that is not granted\n"
    "# is neither listed nor callable. `mutates: false` is written where the tool's annotations say\n"
    "# it is read-only (readOnlyHint: true). A grant without it mutates, and an untrusted principal\n"
    "# can call it only through protected_fields that accept its own source, for example\n"
    "#   protected_fields: [{path: /path, allowed_sources: [\"principal:NAME\"]}]\n"
    "# (docs/configuration.md, \"Grants\"). Check the result with `airlock check`.\n";

}  // namespace

std::string ref_line(mcp::upstream_tool const& t) { return "ref: " + t.id.uri(); }

std::string grants_skeleton(std::string_view server, std::vector<mcp::upstream_tool> const& tools, bool read_only) {
    std::string out = "# The tools upstream " + std::string(server) + " offers, as `airlock grants` listed them" +
                      (read_only ? " (read-only ones only)" : "") + ".\n" + header;
    out += "apiVersion: airlock/v1\nkind: Agent\n";
    // The upstream's name is a tool_id component (letters, digits, '_' and '.'): plain YAML as it is.
    out += "metadata: { name: " + std::string(server) + "-grants, version: \"1\" }\n";
    out += "spec:\n";
    std::string grants;
    for (auto const& t : tools) {
        bool const reads = !mcp::may_mutate(t.spec);
        if (read_only && !reads) continue;
        if (auto text = comment_text(t.spec.description.value_or("")); !text.empty()) grants += "    # " + text + "\n";
        grants += "    - " + ref_line(t) + "\n";
        if (reads) grants += "      mutates: false\n";
    }
    out += grants.empty() ? "  tools: []\n" : "  tools:\n" + grants;
    out += "  budgets: {}\n";
    return out;
}

}  // namespace airlock::service
