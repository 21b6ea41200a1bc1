#include "service/config/summary.hpp"

#include "service/config/durations.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace airlock::service {

std::string journal_location(config const& c) {
    if (c.journal_postgres) return "postgres:" + store::redact_postgres_url(c.journal_postgres->conninfo);
    return c.journal.directory.string();
}

namespace {

// A size in the largest binary unit that writes it exactly: 4194304 → "4 MiB".
std::string size_text(std::size_t n) {
    static constexpr std::pair<std::size_t, std::string_view> units[] = {
        {std::size_t{1} << 40, "TiB"}, {std::size_t{1} << 30, "GiB"}, {std::size_t{1} << 20, "MiB"}, {1024, "KiB"}};
    for (auto const& [scale, name] : units)
        if (n >= scale && n % scale == 0) return std::to_string(n / scale) + " " + std::string(name);
    return std::to_string(n) + " B";
}

void print_server(std::ostream& o, config const& c) {
    auto const& s = c.server;
    o << "config      " << c.source.string() << "\n";
    if (s.unix_socket) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", s.unix_socket_mode);
        o << "listen      unix:" << s.unix_socket->string() << " (mode " << mode << ")";
    } else {
        bool v6 = s.host.find(':') != std::string::npos;
        o << "listen      " << (s.tls ? "https://" : "http://") << (v6 ? "[" + s.host + "]" : s.host) << ":" << s.port;
    }
    o << " (" << (s.tls ? "TLS, " : "") << "threads: " << (s.threads ? std::to_string(s.threads) : "one per core");
    if (s.busy_poll.count() > 0) o << ", busy poll: " << s.busy_poll.count() << " us";
    o << ", max connections: " << s.max_connections << ", " << s.max_connections_per_client << " per client)\n";
    o << "proxies     "
      << (s.trusted_proxies.empty() ? std::string("none trusted (X-Forwarded-For and Forwarded are ignored)") : "trusted: ");
    for (std::size_t i = 0; i < s.trusted_proxies.size(); ++i) o << (i ? ", " : "") << s.trusted_proxies[i];
    if (!s.trusted_proxies.empty())
        o << " (client from " << (s.forwarded_header == "forwarded" ? "Forwarded" : "X-Forwarded-For") << ")";
    o << "\n";
    o << "drain       grace " << format_duration(s.drain_grace) << " on SIGTERM; SSE keep-alive every "
      << format_duration(s.sse_keep_alive) << "\n";
    o << "sessions    at most " << s.sessions.max << " legacy MCP sessions, " << s.sessions.max_per_principal
      << " per principal; idle ones end after " << format_duration(s.sessions.idle_timeout) << "\n";
}

void print_journal(std::ostream& o, config const& c) {
    o << "journal     " << journal_location(c) << " ("
      << (c.journal.mode == store::durability::durable ? "durable" : "fast");
    if (c.journal_postgres)
        o << ", " << c.journal_postgres->readers << " reader connections and a writer, statements time out after "
          << format_duration(c.journal_postgres->statement_timeout) << ")\n";
    else
        o << ", up to " << size_text(c.journal.map_size)
          << (c.journal_retention ? ", sealed runs kept " + format_duration(*c.journal_retention) : std::string()) << ")\n";
    if (!c.signing) {
        o << "signing     off: calls are sent unsigned\n";
    } else if (!c.signing->signer) {
        o << "signing     key " << c.signing->key_file.string() << " (created at first start), lifetime "
          << format_duration(c.signing->lifetime) << "\n";
    } else {
        o << "signing     key " << c.signing->kid << " from " << c.signing->key_file.string() << ", lifetime "
          << format_duration(c.signing->lifetime) << "\n";
    }
}

void print_upstreams(std::ostream& o, config const& c) {
    o << "upstreams   " << c.upstreams.size() << "\n";
    for (auto const& u : c.upstreams) {
        o << "  " << u.name << "  " << to_string(u.kind) << "  ";
        if (u.kind == upstream_kind::stdio) {
            // argv[0] only: arguments sometimes carry a credential someone put there anyway.
            o << (u.stdio.argv.empty() ? std::string("?") : u.stdio.argv.front());
            if (u.stdio.argv.size() > 1) o << " (+" << u.stdio.argv.size() - 1 << " args)";
            if (!u.stdio.env.empty()) o << ", env: " << u.stdio.env.size() << " set";
        } else {
            o << core::to_string(u.destination);
            if (!u.http.headers.empty()) o << ", headers: " << u.http.headers.size() << " set";
        }
        o << ", prefix " << to_string(u.prefix) << (u.optional ? ", optional" : "")
          << (c.egress.permits(u.destination) ? ", egress allowed" : ", egress NOT allowed (never contacted)") << "\n";
    }
    o << "egress      " << c.egress.entries().size() << (c.egress.entries().empty() ? " (nothing may be called)" : "")
      << "\n";
    for (auto const& d : c.egress.entries()) o << "  " << core::to_string(d) << "\n";
}

void print_principals(std::ostream& o, config const& c) {
    o << "principals  " << c.principals.size() << "\n";
    for (auto const& p : c.principals) {
        o << "  " << p.name << "  " << p.manifest.tools.size() << " tools granted by " << p.manifest.name << " "
          << p.manifest.version << " (" << p.manifest_file.string() << "), token from ";
        bool const by_oauth = c.auth.oauth && std::any_of(c.auth.oauth->principals.begin(), c.auth.oauth->principals.end(),
                                                         [&](auto const& kv) { return kv.second == p.name; });
        if (p.anonymous) o << "nobody: anonymous";
        else if (p.token.empty() && !p.token_file && !p.token_env && by_oauth) o << "OAuth only";
        else if (p.token_file) o << p.token_file->string() << (p.token.empty() ? " (created at first start)" : "");
        else o << "$" << p.token_env.value_or("?");
        o << (by_oauth && (p.token_file || p.token_env) ? ", and OAuth" : "") << (p.trusted ? ", trusted" : ", untrusted")
          << (p.is_operator ? ", operator" : "") << "\n";
    }
    if (c.auth.oauth) {
        auto const& a = *c.auth.oauth;
        o << "oauth       resource " << a.resource << ", " << a.principals.size() << " " << a.principal_claim
          << " value(s) mapped, skew " << format_duration(a.clock_skew) << "\n";
        for (auto const& i : a.issuers)
            o << "  issuer " << i.issuer << (c.egress.permits(i.destination) ? ", egress allowed" : ", egress NOT allowed")
              << "\n";
        std::string scopes;
        for (auto const& s : a.required_scopes) scopes += (scopes.empty() ? "" : " ") + s;
        std::string algs;
        for (auto const& s : a.algorithms) algs += (algs.empty() ? "" : " ") + s;
        o << "  algorithms " << algs << (scopes.empty() ? "" : "; every request needs scope " + scopes) << "\n";
        for (auto const& [server, scope] : a.upstream_scopes)
            o << "  upstream " << server << " needs scope " << scope << "\n";
    }
}

void print_providers(std::ostream& o, config const& c) {
    o << "providers   " << c.providers.size() << "\n";
    for (auto const& pc : c.providers) {
        o << "  " << pc.name << "  " << to_string(pc.kind) << "  ";
        if (pc.kind == provider_kind::scripted) {
            o << "script " << (pc.script ? pc.script->string() : std::string("?"));
        } else {
            o << core::to_string(pc.destination) << ", model " << pc.model << ", key ";
            if (pc.api_key_env) o << "from $" << *pc.api_key_env;
            else if (pc.api_key_file) o << "from " << pc.api_key_file->string();
            else o << "none";
            if (!pc.headers.empty()) o << ", headers: " << pc.headers.size() << " set";
            o << ", deadline " << format_duration(pc.deadline) << ", " << pc.max_retries << " retries"
              << (c.egress.permits(pc.destination) ? ", egress allowed" : ", egress NOT allowed");
        }
        o << "\n";
    }
}

// Logging, agents, metrics, runs and the warnings.
void print_operations(std::ostream& o, config const& c) {
    o << "logging     " << to_string(c.logging.level) << ", " << to_string(c.logging.format) << "\n";
    for (auto const& a : c.agents)
        o << "agent       " << a.name << " " << a.manifest.version << " (" << a.manifest_file.string() << "), model from "
          << (a.script_file ? "the script " + a.script_file->string() : "provider " + a.provider.value_or("")) << "\n";
    o << "metrics     ";
    if (!c.metrics.enabled) o << "off\n";
    else if (c.metrics.token.empty()) o << "/metrics, no token required\n";
    else if (c.metrics.token_file) o << "/metrics, token from " << c.metrics.token_file->string() << "\n";
    else o << "/metrics, token from $" << c.metrics.token_env.value_or("?") << "\n";
    o << "runs        at most " << c.runs.max_concurrent_runs << " at once\n";
    if (!c.warnings.empty()) {
        o << "warnings    " << c.warnings.size() << "\n";
        for (auto const& w : c.warnings) o << "  " << w << "\n";
    }
}

}  // namespace

std::string summary(config const& c) {
    std::ostringstream o;
    print_server(o, c);
    print_journal(o, c);
    print_upstreams(o, c);
    print_principals(o, c);
    print_providers(o, c);
    print_operations(o, c);
    return o.str();
}

std::ostream& operator<<(std::ostream& os, config const& c) { return os << summary(c); }

}  // namespace airlock::service
