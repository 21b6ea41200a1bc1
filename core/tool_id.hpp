#pragma once
// ToolId: the identity of one upstream tool, `tool://server/name`, and its wire name `server__name`.

#include "core/error.hpp"

#include <compare>
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

// Why a component is unacceptable, or an empty string when it is fine. `what` names the component.
std::string tool_id_component_problem(std::string_view component, std::string_view what);

}  // namespace airlock::core
