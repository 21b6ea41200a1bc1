#include "core/grant_hints.hpp"

#include "core/closest_names.hpp"

#include <algorithm>

namespace airlock::core {

std::vector<std::string> unoffered_grants(manifest const& grants, std::string const& server,
                                          std::vector<tool_id> const& offered) {
    std::vector<std::string> names;
    for (auto const& id : offered)
        if (id.server() == server) names.push_back(id.name());
    std::vector<std::string> out;
    for (auto const& g : grants.tools) {
        if (g.ref.server() != server) continue;
        if (std::find(names.begin(), names.end(), g.ref.name()) != names.end()) continue;
        auto line = g.ref.uri() + " is granted but " + server + " offers no such tool";
        auto near = closest_names(g.ref.name(), names);
        for (std::size_t i = 0; i < near.size(); ++i) {
            line += i == 0 ? "; did you mean " : i + 1 == near.size() ? " or " : ", ";
            line += "tool://" + server + "/" + near[i];
        }
        out.push_back(line + (near.empty() ? "" : "?"));
    }
    return out;
}

}  // namespace airlock::core
