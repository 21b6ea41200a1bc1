#include "core/toolbox.hpp"

#include "core/canonical_json.hpp"

#include <algorithm>

namespace airlock::core {

namespace detail {

field_error expected(std::string_view what, boost::json::value const& v) {
    return field_error{{}, "expected " + std::string(what) + ", got " + std::string(core::json_kind_name(v))};
}

field_error out_of_range(std::string const& lowest, std::string const& highest) {
    return field_error{{}, "is outside the range [" + lowest + ", " + highest + "]"};
}

field_error not_an_enum_name(std::vector<std::string_view> const& names) {
    // The allowed names are code, not data, so listing them is safe, and it is what lets a model
    // correct its next call instead of guessing.
    std::string problem = "is not one of";
    for (std::size_t i = 0; i < names.size(); ++i) {
        problem += i == 0 ? " \"" : ", \"";
        problem += names[i];
        problem += '"';
    }
    return field_error{{}, std::move(problem)};
}

integral_number integral_of(boost::json::value const& v) noexcept {
    integral_number n;
    if (auto const* i = v.if_int64()) {
        n.kind = integral_number::fits_int64;
        n.as_int64 = *i;
    } else if (auto const* u = v.if_uint64()) {
        if (*u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            n.kind = integral_number::fits_int64;
            n.as_int64 = static_cast<std::int64_t>(*u);
        } else {
            n.kind = integral_number::fits_uint64;
            n.as_uint64 = *u;
        }
    } else if (auto const* d = v.if_double()) {
        if (!std::isfinite(*d) || std::trunc(*d) != *d) return n;
        // Both bounds are powers of two, so exact as doubles; the casts below are then defined.
        constexpr double two_63 = 9223372036854775808.0;
        constexpr double two_64 = 18446744073709551616.0;
        if (*d >= -two_63 && *d < two_63) {
            n.kind = integral_number::fits_int64;
            n.as_int64 = static_cast<std::int64_t>(*d);
        } else if (*d >= 0 && *d < two_64) {
            n.kind = integral_number::fits_uint64;
            n.as_uint64 = static_cast<std::uint64_t>(*d);
        } else {
            n.kind = integral_number::too_large;
        }
    }
    return n;
}

}  // namespace detail

std::string_view to_string(drift_kind k) noexcept {
    switch (k) {
    case drift_kind::not_granted: return "not_granted";
    case drift_kind::not_implemented: return "not_implemented";
    case drift_kind::mutates_but_granted_read_only: return "mutates_but_granted_read_only";
    case drift_kind::grant_repeats_arguments: return "grant_repeats_arguments";
    }
    return "unknown";
}

result<tool_id> toolbox::insert(declared_tool declared, invoker call) {
    auto id = declared.id;
    if (tools_.contains(id)) {
        // Replacing silently would let registration order decide which body runs.
        return make_error("duplicate_tool", id.uri() + " is already in the box");
    }
    tools_.emplace(id, entry{std::move(declared), std::move(call)});
    return id;
}

declared_tool const* toolbox::find(tool_id const& tool) const noexcept {
    auto it = tools_.find(tool);
    return it == tools_.end() ? nullptr : &it->second.declared;
}

std::vector<tool_id> toolbox::ids() const {
    std::vector<tool_id> out;
    out.reserve(tools_.size());
    for (auto const& [id, e] : tools_) out.push_back(id);
    return out;
}

std::vector<drift_finding> toolbox::check_against(manifest const& m) const {
    auto grant_of = [&](tool_id const& id) -> tool_grant const* {
        auto it = std::find_if(m.tools.begin(), m.tools.end(), [&](tool_grant const& g) { return g.ref == id; });
        return it == m.tools.end() ? nullptr : &*it;
    };

    std::vector<drift_finding> out;
    for (auto const& [id, e] : tools_) {
        auto const* grant = grant_of(id);
        if (!grant) {
            out.push_back({drift_kind::not_granted, id,
                           id.uri() + " is implemented but the manifest does not grant it: this binary can do "
                                      "something its declaration does not admit"});
            continue;
        }
        if (e.declared.mutates && !grant->mutates) {
            out.push_back({drift_kind::mutates_but_granted_read_only, id,
                           id.uri() + " declares that it mutates but the manifest grants it with mutates: false: "
                                      "that exemption lets model-chosen arguments reach something that changes "
                                      "the world"});
        }
        if (grant->arguments) {
            out.push_back({drift_kind::grant_repeats_arguments, id,
                           id.uri() + " is granted with its own arguments schema: a typed tool derives its schema "
                                      "from its argument type, so the copy in the manifest can only drift; remove "
                                      "arguments from this grant"});
        }
    }
    for (auto const& grant : m.tools) {
        if (grant.ref.server() != server_ || tools_.contains(grant.ref)) continue;
        out.push_back({drift_kind::not_implemented, grant.ref,
                       grant.ref.uri() + " is granted but nothing in the box implements it: the model would be "
                                         "offered a tool that fails when chosen"});
    }
    return out;
}

boost::asio::awaitable<tool_result<boost::json::value>> toolbox::async_call(tool_id tool, boost::json::value arguments,
                                                                            std::optional<provenance> /*prov*/) {
    auto it = tools_.find(tool);
    if (it == tools_.end())
        co_return tool_error{tool_error_kind::refused, tool.uri(), "this box offers no such tool"};
    // A copy, so nothing below depends on the box once the body suspends.
    auto call = it->second.call;
    co_return co_await call(std::move(arguments));
}

destination toolbox::destination_of(tool_id const& /*tool*/) const {
    return local_destination{};
}

}  // namespace airlock::core
