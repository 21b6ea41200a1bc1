#pragma once
// airlock's configuration: the types one YAML file is read into, every setting with a safe default.
// docs/configuration.md documents the file field by field; examples/airlock.yaml is a complete one.
// Reading it is load.hpp's (one file a section: server.cpp, upstreams.cpp, principals.cpp, ...);
// printing it summary.hpp's; its secrets secrets.hpp's.
//
// Loading reads every file the configuration names (tokens, manifests, keys) and every environment
// variable it copies, so a configuration that loads is one airlock can start with. Secrets (tokens,
// header and environment values) are held in memory only; no error message, warning or summary
// line ever contains one.

#include "core/manifest.hpp"
#include "core/policy.hpp"
#include "core/provenance.hpp"
#include "core/tool.hpp"
#include "mcp/client/http_transport.hpp"
#include "mcp/client/stdio_transport.hpp"
#include "service/config/durations.hpp"
#include "service/config/script.hpp"
#include "store/lmdb_store.hpp"
#include "store/postgres_store.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

struct tls_files {
    std::filesystem::path cert_file;  // PEM certificate chain
    std::filesystem::path key_file;   // PEM private key
};

// Legacy (2025-11-25 era) MCP sessions on /mcp: each holds memory and a backend session until it
// is deleted or idles out, so there are at most `max`, and one principal holds at most
// `max_per_principal` of them (else one tenant could refuse everyone else).
struct session_limits {
    std::size_t max = 1024;
    std::size_t max_per_principal = 64;
    std::chrono::milliseconds idle_timeout{30 * 60 * 1000};  // with nothing in flight and no GET stream open
    friend bool operator==(session_limits const&, session_limits const&) = default;
};

struct server_config {
    std::string host = "127.0.0.1";  // IPv6 without brackets
    std::uint16_t port = 8787;       // 0: any free port
    std::optional<std::filesystem::path> unix_socket;  // when set, airlock listens here instead of TCP
    unsigned unix_socket_mode = 0660;
    unsigned threads = 0;  // 0: one per hardware thread
    // With one I/O thread: how long it keeps polling for events after its last one before it sleeps
    // (0: it sleeps at once). Trades CPU for the wake-up a sleeping thread pays on every event.
    std::chrono::microseconds busy_poll{0};
    std::size_t header_limit = 16 * 1024;
    std::size_t body_limit = 4 * 1024 * 1024;
    std::chrono::milliseconds read_timeout{30'000};
    std::chrono::milliseconds idle_timeout{60'000};
    std::size_t max_connections = 1024;
    // Connections one client address may hold at once; a quarter of max_connections unless set.
    // Trusted proxies and unix-socket peers are not held to it (they stand for many clients).
    std::size_t max_connections_per_client = 256;
    std::optional<tls_files> tls;
    std::vector<std::string> allowed_origins;  // "scheme://host[:port]", lowercased; empty: the endpoint's default
    std::vector<std::string> allowed_hosts;    // Host header values, lowercased; empty: the endpoint's default
    // Canonical text: addresses ("127.0.0.1"), networks ("10.0.0.0/8") and "unix" (the unix-socket peer).
    std::vector<std::string> trusted_proxies;
    // Which header a trusted proxy writes the client into: "x-forwarded-for" or "forwarded". Only
    // that one is read; the other passes through a proxy untouched, written by whoever sent it.
    std::string forwarded_header = "x-forwarded-for";
    std::chrono::milliseconds drain_grace{10'000};
    // How long a 2026-07-28 request that asked its caller something waits for the retry (MRTR).
    std::chrono::milliseconds input_request_ttl{300'000};
    // Items per page of the lists the gateway merges from its upstreams (tools, resources, prompts).
    std::size_t list_page_size = 100;
    std::chrono::milliseconds sse_keep_alive{15'000};  // a comment on an SSE stream quiet for this long
    session_limits sessions;
};

struct signing_config {
    std::filesystem::path key_file;
    std::string kid;  // as configured, else derived from the public key (key_id_of); empty while the key is missing
    std::chrono::seconds lifetime{300};
    bool create_if_missing = false;
    // Loaded from key_file; null only when the file is missing and create_if_missing is set, until
    // create_missing_secrets makes it.
    std::shared_ptr<core::provenance_signer const> signer;
};

enum class upstream_kind { stdio, http };
enum class tool_prefix { server, none };  // tools named `server__tool`, or by their own name

struct upstream_config {
    std::string name;  // the server component of its ToolIds
    upstream_kind kind = upstream_kind::stdio;
    mcp::stdio_options stdio;         // kind == stdio: argv, env (secrets resolved) and cwd filled in
    mcp::http_transport_options http; // kind == http: url, headers (secrets resolved), TLS settings
    core::destination destination;    // where its calls go, as the egress allowlist must name it
    tool_prefix prefix = tool_prefix::server;
    std::chrono::milliseconds deadline{60'000};  // one tools/call, start to result
    bool optional = false;  // readiness does not wait for it
};

struct principal_config {
    std::string name;
    std::string token;  // SECRET: the bearer token itself; empty while a token file is still to be created
    std::optional<std::filesystem::path> token_file;
    std::optional<std::string> token_env;  // the variable's name, not its value
    bool create_if_missing = false;        // token_file only: create_missing_secrets writes a fresh token
    std::filesystem::path manifest_file;
    core::manifest manifest;  // its grants are the tools this principal sees and may call
    bool trusted = false;     // arguments from this principal count as trusted input
    bool anonymous = false;   // requests without an Authorization header are served as this principal (no token)
    bool is_operator = false; // `operator: true`: sees and acts on every run over REST and decides approvals
};

enum class provider_kind { openai, anthropic, scripted };

// A model provider agents can be run with (`providers:` in the file, keyed by name).
struct provider_config {
    std::string name;
    provider_kind kind = provider_kind::openai;
    std::string base_url;            // openai/anthropic: as configured, else the kind's public endpoint
    core::destination destination;   // remote{scheme, host, port} of base_url; local for scripted
    std::string api_key;             // SECRET: the key itself, empty when none is configured
    std::optional<std::string> api_key_env;  // the variable's name, not its value
    std::optional<std::filesystem::path> api_key_file;
    // Sent on every request (OpenAI-Organization, a gateway's tenant header...). Values may be
    // secrets: never shown, scrubbed from errors.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string model;               // asked for when a run names no model
    std::uint64_t max_tokens = 4096;
    // openai: "max_tokens" or "max_completion_tokens"; by default the latter for api.openai.com only
    std::string max_tokens_field = "max_tokens";
    std::chrono::milliseconds deadline{120'000};        // one attempt, connect to the last byte of the answer
    unsigned max_retries = 2;                           // further attempts after 429 or 5xx
    std::size_t max_connections = 256;                  // requests in flight at once; more wait their turn
    std::chrono::milliseconds max_retry_wait{60'000};   // the longest wait before one
    bool verify_peer = true;
    std::optional<std::string> ca_file;
    std::optional<std::filesystem::path> script;  // scripted: the script of turns it plays
};

// An agent airlock runs (REST /v1/runs, `airlock replay`): its manifest and its model provider.
struct agent_config {
    std::string name;  // the manifest's metadata.name
    std::filesystem::path manifest_file;
    core::manifest manifest;
    std::optional<std::filesystem::path> script_file;  // the scripted provider plays this script
    std::optional<service::script> scripted;  // parsed from script_file
    std::optional<std::string> provider;  // or: a provider by name from the providers section
};

enum class log_level { trace, debug, info, warn, error };
enum class log_format { json, text };

struct logging_config {
    log_level level = log_level::info;
    log_format format = log_format::json;
};

// GET /metrics: on by default and open like /healthz; with a token it answers only
// `Authorization: Bearer <token>` (a scraper's own credential, not a principal's).
struct metrics_config {
    bool enabled = true;
    std::string token;  // SECRET; empty: no token required
    std::optional<std::filesystem::path> token_file;
    std::optional<std::string> token_env;  // the variable's name, not its value
};

// An authorization server whose access tokens airlock accepts (auth.oauth.issuers).
struct oauth_issuer_config {
    std::string issuer;  // exact: the tokens' `iss` and the discovered metadata's `issuer` must equal it
    core::destination destination;  // remote{scheme, host, port}: the egress allowlist must name it
    bool verify_peer = true;
    std::optional<std::string> ca_file;
};

// auth.oauth: airlock as an OAuth 2.1 resource server (MCP authorization). Tokens are JWTs signed by
// a configured issuer for this resource; a claim of the token names the principal it is served as.
// Static bearer tokens keep working beside it. docs/authorization.md explains it.
struct oauth_config {
    std::string resource;  // the canonical URL of /mcp as clients reach it (behind a proxy: the proxy's)
    std::vector<oauth_issuer_config> issuers;
    std::vector<std::string> audiences;         // a token's `aud` must name one; default: resource
    std::vector<std::string> scopes_supported;  // advertised in the resource metadata
    std::vector<std::string> required_scopes;   // every request needs all of these (the challenge's scope=)
    std::vector<std::string> algorithms{"RS256", "PS256", "ES256", "EdDSA"};
    std::chrono::seconds clock_skew{60};
    std::string principal_claim = "sub";               // the claim whose value names the principal
    std::map<std::string, std::string> principals;     // that claim's value → a principals[].name
    // upstream name → the scope a token needs to see that upstream's tools, resources and prompts
    // (a token without it is served as its principal without those grants); listed in scopes_supported.
    std::map<std::string, std::string> upstream_scopes;
    std::chrono::milliseconds jwks_refresh{300'000};   // keys are fetched again at least this often
    std::chrono::milliseconds jwks_max_age{3'600'000}; // across an outage, keys serve this long after their last fetch
    // RFC 7662, for opaque access tokens (anything not a JWT); absent: only JWTs are accepted.
    struct introspection_config {
        std::string issuer;       // whose opaque tokens: one of issuers (default: the only one)
        std::string endpoint;     // "": the issuer metadata's introspection_endpoint
        std::string client_id;
        std::string client_secret;  // SECRET: from a file or the environment, never inline
    };
    std::optional<introspection_config> introspection;
};

struct auth_config {
    std::optional<oauth_config> oauth;
};

struct runs_config {
    std::size_t max_concurrent_runs = 64;
};

// journal.session_runs: when a gateway run is sealed and the next one begun, so that no run grows
// for ever (prune removes whole sealed runs; a run that is never sealed is never pruned).
struct session_run_limits {
    std::chrono::milliseconds max_age{std::chrono::hours(1)};  // since its admission
    std::size_t max_calls = 10'000;                            // tools/call requests journaled in it
};

struct config {
    std::filesystem::path source;    // the file it was read from, absolute
    std::filesystem::path base_dir;  // relative paths in the file are resolved against this
    server_config server;
    store::lmdb_options journal;  // directory defaults to <base_dir>/var/journal
    // journal.postgres: the journal is in PostgreSQL (docs/scale-out.md), not in LMDB at `journal`.
    // Its mode and max_batch are journal.durability and journal.max_batch.
    std::optional<store::postgres_options> journal_postgres;
    // journal.retention: sealed runs are pruned once sealed this long ago; absent, runs are kept.
    std::optional<std::chrono::milliseconds> journal_retention;
    session_run_limits session_runs;
    std::optional<signing_config> signing;  // absent: calls are sent unsigned
    std::vector<upstream_config> upstreams;
    core::egress_allowlist egress;
    std::vector<principal_config> principals;
    std::vector<provider_config> providers;
    std::vector<agent_config> agents;
    logging_config logging;
    metrics_config metrics;
    runs_config runs;
    auth_config auth;
    // Valid but probably not what was meant (an upstream egress does not allow, a token file others
    // can read, ...). Shown by summary(); never contain secrets.
    std::vector<std::string> warnings;
    // SECRET: every value read from an environment variable or a file (env, env_from, file, for
    // upstreams and providers) and every header value, however written, so that
    // register_secrets can hide them. Tokens are in principals, keys in providers.
    std::vector<std::string> secrets;
};

std::string_view to_string(upstream_kind k) noexcept;
std::string_view to_string(tool_prefix p) noexcept;
std::string_view to_string(provider_kind k) noexcept;
std::string_view to_string(log_level l) noexcept;
std::string_view to_string(log_format f) noexcept;

}  // namespace airlock::service

// The operations over a configuration, each in its own file, so that one include gives the types
// and what reads, prints and secures them.
#include "service/config/load.hpp"     // IWYU pragma: export
#include "service/config/secrets.hpp"  // IWYU pragma: export
#include "service/config/sizes.hpp"    // IWYU pragma: export
#include "service/config/summary.hpp"  // IWYU pragma: export
