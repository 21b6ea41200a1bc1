#pragma once
// `airlock run MANIFEST --input JSON`: one agent run from the command line, the twin of
// `POST /v1/runs?wait=…`. The run is driven in this process against the configured upstreams,
// journaled in the configured journal (so `airlock runs` and `airlock replay` see it), and its
// status, output and run id are printed.

#include <string>
#include <vector>

namespace airlock::service {

// Exit 0 when the run succeeded, 1 for any other final status (or a failure to run at all),
// 2 for a bad command line, configuration, manifest or input.
int run_run(std::vector<std::string> const& args);

}  // namespace airlock::service
