#pragma once
// A gateway principal: who calls, what its manifest grants, and how its arguments are labelled.

#include "core/manifest.hpp"
#include "core/label.hpp"

#include <string>

namespace airlock::service {

struct gateway_principal {
    std::string name;
    core::manifest grants;  // the gateway manifest: tool grants, ceilings, protected fields
    bool trusted = false;   // arguments from a trusted principal carry a trusted label
    bool anonymous = false; // also serves requests that carry no credentials (the endpoint's principal "")
};

// The label of everything a principal sends: one source, and its trust as configured.
core::label label_of(gateway_principal const& p);

// Whether `p` sees upstream `server`: it holds a grant there that the gates do not refuse whatever
// the arguments. Seeing an upstream opens its resources, prompts, completion and log.
bool sees(gateway_principal const& p, std::string const& server);

}  // namespace airlock::service
