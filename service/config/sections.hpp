#pragma once
// One reader a section of the configuration file (load.cpp calls them in the file's order), and
// the few value readers more than one section shares. Each records its problems on the reader,
// under the key path at fault, and fills in what it could read.

#include "service/config/reader.hpp"

#include <functional>

namespace airlock::service::config_detail {

void read_server(reader& r, YAML::Node const& n, server_config& s);           // server.cpp
void read_journal(reader& r, YAML::Node const& n, config& c);                  // journal.cpp
std::optional<signing_config> read_signing(reader& r, YAML::Node const& n);   // signing.cpp
std::optional<upstream_config> read_upstream(reader& r, YAML::Node const& n, std::string const& p);  // upstreams.cpp
void read_egress(reader& r, YAML::Node const& n, core::egress_allowlist& allow);                     // egress.cpp
std::optional<principal_config> read_principal(reader& r, YAML::Node const& n, std::string const& p);  // principals.cpp
void read_providers(reader& r, YAML::Node const& n, std::vector<provider_config>& out);             // providers.cpp
std::optional<agent_config> read_agent(reader& r, YAML::Node const& n, std::string const& p);        // agents.cpp
void read_runs(reader& r, YAML::Node const& v, runs_config& runs);                                   // agents.cpp
void read_logging(reader& r, YAML::Node const& v, logging_config& logging);                          // logging.cpp
void read_metrics(reader& r, YAML::Node const& n, metrics_config& m);                                // metrics.cpp
void read_auth(reader& r, YAML::Node const& n, auth_config& a);                                      // auth.cpp

// Whether the listen host is this machine only ("localhost", "::1", 127.0.0.0/8).
bool is_loopback(std::string const& host);

// A value given inline, or taken from airlock's environment or a file at load: `VALUE`,
// `{env: NAME}` or `{file: PATH}`, each optionally with `prefix:` (e.g. "Bearer "). secret_values.cpp
std::optional<std::string> read_secret_value(reader& r, YAML::Node const& n, std::string const& path);

// `tls: {verify, ca_file}` of an https:// endpoint named `who`. http_settings.cpp
void read_tls(reader& r, YAML::Node const& v, std::string const& tp, std::optional<std::string> const& url,
              std::string const& who, bool& verify_peer, std::optional<std::string>& ca_file);
// `headers: {Name: VALUE}` sent on every request; values inline or `{env}`/`{file}` (see
// read_secret_value). `reserved` gives why a name may not be configured, or "" when it may.
void read_headers(reader& r, YAML::Node const& v, std::string const& hp,
                  std::vector<std::pair<std::string, std::string>>& out,
                  std::function<std::string(std::string const&)> const& reserved);

// Whether `token` can be a bearer token; the reason when not. Never quotes the token. principals.cpp
std::string token_problem(std::string_view token);
// A manifest file named at `v`: every problem it has is recorded under `p`, naming the file.
std::optional<std::pair<fs::path, core::manifest>> read_manifest_file(reader& r, YAML::Node const& v, std::string const& p);

}  // namespace airlock::service::config_detail
