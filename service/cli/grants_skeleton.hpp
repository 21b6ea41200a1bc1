#pragma once
// The manifest `airlock grants` prints: a principal's grants for every tool one upstream offers,
// to be cut down to what the principal should have.

#include "mcp/client/client.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

// A manifest (valid YAML that parse_manifest accepts) granting `tools` of upstream `server`, each
// under a comment with the first line of its description; `mutates: false` for the tools whose
// annotations say readOnlyHint: true. With `read_only`, only those are granted.
std::string grants_skeleton(std::string_view server, std::vector<mcp::upstream_tool> const& tools, bool read_only);

// The `ref:` line that grants `t`, as it is pasted into a manifest.
std::string ref_line(mcp::upstream_tool const& t);

}  // namespace airlock::service
