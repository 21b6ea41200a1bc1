#pragma once
// ToolId: the identity of one upstream tool, `tool://server/name`, and its wire name `server__name`.

#include "core/error.hpp"

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::core {

class tool_id {
public:
    // Parses exactly `tool://server/name`. Components: ASCII letters, digits, '_' and '.';
    // no '-', no "__", no leading or trailing '_'; the tool name has no '/'.
    static result<tool_id> parse(std::string_view uri);
    // Builds from components, with the same rules as parse.
    static result<tool_id> make(std::string_view server, std::string_view name);

    // Inverse of wire_name(): splits at the first "__" and shows '-' as '.'; byte-for-byte, so
    // "ledger__Read" and "ledger__read " never resolve to tool://ledger/read.
    static result<tool_id> from_wire_name(std::string_view wire);

    std::string const& server() const noexcept { return server_; }
    std::string const& name() const noexcept { return name_; }

    std::string uri() const;        // tool://server/name
    std::string wire_name() const;  // server__name, with '.' shown as '-'

    friend auto operator<=>(tool_id const&, tool_id const&) = default;

private:
    tool_id(std::string server, std::string name) : server_(std::move(server)), name_(std::move(name)) {}
    std::string server_;
    std::string name_;
};

// A tool name as a ref spells it: '-' (how wire names show '.', and what many upstreams use) read
// as '.', and "__" read as "_.". "list-directory" is "list.directory". No check that it is valid.
std::string ref_spelling(std::string_view name);

// The tool a ref written in a wire or upstream spelling means: "tool://fs/list-directory",
// "fs__list-directory" and "tool://fs__list-directory" all mean tool://fs/list.directory, and
// "tool://inner/everything__echo" means tool://inner/everything_.echo. nullopt when `written`
// parses as a tool id already, and when no such reading makes one.
std::optional<tool_id> meant_by_wire_spelling(std::string_view written);

// Why a component is unacceptable, or an empty string when it is fine. `what` names the component.
std::string tool_id_component_problem(std::string_view component, std::string_view what);

}  // namespace airlock::core
