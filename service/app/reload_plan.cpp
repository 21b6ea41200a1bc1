#include "service/app/reload_plan.hpp"

#include "core/sha256.hpp"

#include <algorithm>
#include <tuple>

namespace airlock::service {

// An upstream whose client a reload can keep: everything the client was built from is unchanged
// (the egress list too, for HTTP upstreams, whose address check holds a copy of it).
bool same_client(upstream_config const& a, core::egress_allowlist const& ea, upstream_config const& b,
                 core::egress_allowlist const& eb) {
    if (a.name != b.name || a.kind != b.kind || a.deadline != b.deadline || !(a.destination == b.destination)) return false;
    if (a.kind == upstream_kind::stdio)
        return a.stdio.argv == b.stdio.argv && a.stdio.env == b.stdio.env && a.stdio.cwd == b.stdio.cwd &&
               a.stdio.max_message_bytes == b.stdio.max_message_bytes;
    return a.http.url == b.http.url && a.http.headers == b.http.headers && a.http.verify_peer == b.http.verify_peer &&
           a.http.ca_file == b.http.ca_file && ea.entries() == eb.entries();
}

bool has_anonymous(config const& c) {
    return std::any_of(c.principals.begin(), c.principals.end(), [](auto const& p) { return p.anonymous; });
}

// Settings a reload cannot change on a running server: they wait for the next restart.
std::vector<std::string> restart_only_changes(config const& before, config const& after) {
    std::vector<std::string> out;
    auto const &a = before.server, &b = after.server;
    if (a.host != b.host || a.port != b.port || a.unix_socket != b.unix_socket || a.unix_socket_mode != b.unix_socket_mode)
        out.push_back("server.listen/unix_socket");
    if (a.tls.has_value() != b.tls.has_value() ||
        (a.tls && (a.tls->cert_file != b.tls->cert_file || a.tls->key_file != b.tls->key_file)))
        out.push_back("server.tls");
    if (a.threads != b.threads) out.push_back("server.threads");
    if (a.busy_poll != b.busy_poll) out.push_back("server.busy_poll");
    if (a.header_limit != b.header_limit || a.body_limit != b.body_limit || a.read_timeout != b.read_timeout ||
        a.idle_timeout != b.idle_timeout || a.max_connections != b.max_connections ||
        a.max_connections_per_client != b.max_connections_per_client)
        out.push_back("server limits and timeouts");
    if (a.allowed_hosts != b.allowed_hosts || a.allowed_origins != b.allowed_origins) out.push_back("server.allowed_hosts/allowed_origins");
    if (a.trusted_proxies != b.trusted_proxies || a.forwarded_header != b.forwarded_header)
        out.push_back("server.trusted_proxies/forwarded_header");
    if (a.sse_keep_alive != b.sse_keep_alive) out.push_back("server.sse_keep_alive");
    if (a.list_page_size != b.list_page_size) out.push_back("server.list_page_size");
    if (a.input_request_ttl != b.input_request_ttl) out.push_back("server.input_request_ttl");
    if (a.sessions != b.sessions) out.push_back("server.sessions");
    auto postgres_of = [](config const& c) { return c.journal_postgres ? c.journal_postgres->conninfo : std::string(); };
    if (before.journal.directory != after.journal.directory || before.journal.map_size != after.journal.map_size ||
        postgres_of(before) != postgres_of(after))
        out.push_back("journal");
    if (before.logging.format != after.logging.format) out.push_back("logging.format");
    // Agent runs under way hold their manifest and provider: both change at the next start, so a
    // run never continues under a manifest it was not admitted with.
    auto agents_of = [](config const& c) {
        std::vector<std::string> v;
        for (auto const& a : c.agents)
            v.push_back(a.name + " " + a.manifest.digest + " " + a.script_file.value_or("").string() + " " +
                        a.provider.value_or(""));
        return v;
    };
    if (agents_of(before) != agents_of(after)) out.push_back("agents");
    auto providers_of = [](config const& c) {
        std::vector<std::tuple<std::string, int, std::string, std::string, std::string, std::string>> v;
        for (auto const& p : c.providers)
            v.emplace_back(p.name, static_cast<int>(p.kind), p.base_url, p.model, p.api_key,
                           p.script.value_or("").string());
        return v;
    };
    if (providers_of(before) != providers_of(after)) out.push_back("providers");
    if (before.runs.max_concurrent_runs != after.runs.max_concurrent_runs) out.push_back("runs.max_concurrent_runs");
    // The doors hold the OAuth guard and its key fetcher from the start.
    auto oauth_of = [](config const& c) {
        std::vector<std::string> v;
        if (!c.auth.oauth) return v;
        auto const& o = *c.auth.oauth;
        v.push_back(o.resource);
        for (auto const& i : o.issuers)
            v.push_back(i.issuer + " " + (i.verify_peer ? "1" : "0") + " " + i.ca_file.value_or(""));
        for (auto const* list : {&o.audiences, &o.scopes_supported, &o.required_scopes, &o.algorithms}) {
            std::string joined;
            for (auto const& s : *list) joined += s + " ";
            v.push_back(joined);
        }
        v.push_back(std::to_string(o.clock_skew.count()) + " " + std::to_string(o.jwks_refresh.count()) + " " +
                    std::to_string(o.jwks_max_age.count()) + " " + o.principal_claim);
        for (auto const& [value, name] : o.principals) v.push_back(value + "=" + name);
        if (o.introspection)
            v.push_back(o.introspection->issuer + " " + o.introspection->endpoint + " " + o.introspection->client_id + " " +
                        core::sha256_hex(o.introspection->client_secret));
        return v;
    };
    if (oauth_of(before) != oauth_of(after)) out.push_back("auth.oauth");
    return out;
}

std::size_t reload_plan::new_clients() const {
    return static_cast<std::size_t>(std::count(keep.begin(), keep.end(), std::nullopt));
}

namespace {

// Who is let in without a token is decided when the listeners start: the endpoints read it once.
constexpr char anonymous_refusal[] =
    "adding or removing the anonymous principal changes who is let in without a token, and needs a restart";

std::vector<std::string> names_missing(std::vector<principal_config> const& from, std::vector<principal_config> const& in) {
    std::vector<std::string> out;
    for (auto const& p : from)
        if (std::none_of(in.begin(), in.end(), [&](auto const& q) { return q.name == p.name; })) out.push_back(p.name);
    return out;
}

}  // namespace

reload_plan plan_reload(config const& before, config const& next) {
    reload_plan plan;
    if (has_anonymous(before) != has_anonymous(next)) {
        plan.refusal = anonymous_refusal;
        return plan;
    }
    std::vector<bool> kept(before.upstreams.size(), false);
    for (auto const& u : next.upstreams) {
        std::optional<std::size_t> keep;
        for (std::size_t i = 0; i < before.upstreams.size() && !keep; ++i) {
            if (!kept[i] && same_client(before.upstreams[i], before.egress, u, next.egress)) {
                keep = i;
                kept[i] = true;
            }
        }
        plan.keep.push_back(keep);
    }
    for (std::size_t i = 0; i < kept.size(); ++i)
        if (!kept[i]) plan.retired.push_back(i);
    plan.restart_only = restart_only_changes(before, next);
    plan.principals_added = names_missing(next.principals, before.principals);
    plan.principals_removed = names_missing(before.principals, next.principals);
    return plan;
}

}  // namespace airlock::service
