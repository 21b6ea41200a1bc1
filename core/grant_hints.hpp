#pragma once
// What is wrong with a grant that only the upstream's tool list can tell: it names a tool the
// upstream does not offer.

#include "core/manifest.hpp"
#include "core/tool_id.hpp"

#include <string>
#include <vector>

namespace airlock::core {

// One sentence per grant of `grants` on upstream `server` naming a tool `offered` lacks, with the
// closest names it does offer: "tool://fs/read_txt_file is granted but fs offers no such tool;
// did you mean tool://fs/read_text_file?". In the order granted; empty when every grant is offered.
std::vector<std::string> unoffered_grants(manifest const& grants, std::string const& server,
                                          std::vector<tool_id> const& offered);

}  // namespace airlock::core
