#include "service/config/sections.hpp"

#include "service/config/reader.hpp"
#include "service/http/forwarded.hpp"

#include <arpa/inet.h>

#include <charconv>

namespace airlock::service::config_detail {

namespace {

bool host_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

// "HOST:PORT", with an IPv6 host in brackets.
std::optional<std::pair<std::string, std::uint16_t>> parse_listen(std::string_view s) {
    std::string host;
    std::string_view port;
    if (s.starts_with('[')) {
        auto close = s.find(']');
        if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') return std::nullopt;
        host = std::string(s.substr(1, close - 1));
        unsigned char buf[16];
        if (::inet_pton(AF_INET6, host.c_str(), buf) != 1) return std::nullopt;
        port = s.substr(close + 2);
    } else {
        auto colon = s.rfind(':');
        if (colon == std::string_view::npos || s.find(':') != colon) return std::nullopt;
        host = std::string(s.substr(0, colon));
        port = s.substr(colon + 1);
        if (host.empty() || !std::all_of(host.begin(), host.end(), host_name_char)) return std::nullopt;
    }
    if (!all_digits(port) || port.size() > 5) return std::nullopt;
    unsigned p = 0;
    std::from_chars(port.data(), port.data() + port.size(), p);
    if (p > 65535) return std::nullopt;
    return std::pair{host, static_cast<std::uint16_t>(p)};
}

// An Origin header value: scheme://host[:port], nothing after it.
std::optional<std::string> parse_origin(std::string_view s) {
    auto lowered = core::ascii_lowercase(s);
    std::string_view rest = lowered;
    if (rest.starts_with("http://")) rest.remove_prefix(7);
    else if (rest.starts_with("https://")) rest.remove_prefix(8);
    else return std::nullopt;
    if (rest.empty()) return std::nullopt;
    bool ok = std::all_of(rest.begin(), rest.end(), [](char c) {
        return host_name_char(c) || c == ':' || c == '[' || c == ']';
    });
    if (!ok) return std::nullopt;
    return lowered;
}

// server.sessions. Without max_per_principal a principal may hold 64 sessions, or all of them when
// max is smaller. An MCP client holds one session per server it talks to, so 64 leaves room for a
// busy tenant (many agents sharing one token), while one that leaks sessions (reconnecting without
// DELETE) fills a sixteenth of the default table instead of all of it.
void read_sessions(reader& r, YAML::Node const& n, session_limits& s) {
    std::string const p = "server.sessions";
    if (!r.mapping(n, p, {"max", "max_per_principal", "idle_timeout"})) return;
    if (auto const v = n["max"]) {
        if (auto c = r.count(v, p + ".max", 1, 1'000'000)) s.max = *c;
    }
    if (auto const v = n["max_per_principal"]) {
        if (auto c = r.count(v, p + ".max_per_principal", 1, 1'000'000)) {
            if (*c > s.max)
                r.fail("invalid_value", p + ".max_per_principal is " + std::to_string(*c) + "; it must not exceed " + p +
                                            ".max (" + std::to_string(s.max) + ")");
            else
                s.max_per_principal = *c;
        }
    } else {
        s.max_per_principal = std::min(s.max_per_principal, s.max);
    }
    if (auto const v = n["idle_timeout"]) {
        if (auto d = r.duration(v, p + ".idle_timeout", milliseconds(1000))) s.idle_timeout = *d;
    }
}

// listen, or unix_socket and its mode.
void read_listen(reader& r, YAML::Node const& n, std::string const& p, server_config& s) {
    if (auto const v = n["listen"]) {
        if (auto text = r.text(v, p + ".listen")) {
            if (auto hp = parse_listen(*text)) {
                s.host = hp->first;
                s.port = hp->second;
            } else {
                r.fail("invalid_value", p + ".listen is " + in_quotes(*text) +
                                            "; expected HOST:PORT, e.g. 127.0.0.1:8787 or [::1]:8787");
            }
        }
    }
    if (auto const v = n["unix_socket"]) {
        if (n["listen"])
            r.fail("conflicting_fields", p + " sets both listen and unix_socket; airlock listens on one of them");
        else if (auto path = r.path(v, p + ".unix_socket"))
            s.unix_socket = *path;
    }
    if (auto const v = n["unix_socket_mode"]) {
        auto path = p + ".unix_socket_mode";
        if (!n["unix_socket"]) {
            r.fail("conflicting_fields", path + " applies only with server.unix_socket");
        } else if (!v.IsScalar() || (classify(v) != scalar_kind::string && classify(v) != scalar_kind::integer)) {
            r.fail("wrong_type", path + " must be octal permissions like \"0660\", not " + describe(v));
        } else {
            // Read as octal whatever the YAML type: 0660 is an integer to YAML 1.2, but everybody who
            // writes it means chmod's 0660.
            std::string_view digits = v.Scalar();
            if (digits.starts_with("0o")) digits.remove_prefix(2);
            unsigned mode = 0;
            bool ok = !digits.empty() && digits.size() <= 4 &&
                      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; });
            if (ok) std::from_chars(digits.data(), digits.data() + digits.size(), mode, 8);
            if (!ok || mode > 0777)
                r.fail("invalid_value",
                       path + " is " + in_quotes(v.Scalar()) + "; expected octal permissions like \"0660\"");
            else
                s.unix_socket_mode = mode;
        }
    }
}

// threads, the size limits and timeouts of a request, and the connection caps.
void read_limits(reader& r, YAML::Node const& n, std::string const& p, server_config& s) {
    if (auto const v = n["threads"]) {
        if (auto t = r.count(v, p + ".threads", 1, 1024)) s.threads = static_cast<unsigned>(*t);
    }
    if (auto const v = n["header_limit"]) {
        if (auto b = r.size(v, p + ".header_limit", 1024)) s.header_limit = *b;
    }
    if (auto const v = n["body_limit"]) {
        if (auto b = r.size(v, p + ".body_limit", 1024)) s.body_limit = *b;
    }
    if (auto const v = n["read_timeout"]) {
        if (auto d = r.duration(v, p + ".read_timeout", milliseconds(1))) s.read_timeout = *d;
    }
    if (auto const v = n["idle_timeout"]) {
        if (auto d = r.duration(v, p + ".idle_timeout", milliseconds(1))) s.idle_timeout = *d;
    }
    if (auto const v = n["max_connections"]) {
        if (auto c = r.count(v, p + ".max_connections", 1, 1'000'000)) s.max_connections = *c;
    }
    // A quarter by default: one client (a script gone wrong, or someone holding connections open to
    // lock others out) fills at most that, and a proxy in front that speaks for everyone is
    // trusted_proxies, which the cap leaves alone.
    s.max_connections_per_client = std::max<std::size_t>(1, s.max_connections / 4);
    if (auto const v = n["max_connections_per_client"]) {
        if (auto c = r.count(v, p + ".max_connections_per_client", 1, 1'000'000)) {
            if (*c > s.max_connections)
                r.fail("invalid_value", p + ".max_connections_per_client is " + std::to_string(*c) +
                                            "; it must not exceed " + p + ".max_connections (" +
                                            std::to_string(s.max_connections) + ")");
            else
                s.max_connections_per_client = *c;
        }
    }
}

void read_tls_files(reader& r, YAML::Node const& n, std::string const& p, server_config& s) {
    if (auto const v = n["tls"]) {
        auto tp = p + ".tls";
        if (r.mapping(v, tp, {"cert_file", "key_file"})) {
            tls_files t;
            bool ok = true;
            for (auto [key, target] : {std::pair{"cert_file", &t.cert_file}, std::pair{"key_file", &t.key_file}}) {
                auto kp = tp + "." + key;
                if (auto const f = v[key]; !f) {
                    r.fail("missing_field", kp + " is required");
                    ok = false;
                } else if (auto got = r.file(f, kp, max_manifest_bytes)) {
                    *target = got->first;
                } else {
                    ok = false;
                }
            }
            if (ok) {
                if (readable_by_others(t.key_file))
                    r.warn(tp + ".key_file " + show_path(t.key_file) + " can be read by group or others");
                s.tls = std::move(t);
            }
        }
    }
}

// allowed_origins and allowed_hosts, as the endpoints compare them: lowercased.
void read_door(reader& r, YAML::Node const& n, std::string const& p, server_config& s) {
    if (auto const v = n["allowed_origins"]) {
        if (auto list = r.strings(v, p + ".allowed_origins")) {
            for (auto const& [ip, o] : *list) {
                if (o == "*")
                    r.fail("invalid_value", ip + " is \"*\"; list each origin exactly (a wildcard would let any web "
                                               "page that a user visits call airlock)");
                else if (auto origin = parse_origin(o))
                    s.allowed_origins.push_back(std::move(*origin));
                else
                    r.fail("invalid_value", ip + " is " + in_quotes(o) +
                                                "; expected an origin like \"https://app.example.com\" "
                                                "(scheme, host, optional port, no path)");
            }
        }
    }
    if (auto const v = n["allowed_hosts"]) {
        if (auto list = r.strings(v, p + ".allowed_hosts")) {
            for (auto const& [ip, h] : *list) {
                bool ok = std::all_of(h.begin(), h.end(), [](char c) {
                    return host_name_char(c) || c == ':' || c == '[' || c == ']';
                });
                if (h == "*")
                    r.fail("invalid_value", ip + " is \"*\"; list each host exactly (a wildcard would undo the "
                                               "DNS-rebinding protection)");
                else if (!ok)
                    r.fail("invalid_value", ip + " is " + in_quotes(h) +
                                                "; expected a Host header value like \"airlock.internal\" or "
                                                "\"airlock.internal:8443\"");
                else
                    s.allowed_hosts.push_back(core::ascii_lowercase(h));
            }
        }
    }
}

// trusted_proxies and the one header they write the client into.
void read_proxies(reader& r, YAML::Node const& n, std::string const& p, server_config& s) {
    if (auto const v = n["trusted_proxies"]) {
        if (auto list = r.strings(v, p + ".trusted_proxies")) {
            for (auto const& [ip, a] : *list) {
                if (a == "unix") {
                    s.trusted_proxies.push_back(a);
                } else if (auto net = parse_ip_network(a)) {
                    s.trusted_proxies.push_back(to_string(*net));
                } else {
                    r.fail("invalid_value", ip + " is " + in_quotes(a) +
                                                "; expected an IP address (127.0.0.1, ::1), a network in CIDR form "
                                                "(10.0.0.0/8, fd00::/8, no host bits set) or \"unix\" (not a name)");
                }
            }
        }
    }
    if (auto const v = n["forwarded_header"]) {
        auto const path = p + ".forwarded_header";
        if (!v.IsScalar() || (core::ascii_lowercase(v.Scalar()) != "x-forwarded-for" && core::ascii_lowercase(v.Scalar()) != "forwarded"))
            r.fail("invalid_value", path + " must be \"X-Forwarded-For\" or \"Forwarded\" (the header your proxy "
                                           "writes), not " + describe(v));
        else
            s.forwarded_header = core::ascii_lowercase(v.Scalar());
    }
}

// drain_grace, keep-alive, list pages, MRTR retries, sessions and busy polling.
void read_timings(reader& r, YAML::Node const& n, std::string const& p, server_config& s) {
    if (auto const v = n["drain_grace"]) {
        if (auto d = r.duration(v, p + ".drain_grace", milliseconds(0))) s.drain_grace = *d;
    }
    if (auto const v = n["sse_keep_alive"]) {
        if (auto d = r.duration(v, p + ".sse_keep_alive", milliseconds(100))) s.sse_keep_alive = *d;
    }
    if (auto const v = n["list_page_size"]) {
        if (auto c = r.count(v, p + ".list_page_size", 1, 10'000)) s.list_page_size = *c;
    }
    if (auto const v = n["input_request_ttl"]) {
        if (auto d = r.duration(v, p + ".input_request_ttl", milliseconds(1000))) s.input_request_ttl = *d;
    }
    // Written with nothing under it (its entries commented out), it means its defaults.
    if (auto const v = n["sessions"]; v && !v.IsNull()) read_sessions(r, v, s.sessions);
    if (auto const v = n["busy_poll"]) {
        if (auto d = r.busy_poll(v, p + ".busy_poll")) s.busy_poll = *d;
        // With threads left to the default, `airlock serve --threads 1` may still make it one:
        // serve checks the count it runs with. Only a contradiction written in the file is refused here.
        if (s.busy_poll.count() > 0 && s.threads > 1)
            r.fail("invalid_value", p + ".busy_poll needs server.threads: 1; with more I/O threads, the one asleep in "
                                        "the event poll takes the events the polling one waits for");
    }

}

}  // namespace

bool is_loopback(std::string const& host) {
    if (host == "localhost" || host == "::1") return true;
    unsigned char buf[4];
    return ::inet_pton(AF_INET, host.c_str(), buf) == 1 && buf[0] == 127;
}

void read_server(reader& r, YAML::Node const& n, server_config& s) {
    std::string const p = "server";
    if (!r.mapping(n, p, {"listen", "unix_socket", "unix_socket_mode", "threads", "header_limit", "body_limit",
                          "read_timeout", "idle_timeout", "max_connections", "max_connections_per_client", "tls", "allowed_origins",
                          "allowed_hosts", "trusted_proxies", "forwarded_header", "drain_grace", "sse_keep_alive", "input_request_ttl",
                          "list_page_size", "sessions", "busy_poll"}))
        return;

    read_listen(r, n, p, s);
    read_limits(r, n, p, s);
    read_tls_files(r, n, p, s);
    read_door(r, n, p, s);
    read_proxies(r, n, p, s);
    read_timings(r, n, p, s);

    if (!s.unix_socket && !s.tls && !is_loopback(s.host) && s.trusted_proxies.empty())
        r.warn("server.listen " + s.host + ":" + std::to_string(s.port) +
               " is not loopback and server.tls is not set: bearer tokens would cross the network in clear text");
}

}  // namespace airlock::service::config_detail
