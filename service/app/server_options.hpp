#pragma once
// The HTTP server's options from the `server:` section of the config. Here, in the composition
// root, so that neither the config nor the server needs to know the other.

#include "service/config/config.hpp"
#include "service/http/http_server.hpp"

namespace airlock::service {

// The subset of server settings the HTTP server takes today (host, port, limits, timeouts, cap).
http_server_options to_http_server_options(server_config const& s);

}  // namespace airlock::service
