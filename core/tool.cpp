#include "core/tool.hpp"

#include <array>
#include <utility>

namespace airlock::core {

namespace {

// One table for both directions, so a kind cannot be printable and unparseable (or the reverse).
constexpr std::array<std::pair<tool_error_kind, std::string_view>, 5> kind_names{{
    {tool_error_kind::unreachable, "unreachable"},
    {tool_error_kind::refused, "refused"},
    {tool_error_kind::timed_out, "timed_out"},
    {tool_error_kind::tool_failed, "tool_failed"},
    {tool_error_kind::malformed, "malformed"},
}};

}  // namespace

std::string_view to_string(tool_error_kind k) noexcept {
    for (auto const& [kind, name] : kind_names)
        if (kind == k) return name;
    return "unknown";
}

std::optional<tool_error_kind> parse_tool_error_kind(std::string_view s) noexcept {
    // Byte-for-byte: these names are written to the journal, and a near miss read back as a different
    // kind would change whether an effect is retried.
    for (auto const& [kind, name] : kind_names)
        if (name == s) return kind;
    return std::nullopt;
}

disposition disposition_of(tool_error_kind k) noexcept {
    // This mapping decides whether a restart may re-perform an effect. Only a kind that proves nothing
    // was sent may say did_not_happen; a timeout is in doubt because the request left and no answer
    // came back, so the effect may well have happened.
    switch (k) {
    case tool_error_kind::unreachable:
    case tool_error_kind::refused:
        return disposition::did_not_happen;
    case tool_error_kind::timed_out:
        return disposition::in_doubt;
    case tool_error_kind::tool_failed:
    case tool_error_kind::malformed:
        return disposition::landed;
    }
    // An out-of-range value is memory corruption or a cast gone wrong; the cautious answer is the one
    // that never lets the effect be repeated blindly.
    return disposition::in_doubt;
}

std::string_view to_string(disposition d) noexcept {
    switch (d) {
    case disposition::did_not_happen: return "did_not_happen";
    case disposition::in_doubt: return "in_doubt";
    case disposition::landed: return "landed";
    }
    return "unknown";
}

void throw_exception_from_error(tool_error const& e, boost::source_location const&) {
    // Reached only through tool_result<T>::value() on an error, which is a bug in the caller; the
    // kind becomes the code so whoever logs it still sees what is known about the far side.
    throw error_exception(make_error(std::string(to_string(e.kind)), e.tool + ": " + e.detail));
}

std::string to_string(destination const& d) {
    struct render {
        std::string operator()(local_destination const&) const { return "local"; }
        std::string operator()(process_destination const& p) const { return "process:" + p.argv0; }
        std::string operator()(remote_destination const& r) const {
            // An IPv6 literal needs brackets, or its colons run into the port's.
            bool ipv6 = r.host.find(':') != std::string::npos && !r.host.starts_with('[');
            std::string host = ipv6 ? "[" + r.host + "]" : r.host;
            return r.scheme + "://" + host + ":" + std::to_string(r.port);
        }
    };
    return std::visit(render{}, d);
}

}  // namespace airlock::core
