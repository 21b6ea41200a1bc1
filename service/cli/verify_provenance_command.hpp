#pragma once
// `airlock verify-provenance --key PUB.pem [--kid KID] [--at TIME] [--tool URI] [--arguments JSON] FILE|-`:
// verifies the provenance block of one call — given as tools/call params, a whole JSON-RPC tools/call
// request, a journal record (or its body) carrying {tool, arguments, provenance}, or a bare block —
// and prints `ok` or the verdict (unsigned, unknown_key, bad_signature, tool_mismatch,
// arguments_mismatch, not_yet_valid, expired). Exit 0 only for ok; 1 for any other verdict; 2 when
// the input cannot be read or holds no well-formed block.

#include <string>
#include <vector>

namespace airlock::service {

int run_verify_provenance(std::vector<std::string> const& args);

}  // namespace airlock::service
