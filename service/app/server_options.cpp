#include "service/app/server_options.hpp"

#include "service/http/forwarded.hpp"

namespace airlock::service {

http_server_options to_http_server_options(server_config const& s) {
    http_server_options o;
    o.host = s.host;
    o.port = s.port;
    o.header_limit = s.header_limit;
    o.body_limit = s.body_limit;
    o.read_timeout = s.read_timeout;
    o.idle_timeout = s.idle_timeout;
    o.max_connections = s.max_connections;
    o.max_connections_per_client = s.max_connections_per_client;
    o.unix_socket = s.unix_socket;
    o.unix_socket_mode = s.unix_socket_mode;
    if (s.tls) o.tls = http_tls_files{s.tls->cert_file, s.tls->key_file};
    for (auto const& t : s.trusted_proxies) {
        if (t == "unix")
            o.trusted.unix_socket = true;
        else if (auto net = parse_ip_network(t))
            o.trusted.networks.push_back(*net);
    }
    o.trusted.header = s.forwarded_header == "forwarded" ? proxy_trust::forwarded : proxy_trust::x_forwarded_for;
    return o;
}

}  // namespace airlock::service
