#include "service/gateway/principal.hpp"

#include "core/policy.hpp"

namespace airlock::service {

core::label label_of(gateway_principal const& p) {
    core::label l;
    l.sources = {"principal:" + p.name};
    l.trust = p.trusted ? core::trust::trusted : core::trust::untrusted;
    return l;
}

bool sees(gateway_principal const& p, std::string const& server) {
    // A grant the gates refuse whatever its arguments is not offered as a tool; it opens nothing
    // else of its upstream either (resources, prompts, completion, the upstream's log).
    auto const label = label_of(p);
    for (auto const& g : p.grants.tools)
        if (g.ref.server() == server && core::refused_whatever_the_arguments(g, label)) return true;
    return false;
}

}  // namespace airlock::service
