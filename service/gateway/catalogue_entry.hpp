#pragma once
// One upstream tool as the gateway serves it: what a catalogue read yields and a call resolves to.

#include "core/manifest.hpp"
#include "mcp/protocol/messages.hpp"

#include <string>

namespace airlock::service {

struct catalogue_entry {
    core::tool_id id;
    std::string exposed_name;  // wire name, or the upstream's own name when unprefixed
    mcp::tool spec;
    std::string withheld;        // why it is withheld (definition changed since pinned, ...); empty: served
    bool param_headers = false;  // declares x-mcp-header parameters (a modern HTTP call must mirror them)
};

}  // namespace airlock::service
