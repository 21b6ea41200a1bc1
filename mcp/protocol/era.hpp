#pragma once
// MCP's two eras and every rule that differs between them, as pure functions: which versions airlock
// speaks, initialize negotiation (legacy), the Streamable HTTP header rules a client follows and a
// server checks, and the small state machine a client uses to find out which era a server speaks.
//
//   legacy  2025-03-26, 2025-06-18, 2025-11-25: initialize handshake, Mcp-Session-Id, MCP-Protocol-Version.
//   modern  2026-07-28: stateless; every request carries _meta (protocolVersion, clientCapabilities)
//           and, on HTTP, MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-* headers.
//
// Each part has its own header; this one holds them all.

#include "mcp/protocol/era_detector.hpp"
#include "mcp/protocol/http_headers.hpp"
#include "mcp/protocol/negotiation.hpp"
#include "mcp/protocol/post_rules.hpp"
#include "mcp/protocol/versions.hpp"
