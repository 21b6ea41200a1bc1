#include "service/config/load.hpp"

#include "service/config/reader.hpp"
#include "service/config/sections.hpp"

#include "core/label.hpp"

#include <algorithm>
#include <cstdlib>

namespace airlock::service {

env_lookup process_environment() {
    return [](std::string const& name) -> std::optional<std::string> {
        if (char const* v = std::getenv(name.c_str())) return std::string(v);
        return std::nullopt;
    };
}

env_lookup environment_from(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](std::string const& name) -> std::optional<std::string> {
        if (auto it = vars.find(name); it != vars.end()) return it->second;
        return std::nullopt;
    };
}

namespace config_detail {
namespace {

struct loaded {
    config c;
    std::vector<core::error> problems;
};

// A line other than blanks, comments and document markers.
bool has_content(std::string_view text) {
    while (!text.empty()) {
        auto nl = text.find('\n');
        auto line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        auto at = line.find_first_not_of(" \t\r");
        if (at == std::string_view::npos) continue;
        line.remove_prefix(at);
        if (line.front() != '#' && !line.starts_with("---") && !line.starts_with("...")) return true;
    }
    return false;
}

// The file's one YAML document (an empty file: an empty mapping); nullopt after recording why not.
std::optional<YAML::Node> read_document(fs::path const& source, std::vector<core::error>& problems) {
    auto got = read_text_file(source, max_config_bytes);
    if (!got.text) {
        problems.push_back(core::make_error(got.problem_code, show_path(source) + " " + got.problem));
        return std::nullopt;
    }
    if (auto nul = core::yaml::nul_byte(*got.text)) {
        problems.push_back(core::make_error("invalid_yaml", show_path(source) + " holds " + *nul));
        return std::nullopt;
    }
    core::yaml::documents docs;
    try {
        docs = core::yaml::read_documents(*got.text);
    } catch (YAML::Exception const& e) {
        problems.push_back(core::make_error(
            "invalid_yaml", "line " + std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1) +
                                ": " + e.msg));
        return std::nullopt;
    }
    if (docs.count > 1) {
        problems.push_back(core::make_error("invalid_yaml", "the configuration must be one YAML document, not " +
                                                                    std::to_string(docs.count)));
        return std::nullopt;
    }
    YAML::Node root = docs.count == 0 ? YAML::Node(YAML::NodeType::Map) : docs.first;
    if (root.IsNull() && has_content(*got.text)) {
        // yaml-cpp reads some malformed texts (a stray ',') as an empty document: that is not the
        // empty file that means every default.
        problems.push_back(core::make_error("invalid_yaml", "the configuration must be a mapping of sections; "
                                                            "its text reads as no value at all"));
        return std::nullopt;
    }
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);  // an empty file means every default
    return root;
}

// A section written with nothing under it (every entry commented out) means its defaults.
YAML::Node section(YAML::Node const& d, char const* key) {
    auto const v = d[key];
    return v && !v.IsNull() ? v : YAML::Node(YAML::NodeType::Undefined);
}

// Each section in turn; principal_at[i] is the index in the file of c.principals[i].
void read_sections(reader& r, YAML::Node const& doc, config& c, std::vector<std::size_t>& principal_at) {
    if (auto const v = section(doc, "server")) read_server(r, v, c.server);
    if (auto const v = section(doc, "journal")) read_journal(r, v, c);
    if (auto const v = section(doc, "signing")) c.signing = read_signing(r, v);
    if (auto const v = section(doc, "upstreams")) {
        std::vector<std::size_t> at;
        read_list(r, v, "upstreams", c.upstreams, at, read_upstream);
    }
    if (auto const v = section(doc, "egress")) read_egress(r, v, c.egress);
    // Before the principals: a principal auth.oauth maps to needs no bearer token.
    if (auto const v = section(doc, "auth")) {
        read_auth(r, v, c.auth);
        if (c.auth.oauth)
            for (auto const& [value, name] : c.auth.oauth->principals) r.oauth_principals.insert(name);
    }
    if (auto const v = section(doc, "principals"))
        read_list(r, v, "principals", c.principals, principal_at, read_principal);
    if (auto const v = section(doc, "providers")) read_providers(r, v, c.providers);
    if (auto const v = section(doc, "agents")) {
        std::vector<std::size_t> agent_at;
        read_list(r, v, "agents", c.agents, agent_at, read_agent);
        for (std::size_t i = 0; i < c.agents.size(); ++i) {
            auto const& name = c.agents[i].provider;
            if (name && std::none_of(c.providers.begin(), c.providers.end(),
                                     [&](provider_config const& pc) { return pc.name == *name; }))
                r.fail("unknown_provider", index_path("agents", agent_at[i]) + ".provider names " + in_quotes(*name) +
                                               ", which the providers section does not define");
        }
    }
    if (auto const v = section(doc, "logging")) read_logging(r, v, c.logging);
    if (auto const v = section(doc, "metrics")) read_metrics(r, v, c.metrics);
    if (auto const v = section(doc, "runs")) read_runs(r, v, c.runs);
}

// The fix that keeps the policy comes first: protected fields that accept the principal's values open
// this one grant, and only for the fields named. The other two open more than asked for: `mutates:
// false` also lets recovery repeat a call in doubt, and `trusted: true` opens every grant of the
// principal and the input of the runs it starts.
std::string unusable_grant_warning(std::string const& principal, std::string const& ref, std::string const& why) {
    return "principal " + principal + ": every call to " + ref + " would be refused (" + why +
           "), so it is not listed. To let " + principal + " call it, name the arguments that say what it acts on " +
           "in protected_fields with `allowed_sources: [\"principal:" + principal + "\"]` (e.g. `protected_fields: " +
           "[{path: /account, allowed_sources: [\"principal:" + principal + "\"]}]`); or, weakening the policy, " +
           "grant it with `mutates: false` if it only reads, or mark the principal `trusted: true`";
}

// What holds between principals: one anonymous at most, a token each, grants their label allows.
void check_principals(reader& r, config const& c, std::vector<std::size_t> const& principal_at) {
    // Requests without credentials can be served as one principal only.
    std::optional<std::size_t> anonymous_at;
    for (std::size_t i = 0; i < c.principals.size(); ++i) {
        if (!c.principals[i].anonymous) continue;
        if (anonymous_at) {
            r.fail("duplicate_anonymous", "principals[" + std::to_string(principal_at[i]) + "] (" +
                                              c.principals[i].name + ") is anonymous, and so is principals[" +
                                              std::to_string(principal_at[*anonymous_at]) + "] (" +
                                              c.principals[*anonymous_at].name +
                                              "); requests without a token can be served as one principal only");
            break;
        }
        anonymous_at = i;
        r.warn("principal " + c.principals[i].name + " is anonymous: every client that can reach airlock " +
               (is_loopback(c.server.host) || c.server.unix_socket ? "on this machine" : "over the network") +
               " gets its grants without a token");
    }

    // Tokens are compared once all are read: two principals behind one token could not be told
    // apart, and the second would silently act with the first one's grants (or the reverse).
    for (std::size_t i = 0; i < c.principals.size(); ++i) {
        for (std::size_t k = 0; k < i; ++k) {
            auto const& a = c.principals[k];
            auto const& b = c.principals[i];
            if (!a.token.empty() && a.token == b.token) {
                r.fail("duplicate_token", "principals[" + std::to_string(principal_at[i]) + "] (" + b.name +
                                              ") has the same token as principals[" +
                                              std::to_string(principal_at[k]) + "] (" + a.name +
                                              "); each principal needs its own");
                break;
            }
        }
    }

    // A gateway principal's arguments carry one label; a grant the gates refuse under it is dead.
    for (auto const& pr : c.principals) {
        core::label whole{{"principal:" + pr.name}, pr.trusted ? core::trust::trusted : core::trust::untrusted,
                          core::sensitivity::public_};
        for (auto const& g : pr.manifest.tools)
            if (auto d = core::refused_whatever_the_arguments(g, whole); !d)
                r.warn(unusable_grant_warning(pr.name, g.ref.uri(), d.refusal()->detail));
    }
}

// Upstreams and providers that egress does not let airlock reach, and tool names two upstreams share.
void check_destinations(reader& r, config const& c) {
    if (c.upstreams.size() > 1)
        for (auto const& u : c.upstreams)
            if (u.prefix == tool_prefix::none)
                r.warn("upstream " + u.name + " has `prefix: none` beside other upstreams: a tool name two " +
                       "upstreams expose is withheld from both (logged when seen)");

    for (auto const& u : c.upstreams) {
        if (!c.egress.permits(u.destination))
            r.warn("upstream " + u.name + ": its destination " + core::to_string(u.destination) +
                   " is not in egress, so airlock never contacts it and every call to it will be refused "
                   "(add it to egress to allow it)");
    }
    for (auto const& pc : c.providers) {
        if (pc.kind != provider_kind::scripted && !c.egress.permits(pc.destination))
            r.warn("provider " + pc.name + ": its destination " + core::to_string(pc.destination) +
                   " is not in egress, so every model call to it will be refused (add it to egress to allow it)");
        // A local server (Ollama, llama.cpp) is usually written as localhost; the address it
        // resolves to is restricted and is connected to only when egress names it as well.
        auto const* remote = std::get_if<core::remote_destination>(&pc.destination);
        if (remote && remote->host == "localhost") {
            core::remote_destination v4{remote->scheme, "127.0.0.1", remote->port};
            if (!c.egress.permits(v4))
                r.warn("provider " + pc.name + ": localhost resolves to a loopback address, which is connected to "
                       "only when egress names it too (add " + core::to_string(v4) + ", or use it in base_url)");
        }
    }
}

// Approvals nobody can decide, grants no upstream serves.
void check_grants(reader& r, config const& c) {
    // Only an operator decides approvals (REST); without one, a run that asks waits for ever.
    if (std::none_of(c.principals.begin(), c.principals.end(), [](auto const& p) { return p.is_operator; })) {
        for (auto const& a : c.agents) {
            auto const g = std::find_if(a.manifest.tools.begin(), a.manifest.tools.end(),
                                        [](auto const& t) { return t.requires_approval; });
            if (g != a.manifest.tools.end())
                r.warn("agent " + a.name + ": " + g->ref.uri() + " requires approval, but no principal is an " +
                       "operator to decide it (mark one `operator: true`)");
        }
    }
    for (auto const& pc : c.principals) {
        for (auto const& g : pc.manifest.tools) {
            bool served = std::any_of(c.upstreams.begin(), c.upstreams.end(),
                                      [&](auto const& u) { return u.name == g.ref.server(); });
            if (!served)
                r.warn("principal " + pc.name + " is granted " + g.ref.uri() + ", but no upstream is named " +
                       g.ref.server());
        }
    }
}

// Mappings that name real principals, issuers egress lets airlock reach, a door that can be used.
void check_oauth(reader& r, config const& c) {
    if (!c.auth.oauth) return;
    auto const& o = *c.auth.oauth;
    for (auto const& [value, name] : o.principals) {
        auto const pr = std::find_if(c.principals.begin(), c.principals.end(), [&](auto const& p) { return p.name == name; });
        if (pr == c.principals.end()) {
            r.fail("unknown_principal", child_path("auth.oauth.principals", value) + " names " + in_quotes(name) +
                                            ", which the principals section does not define");
        } else if (pr->anonymous) {
            r.fail("conflicting_fields", child_path("auth.oauth.principals", value) + " names " + in_quotes(name) +
                                             ", an anonymous principal; a token would grant nothing more");
        }
    }
    for (auto const& [server, scope] : o.upstream_scopes)
        if (std::none_of(c.upstreams.begin(), c.upstreams.end(), [&](auto const& u) { return u.name == server; }))
            r.fail("invalid_name", child_path("auth.oauth.upstream_scopes", server) + " names " + in_quotes(server) +
                                       ", which the upstreams section does not define");
    for (auto const& i : o.issuers)
        if (!c.egress.permits(i.destination))
            r.warn("auth.oauth issuer " + i.issuer + ": its destination " + core::to_string(i.destination) +
                   " is not in egress, so its keys cannot be fetched and every OAuth token will be refused (add it "
                   "to egress to allow it)");
    if (c.server.unix_socket)
        r.warn("auth.oauth with a unix socket: the resource URL " + o.resource +
               " must be where a proxy in front forwards /mcp and /.well-known/oauth-protected-resource");
}

loaded load(fs::path const& file, env_lookup const& env) {
    loaded out;
    auto& c = out.c;
    std::error_code ec;
    auto absolute = fs::absolute(file, ec);
    c.source = (ec ? file : absolute).lexically_normal();
    c.base_dir = c.source.parent_path();
    c.journal.directory = c.base_dir / "var" / "journal";

    auto root = read_document(c.source, out.problems);
    if (!root) return out;
    // Looked up through a const reference only: yaml-cpp's non-const operator[] inserts the key.
    YAML::Node const& doc = *root;
    reader r(c.base_dir, env);
    if (r.mapping(doc, "", {"server", "journal", "signing", "upstreams", "egress", "principals", "providers",
                                 "agents", "logging", "metrics", "runs", "auth"})) {
        std::vector<std::size_t> principal_at;
        read_sections(r, doc, c, principal_at);
        check_principals(r, c, principal_at);
        check_destinations(r, c);
        check_grants(r, c);
        check_oauth(r, c);
    }
    out.problems = std::move(r.problems);
    c.warnings = std::move(r.warnings);
    c.secrets = std::move(r.secrets);
    return out;
}

}  // namespace
}  // namespace config_detail

namespace fs = std::filesystem;

core::result<config> load_config(fs::path const& file, env_lookup const& env) {
    auto l = config_detail::load(file, env);
    if (!l.problems.empty()) return l.problems.front();
    return std::move(l.c);
}

std::vector<core::error> config_problems(fs::path const& file, env_lookup const& env) {
    return config_detail::load(file, env).problems;
}

}  // namespace airlock::service
