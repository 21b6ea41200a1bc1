#include "core/tool_id.hpp"

namespace airlock::core {

namespace {
constexpr std::string_view scheme = "tool://";

bool component_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}
}  // namespace

std::string tool_id_component_problem(std::string_view component, std::string_view what) {
    std::string w(what);
    if (component.empty()) return w + " is empty";
    for (std::size_t i = 0; i < component.size(); ++i) {
        char c = component[i];
        if (c == '/') return w + " contains '/'";
        if (c == '-') return w + " contains '-' (not allowed: '.' is shown as '-' in wire names)";
        if (!component_char(c)) {
            auto shown = (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f)
                             ? std::string("'") + c + "'"
                             : "byte " + std::to_string(static_cast<unsigned>(static_cast<unsigned char>(c)));
            return w + " contains " + shown + " at position " + std::to_string(i) +
                   " (allowed: ASCII letters, digits, '_' and '.')";
        }
    }
    // "__" separates server from tool in wire names; a component holding it would make them ambiguous.
    if (component.find("__") != std::string_view::npos) return w + " contains \"__\"";
    if (component.front() == '_' || component.back() == '_') return w + " starts or ends with '_'";
    return {};
}

result<tool_id> tool_id::make(std::string_view server, std::string_view name) {
    if (auto p = tool_id_component_problem(server, "server name"); !p.empty()) return make_error("invalid_tool_id", p);
    if (auto p = tool_id_component_problem(name, "tool name"); !p.empty()) return make_error("invalid_tool_id", p);
    return tool_id(std::string(server), std::string(name));
}

result<tool_id> tool_id::parse(std::string_view uri) {
    if (!uri.starts_with(scheme))
        return make_error("invalid_tool_id", "'" + std::string(uri) + "' does not start with tool://");
    auto rest = uri.substr(scheme.size());
    auto slash = rest.find('/');
    if (slash == std::string_view::npos)
        return make_error("invalid_tool_id", "'" + std::string(uri) + "' has no '/' between server and tool name");
    auto made = make(rest.substr(0, slash), rest.substr(slash + 1));
    if (!made) return make_error("invalid_tool_id", "'" + std::string(uri) + "': " + made.error().message);
    return made;
}

result<tool_id> tool_id::from_wire_name(std::string_view wire) {
    auto sep = wire.find("__");
    if (sep == std::string_view::npos)
        return make_error("invalid_tool_name", "'" + std::string(wire) + "' is not a server__tool name");
    std::string server(wire.substr(0, sep));
    std::string name(wire.substr(sep + 2));
    // '.' in a component is refused in wire form: wire names spell it '-'.
    for (auto* part : {&server, &name}) {
        if (part->find('.') != std::string::npos)
            return make_error("invalid_tool_name", "'" + std::string(wire) + "' contains '.' (wire names spell it '-')");
        for (auto& c : *part)
            if (c == '-') c = '.';
    }
    auto made = make(server, name);
    if (!made) return make_error("invalid_tool_name", "'" + std::string(wire) + "': " + made.error().message);
    return made;
}

std::string ref_spelling(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (name[i] == '_' && i + 1 < name.size() && name[i + 1] == '_') {
            // "__" would split the wire name again; "_." keeps both underscores' meaning visible.
            out += "_.";
            ++i;
            continue;
        }
        out += name[i] == '-' ? '.' : name[i];
    }
    return out;
}

std::optional<tool_id> meant_by_wire_spelling(std::string_view written) {
    if (tool_id::parse(written)) return std::nullopt;
    auto rest = written;
    bool const schemed = rest.starts_with(scheme);
    if (schemed) rest.remove_prefix(scheme.size());
    std::string_view server, name;
    if (auto slash = rest.find('/'); slash != std::string_view::npos) {
        // tool://fs/list-directory: the name as the upstream lists it, or as the wire shows it.
        if (!schemed) return std::nullopt;
        server = rest.substr(0, slash);
        name = rest.substr(slash + 1);
    } else if (auto sep = rest.find("__"); sep != std::string_view::npos) {
        // fs__list-directory (or tool://fs__list-directory): a wire name, copied from a client.
        server = rest.substr(0, sep);
        name = rest.substr(sep + 2);
    } else {
        return std::nullopt;
    }
    auto id = tool_id::make(ref_spelling(server), ref_spelling(name));
    if (!id) return std::nullopt;
    return *id;
}

std::string tool_id::uri() const { return std::string(scheme) + server_ + "/" + name_; }

std::string tool_id::wire_name() const {
    std::string out = server_ + "__" + name_;
    for (auto& c : out)
        if (c == '.') c = '-';
    return out;
}

}  // namespace airlock::core
