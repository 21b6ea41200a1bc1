#include "service/config/sections.hpp"

#include "service/config/reader.hpp"
#include "core/tool_id.hpp"
#include "mcp/client/http_transport.hpp"

namespace airlock::service::config_detail {

namespace {

bool env_name_ok(std::string const& name) {
    return !name.empty() && name.find('=') == std::string::npos && name.find('\0') == std::string::npos;
}

// The same search the stdio transport makes when the child starts, so `airlock check` can tell.
// Only a warning: the PATH airlock runs with under systemd need not be the one `check` sees.
void check_executable(reader& r, mcp::stdio_options const& o, std::string const& p) {
    std::string path_var;
    if (auto it = o.env.find("PATH"); it != o.env.end()) path_var = it->second;
    else path_var = r.getenv("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
    if (!found_executable(o.argv[0], path_var))
        r.warn(p + " command " + in_quotes(o.argv[0]) + " is not an executable file" +
               (o.argv[0].find('/') == std::string::npos ? " in PATH" : "") + " here; the upstream will not start");
}

std::vector<std::string> read_argv(reader& r, YAML::Node const& v, std::string const& p) {
    if (!v.IsSequence() || v.size() == 0) {
        r.fail(v.IsSequence() ? "empty_field" : "wrong_type",
               p + " must be a non-empty sequence of strings, not " + (v.IsSequence() ? "an empty one" : describe(v)));
        return {};
    }
    std::vector<std::string> argv;
    bool ok = true;
    for (std::size_t i = 0; i < v.size(); ++i) {
        auto ip = index_path(p, i);
        auto s = i == 0 ? r.text(v[i], ip) : r.string(v[i], ip);
        if (s) argv.push_back(*s);
        else ok = false;
    }
    if (!ok) return {};
    // A relative path with a '/' is resolved like every other path in the file; a bare name is
    // looked up in PATH when the child starts. The egress entry must name the same thing.
    if (argv[0].find('/') != std::string::npos) argv[0] = r.resolve(argv[0]).string();
    return argv;
}

// `stdio: [command, args...]` is short for `stdio: {argv: [command, args...]}`.
void read_stdio_env(reader& r, YAML::Node const& n, std::string const& p, mcp::stdio_options& o) {
    std::map<std::string, std::string> written_at;  // variable → key path, for duplicates across env/env_from
    auto note = [&](std::string const& name, std::string const& path) {
        if (!env_name_ok(name)) {
            r.fail("invalid_value", path + ": an environment variable name must be non-empty and contain no '='");
            return false;
        }
        if (auto it = written_at.find(name); it != written_at.end()) {
            r.fail("duplicate_key", path + " sets " + name + ", already set by " + it->second);
            return false;
        }
        written_at.emplace(name, path);
        return true;
    };
    if (auto const v = n["env"]) {
        if (auto entries = r.entries(v, p + ".env")) {
            for (auto const& [name, value] : *entries) {
                auto ep = child_path(p + ".env", name);
                if (!note(name, ep)) continue;
                auto s = read_secret_value(r, value, ep);
                if (!s) continue;
                if (s->find('\0') != std::string::npos) {
                    r.fail("invalid_value", ep + " has a value with a NUL byte");
                    continue;
                }
                o.env[name] = std::move(*s);
            }
        }
    }
    if (auto const v = n["env_from"]) {
        if (auto entries = r.entries(v, p + ".env_from")) {
            for (auto const& [name, value] : *entries) {
                auto ep = child_path(p + ".env_from", name);
                if (!note(name, ep)) continue;
                auto var = r.text(value, ep);
                if (!var) continue;
                auto got = r.getenv(*var);
                if (!got) {
                    r.fail("env_unset", ep + " copies " + *var + ", which is not set in airlock's environment");
                    continue;
                }
                r.note_secret(*got, ep);
                o.env[name] = std::move(*got);
            }
        }
    }
}

void read_stdio(reader& r, YAML::Node const& n, std::string const& p, upstream_config& u) {
    auto& o = u.stdio;
    o.server_name = u.name;
    // The configuration's directory, so relative arguments (a script next to the file) work
    // wherever airlock was started from.
    o.cwd = r.base().string();
    if (n.IsSequence()) {
        o.argv = read_argv(r, n, p);
    } else if (r.mapping(n, p, {"argv", "env", "env_from", "cwd"})) {
        if (auto const v = n["argv"]; !v) r.fail("missing_field", p + ".argv is required (the command and its arguments)");
        else o.argv = read_argv(r, v, p + ".argv");
        read_stdio_env(r, n, p, o);
        if (auto const v = n["cwd"]) {
            if (auto d = r.path(v, p + ".cwd")) {
                std::error_code ec;
                if (!fs::is_directory(*d, ec)) r.fail("file_missing", p + ".cwd: " + show_path(*d) + " is not a directory");
                else o.cwd = d->string();
            }
        }
    }
    if (o.argv.empty()) return;
    u.destination = core::process_destination{o.argv[0]};
    check_executable(r, o, p);
}

void read_http(reader& r, YAML::Node const& n, std::string const& p, upstream_config& u) {
    auto& o = u.http;
    o.server_name = u.name;
    auto up = p + ".url";
    auto url = r.text(n["url"], up);
    if (url) {
        auto e = mcp::parse_http_url(*url);
        if (!e) {
            r.fail("invalid_url", up + ": " + e.error().message);
        } else {
            o.url = *url;
            u.destination = core::remote_destination{e->scheme, core::ascii_lowercase(e->host), e->port};
        }
    }
    if (auto const v = n["headers"]) {
        read_headers(r, v, p + ".headers", o.headers, [](std::string const& name) {
            return mcp::is_transport_header(name) ? std::string("is set by the MCP transport itself and cannot be configured")
                                                  : std::string();
        });
    }
    if (auto const v = n["tls"]) read_tls(r, v, p + ".tls", url, u.name, o.verify_peer, o.ca_file);
}

}  // namespace

std::optional<upstream_config> read_upstream(reader& r, YAML::Node const& n, std::string const& p) {
    if (!r.mapping(n, p, {"name", "stdio", "url", "headers", "tls", "prefix", "deadline", "optional", "max_message_bytes"}))
        return std::nullopt;
    auto before = r.problems.size();
    upstream_config u;
    if (auto const v = n["name"]; !v) {
        r.fail("missing_field", p + ".name is required");
    } else if (auto name = r.string(v, p + ".name")) {
        if (auto problem = core::tool_id_component_problem(*name, p + ".name"); !problem.empty())
            r.fail("invalid_name", problem + " (it becomes the server part of tool://server/name)");
        else
            u.name = *name;
    }
    bool has_stdio = static_cast<bool>(n["stdio"]);
    bool has_url = static_cast<bool>(n["url"]);
    if (has_stdio && has_url) {
        r.fail("conflicting_fields", p + " sets both stdio and url; an upstream is either a child process or an "
                                         "HTTP endpoint");
    } else if (!has_stdio && !has_url) {
        r.fail("missing_field", p + " needs stdio (a command to run) or url (an MCP endpoint)");
    } else if (has_stdio) {
        u.kind = upstream_kind::stdio;
        for (auto key : {"headers", "tls"})
            if (n[key]) r.fail("conflicting_fields", p + "." + key + " applies only to url upstreams");
        read_stdio(r, n["stdio"], p + ".stdio", u);
        if (auto const v = n["max_message_bytes"]) {
            if (auto b = r.size(v, p + ".max_message_bytes", 1024)) u.stdio.max_message_bytes = *b;
        }
    } else {
        u.kind = upstream_kind::http;
        if (n["max_message_bytes"]) r.fail("conflicting_fields", p + ".max_message_bytes applies only to stdio upstreams");
        read_http(r, n, p, u);
    }
    if (auto const v = n["prefix"]) {
        if (auto s = r.choice(v, p + ".prefix", {"server", "none"}))
            u.prefix = *s == "server" ? tool_prefix::server : tool_prefix::none;
    }
    if (auto const v = n["deadline"]) {
        if (auto d = r.duration(v, p + ".deadline", milliseconds(1))) u.deadline = *d;
    }
    if (auto const v = n["optional"]) {
        if (auto b = r.boolean(v, p + ".optional")) u.optional = *b;
    }
    if (r.problems.size() != before) return std::nullopt;
    return u;
}

}  // namespace airlock::service::config_detail
