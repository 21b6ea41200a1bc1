#pragma once
// OAuth 2.0 Protected Resource Metadata (RFC 9728) for airlock as an MCP resource server: the
// document that tells a client which authorization servers issue tokens for it, and where that
// document is. Pure: a request in, the reply out (or nullopt when the path is not one of its two).

#include "service/http/http_server.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

struct resource_metadata {
    std::string resource;                       // the canonical URL of /mcp, e.g. https://airlock.example.com/mcp
    std::vector<std::string> authorization_servers;  // issuer URLs
    std::vector<std::string> scopes_supported;
};

// The absolute URL of the metadata of `resource`: /.well-known/oauth-protected-resource with the
// resource's path appended (RFC 9728 §3.1), on the resource's own origin.
std::string resource_metadata_url(std::string_view resource);

// The path part of resource_metadata_url, and the bare /.well-known/oauth-protected-resource: the
// two paths a client may ask (MCP: path-aware first, then the root).
std::vector<std::string> resource_metadata_paths(std::string_view resource);

// GET (or HEAD) of one of the two paths: 200 with the JSON document, readable from any origin
// (it is public; a browser-based client reads it cross-origin). OPTIONS there: a preflight answer.
// Any other method there: 405. Another path: nullopt.
std::optional<http_response> resource_metadata_reply(resource_metadata const& md, http_request const& req);

}  // namespace airlock::service
