#include "service/config/config.hpp"

#include "core/secrets.hpp"
#include "core/sha256.hpp"
#include "core/strict_yaml.hpp"
#include "service/http/forwarded.hpp"
#include "service/config/keys.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <yaml-cpp/yaml.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

namespace airlock::service {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

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

std::string_view to_string(upstream_kind k) noexcept { return k == upstream_kind::stdio ? "stdio" : "http"; }
std::string_view to_string(tool_prefix p) noexcept { return p == tool_prefix::server ? "server" : "none"; }
std::string_view to_string(provider_kind k) noexcept {
    switch (k) {
        case provider_kind::openai: return "openai";
        case provider_kind::anthropic: return "anthropic";
        case provider_kind::scripted: return "scripted";
    }
    return "openai";
}
std::string_view to_string(log_format f) noexcept { return f == log_format::json ? "json" : "text"; }
std::string_view to_string(log_level l) noexcept {
    switch (l) {
        case log_level::trace: return "trace";
        case log_level::debug: return "debug";
        case log_level::info: return "info";
        case log_level::warn: return "warn";
        case log_level::error: return "error";
    }
    return "info";
}

std::optional<std::size_t> parse_size(std::string_view text) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0 || digits > 19) return std::nullopt;
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + digits, n);
    if (ec != std::errc{}) return std::nullopt;
    auto unit = text.substr(digits);
    if (unit.starts_with(' ')) unit.remove_prefix(1);
    static constexpr std::pair<std::string_view, std::uint64_t> units[] = {
        {"", 1},
        {"B", 1},
        {"KiB", std::uint64_t{1} << 10},
        {"MiB", std::uint64_t{1} << 20},
        {"GiB", std::uint64_t{1} << 30},
        {"TiB", std::uint64_t{1} << 40},
        {"KB", 1000},
        {"MB", 1000'000},
        {"GB", 1000'000'000},
        {"TB", 1000'000'000'000},
    };
    for (auto const& [name, scale] : units) {
        if (unit != name) continue;
        if (n > std::numeric_limits<std::size_t>::max() / scale) return std::nullopt;
        return static_cast<std::size_t>(n * scale);
    }
    return std::nullopt;
}

std::string key_id_of(std::string_view public_key_raw) { return derived_key_id(public_key_raw); }

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowercase(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = lower(c);
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

std::string_view trim(std::string_view s) {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

using core::yaml::all_digits;
using core::yaml::child_path;
using core::yaml::classify;
using core::yaml::describe;
using core::yaml::in_quotes;
using core::yaml::index_path;
using core::yaml::scalar_kind;
using core::yaml::shape;

std::string show_path(fs::path const& p) { return in_quotes(p.string()); }

// ── files ─────────────────────────────────────────────────────────────────────────────────────

struct file_text {
    std::optional<std::string> text;
    std::string problem_code;  // "file_missing", "file_unreadable", "file_too_large"
    std::string problem;       // why it could not be read, without its contents
};

file_text read_text_file(fs::path const& p, std::size_t max_bytes) {
    std::error_code ec;
    auto status = fs::status(p, ec);
    if (ec || !fs::exists(status)) return {std::nullopt, "file_missing", "does not exist"};
    if (fs::is_directory(status)) return {std::nullopt, "file_unreadable", "is a directory, not a file"};
    std::ifstream in(p, std::ios::binary);
    if (!in) return {std::nullopt, "file_unreadable", "cannot be read (" + std::string(std::strerror(errno)) + ")"};
    std::string text;
    char buf[8192];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, static_cast<std::size_t>(in.gcount()));
        if (text.size() > max_bytes)
            return {std::nullopt, "file_too_large", "is larger than " + std::to_string(max_bytes) + " bytes"};
    }
    if (in.bad()) return {std::nullopt, "file_unreadable", "could not be read to the end"};
    return {std::move(text), "", ""};
}

// True when group or others may read the file: a secret there is not a secret for long.
bool readable_by_others(fs::path const& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH | S_IWGRP | S_IWOTH)) != 0;
}

bool runnable(fs::path const& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// The same search stdio_transport does at start, so `airlock check` can say so early.
bool found_executable(std::string const& argv0, std::string const& path_var) {
    if (argv0.find('/') != std::string::npos) return runnable(argv0);
    std::size_t start = 0;
    for (;;) {
        auto end = path_var.find(':', start);
        auto dir = path_var.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (runnable(fs::path(dir.empty() ? "." : dir) / argv0)) return true;
        if (end == std::string::npos) return false;
        start = end + 1;
    }
}

constexpr std::size_t max_config_bytes = 1024 * 1024;
constexpr std::size_t max_secret_bytes = 64 * 1024;
constexpr std::size_t max_manifest_bytes = 4 * 1024 * 1024;

// A bearer token shorter than this can be guessed online; `openssl rand -hex 32` makes a good one.
constexpr std::size_t min_token_length = 16;

// ── the reader ────────────────────────────────────────────────────────────────────────────────

// The configuration's own typed values (paths, files, durations, sizes, secrets), on top of the
// strict reader every YAML document in airlock uses.
class reader : public core::yaml::reader {
public:
    reader(fs::path base, env_lookup const& env)
        : core::yaml::reader({.document = "the configuration"}), base_(std::move(base)), env_(env) {}

    std::vector<std::string> warnings;
    std::vector<std::string> secrets;  // values read from secret sources, for the log to redact

    fs::path const& base() const { return base_; }
    std::optional<std::string> getenv(std::string const& name) const { return env_ ? env_(name) : std::nullopt; }

    void warn(std::string message) { warnings.push_back(std::move(message)); }

    // A value read from a secret source (an environment variable or a file) at `path`.
    void note_secret(std::string value, std::string const& path) {
        if (!value.empty() && value.size() < core::secret_set::min_bytes)
            warn(path + " gives a value shorter than " + std::to_string(core::secret_set::min_bytes) +
                 " bytes, too short to be hidden in airlock's logs, replies and journal");
        secrets.push_back(std::move(value));
    }

    // A mapping whose keys are the user's own (environment variable or header names): the keys in
    // file order, each a string and written once.
    std::optional<std::vector<std::pair<std::string, YAML::Node>>> entries(YAML::Node const& n,
                                                                           std::string const& path) {
        if (!n.IsMap()) {
            fail("wrong_type", path + " must be a mapping, not " + describe(n));
            return std::nullopt;
        }
        std::set<std::string> seen;
        std::vector<std::pair<std::string, YAML::Node>> out;
        for (auto const& kv : n)
            if (key_ok(kv.first, path, seen)) out.emplace_back(kv.first.Scalar(), kv.second);
        return out;
    }

    // A value that may be a credential: any scalar, taken as written. Its content is never shown.
    std::optional<std::string> secret_scalar(YAML::Node const& n, std::string const& path) {
        if (!n.IsScalar() || classify(n) == scalar_kind::null_ || classify(n) == scalar_kind::other_tag) {
            fail("wrong_type", path + " must be a string, {env: NAME} or {file: PATH}, not " + shape(n));
            return std::nullopt;
        }
        return n.Scalar();
    }

    std::optional<std::uint64_t> count(YAML::Node const& n, std::string const& path, std::uint64_t min,
                                       std::uint64_t max) {
        auto out_of_range = [&] {
            fail("invalid_value", path + " is " + n.Scalar() + "; it must be between " + std::to_string(min) + " and " +
                                      std::to_string(max));
            return std::nullopt;
        };
        bool const integer = n.IsScalar() && classify(n) == scalar_kind::integer;
        // -1 is a whole number by type and wrong by value: say which values fit.
        if (integer && n.Scalar().starts_with('-')) return out_of_range();
        if (!integer || !all_digits(n.Scalar())) {
            fail("wrong_type", path + " must be a whole number written in digits, not " + describe(n));
            return std::nullopt;
        }
        std::uint64_t v = 0;
        auto const& s = n.Scalar();
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc{} || v < min || v > max) return out_of_range();
        return v;
    }

    std::optional<milliseconds> duration(YAML::Node const& n, std::string const& path, milliseconds min) {
        if (!n.IsScalar() || (classify(n) != scalar_kind::string && classify(n) != scalar_kind::integer)) {
            fail("wrong_type", path + " must be a duration like \"250ms\", \"30s\", \"5m\" or \"1h\", not " +
                                   describe(n));
            return std::nullopt;
        }
        auto d = parse_duration(n.Scalar());
        if (!d) {
            std::string hint = all_digits(n.Scalar()) ? " (write the unit, e.g. \"" + n.Scalar() + "s\")" : "";
            fail("invalid_duration", path + " is " + in_quotes(n.Scalar()) +
                                         ", not a duration like \"250ms\", \"30s\", \"5m\" or \"1h\"" + hint);
            return std::nullopt;
        }
        if (*d < min) {
            fail("invalid_value", path + " is " + n.Scalar() + "; it must be at least " + format_duration(min));
            return std::nullopt;
        }
        return d;
    }

    std::optional<std::chrono::microseconds> busy_poll(YAML::Node const& n, std::string const& path) {
        auto d = n.IsScalar() ? parse_short_duration(n.Scalar(), std::chrono::milliseconds(10)) : std::nullopt;
        if (!d) fail("invalid_duration", path + " must be a duration from \"0us\" to \"10ms\", like \"300us\", not " +
                                             describe(n));
        return d;
    }

    std::optional<std::size_t> size(YAML::Node const& n, std::string const& path, std::size_t min) {
        if (!n.IsScalar() || (classify(n) != scalar_kind::string && classify(n) != scalar_kind::integer)) {
            fail("wrong_type", path + " must be a size like \"64KiB\", \"4MiB\" or \"1GiB\", not " + describe(n));
            return std::nullopt;
        }
        auto s = parse_size(n.Scalar());
        if (!s) {
            fail("invalid_size", path + " is " + in_quotes(n.Scalar()) +
                                     ", not a size like 4096, \"64KiB\", \"4MiB\", \"1GiB\" or \"10MB\"");
            return std::nullopt;
        }
        if (*s < min) {
            fail("invalid_value", path + " is " + n.Scalar() + "; it must be at least " + std::to_string(min) + " bytes");
            return std::nullopt;
        }
        return s;
    }

    // A path; relative ones are resolved against the configuration file's directory, so the same
    // file means the same thing whatever directory airlock is started from.
    std::optional<fs::path> path(YAML::Node const& n, std::string const& key_path) {
        auto s = text(n, key_path);
        if (!s) return std::nullopt;
        if (s->find('\0') != std::string::npos) {
            fail("invalid_value", key_path + " contains a NUL byte");
            return std::nullopt;
        }
        return resolve(*s);
    }

    fs::path resolve(std::string const& p) const {
        fs::path out(p);
        if (out.is_relative()) out = base_ / out;
        return out.lexically_normal();
    }

    // A path to a file that must exist and be readable; its contents are returned.
    std::optional<std::pair<fs::path, std::string>> file(YAML::Node const& n, std::string const& key_path,
                                                         std::size_t max_bytes) {
        auto p = path(n, key_path);
        if (!p) return std::nullopt;
        auto got = read_text_file(*p, max_bytes);
        if (!got.text) {
            fail(got.problem_code, key_path + ": " + show_path(*p) + " " + got.problem);
            return std::nullopt;
        }
        return std::pair{*p, std::move(*got.text)};
    }

    // A sequence of non-blank strings.
    std::optional<std::vector<std::pair<std::string, std::string>>> strings(YAML::Node const& n,
                                                                            std::string const& path) {
        if (!sequence(n, path)) return std::nullopt;
        std::vector<std::pair<std::string, std::string>> out;  // (item path, value)
        bool ok = true;
        for (std::size_t i = 0; i < n.size(); ++i) {
            auto item_path = index_path(path, i);
            if (auto s = text(n[i], item_path)) out.emplace_back(item_path, std::move(*s));
            else ok = false;
        }
        if (!ok) return std::nullopt;
        return out;
    }

    // One of `choices`, exactly.
    std::optional<std::string> choice(YAML::Node const& n, std::string const& path,
                                      std::initializer_list<std::string_view> choices) {
        auto s = string(n, path);
        if (!s) return std::nullopt;
        if (std::find(choices.begin(), choices.end(), *s) != choices.end()) return s;
        std::string list;
        for (auto c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
        fail("invalid_value", path + " is " + in_quotes(*s) + "; expected one of: " + list);
        return std::nullopt;
    }

private:
    fs::path base_;
    env_lookup const& env_;
};

// ── server ────────────────────────────────────────────────────────────────────────────────────

bool host_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

bool is_loopback(std::string const& host) {
    if (host == "localhost" || host == "::1") return true;
    unsigned char buf[4];
    return ::inet_pton(AF_INET, host.c_str(), buf) == 1 && buf[0] == 127;
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
    auto lowered = lowercase(s);
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

void read_server(reader& r, YAML::Node const& n, server_config& s) {
    std::string const p = "server";
    if (!r.mapping(n, p, {"listen", "unix_socket", "unix_socket_mode", "threads", "header_limit", "body_limit",
                          "read_timeout", "idle_timeout", "max_connections", "max_connections_per_client", "tls", "allowed_origins",
                          "allowed_hosts", "trusted_proxies", "forwarded_header", "drain_grace", "sse_keep_alive", "input_request_ttl",
                          "list_page_size", "sessions", "busy_poll"}))
        return;

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
                    s.allowed_hosts.push_back(lowercase(h));
            }
        }
    }
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
        if (!v.IsScalar() || (lowercase(v.Scalar()) != "x-forwarded-for" && lowercase(v.Scalar()) != "forwarded"))
            r.fail("invalid_value", path + " must be \"X-Forwarded-For\" or \"Forwarded\" (the header your proxy "
                                           "writes), not " + describe(v));
        else
            s.forwarded_header = lowercase(v.Scalar());
    }
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

    if (!s.unix_socket && !s.tls && !is_loopback(s.host) && s.trusted_proxies.empty())
        r.warn("server.listen " + s.host + ":" + std::to_string(s.port) +
               " is not loopback and server.tls is not set: bearer tokens would cross the network in clear text");
}

// ── journal ───────────────────────────────────────────────────────────────────────────────────

void read_journal(reader& r, YAML::Node const& n, store::lmdb_options& j) {
    std::string const p = "journal";
    if (!r.mapping(n, p, {"dir", "map_size", "durability", "sync_interval", "max_batch"})) return;
    if (auto const v = n["dir"]) {
        if (auto d = r.path(v, p + ".dir")) {
            std::error_code ec;
            if (fs::exists(*d, ec) && !fs::is_directory(*d, ec))
                r.fail("invalid_value", p + ".dir: " + show_path(*d) + " exists and is not a directory");
            else
                j.directory = *d;
        }
    }
    if (auto const v = n["map_size"]) {
        if (auto s = r.size(v, p + ".map_size", std::size_t{1} << 20)) j.map_size = *s;
    }
    if (auto const v = n["durability"]) {
        if (auto d = r.choice(v, p + ".durability", {"durable", "fast"}))
            j.mode = *d == "durable" ? store::durability::durable : store::durability::fast;
    }
    if (auto const v = n["sync_interval"]) {
        if (auto d = r.duration(v, p + ".sync_interval", milliseconds(1))) j.sync_interval = *d;
        if (j.mode == store::durability::durable)
            r.warn("journal.sync_interval has no effect with durability: durable (every append is synced)");
    }
    if (auto const v = n["max_batch"]) {
        if (auto b = r.count(v, p + ".max_batch", 1, 1'000'000)) j.max_batch = *b;
    }
}

// ── signing ───────────────────────────────────────────────────────────────────────────────────

std::optional<signing_config> read_signing(reader& r, YAML::Node const& n) {
    std::string const p = "signing";
    if (!r.mapping(n, p, {"key_file", "kid", "lifetime", "create_if_missing"})) return std::nullopt;
    auto before = r.problems.size();
    signing_config s;
    if (auto const v = n["kid"]) {
        if (auto k = r.string(v, p + ".kid")) {
            if (auto problem = key_id_problem(*k); !problem.empty()) r.fail("invalid_value", p + ".kid: " + problem);
            else s.kid = *k;
        }
    }
    if (auto const v = n["lifetime"]) {
        if (auto d = r.duration(v, p + ".lifetime", milliseconds(1000))) {
            if (d->count() % 1000 != 0)
                r.fail("invalid_value", p + ".lifetime must be whole seconds (provenance times are in seconds)");
            else
                s.lifetime = std::chrono::duration_cast<std::chrono::seconds>(*d);
        }
    }
    if (auto const v = n["create_if_missing"]) {
        if (auto b = r.boolean(v, p + ".create_if_missing")) s.create_if_missing = *b;
    }
    auto kp = p + ".key_file";
    auto const v = n["key_file"];
    if (!v) {
        r.fail("missing_field", kp + " is required (leave the signing section out to send calls unsigned)");
        return std::nullopt;
    }
    auto path = r.path(v, kp);
    if (!path) return std::nullopt;
    s.key_file = *path;
    std::error_code ec;
    if (!fs::exists(*path, ec) && s.create_if_missing) {
        if (r.problems.size() != before) return std::nullopt;
        return s;  // created at start by create_missing_secrets
    }
    auto got = r.file(v, kp, max_secret_bytes);
    if (!got) return std::nullopt;
    auto signer = core::provenance_signer::from_pem(s.kid.empty() ? "unnamed" : s.kid, got->second);
    if (!signer) {
        r.fail("invalid_key", kp + ": " + show_path(*path) + " is not a PEM (PKCS#8) Ed25519 private key (" +
                                  signer.error().message + ")");
        return std::nullopt;
    }
    if (s.kid.empty()) {
        s.kid = key_id_of(signer->public_key_raw());
        signer = core::provenance_signer::from_pem(s.kid, got->second);
    }
    if (readable_by_others(*path)) r.warn(kp + " " + show_path(*path) + " can be read by group or others");
    if (r.problems.size() != before) return std::nullopt;
    s.signer = std::make_shared<core::provenance_signer const>(std::move(*signer));
    return s;
}

// ── upstreams ─────────────────────────────────────────────────────────────────────────────────

// A value given inline, or taken from airlock's environment or a file at load: `VALUE`,
// `{env: NAME}` or `{file: PATH}`, each optionally with `prefix:` (e.g. "Bearer ").
std::optional<std::string> read_secret_value(reader& r, YAML::Node const& n, std::string const& path) {
    if (!n.IsMap()) return r.secret_scalar(n, path);
    if (!r.mapping(n, path, {"env", "file", "prefix"})) return std::nullopt;
    auto const env = n["env"];
    auto const file = n["file"];
    if (static_cast<bool>(env) == static_cast<bool>(file)) {
        r.fail(env ? "conflicting_fields" : "missing_field", path + " needs exactly one of env or file");
        return std::nullopt;
    }
    std::string prefix;
    if (auto const v = n["prefix"]) {
        auto s = r.string(v, path + ".prefix");
        if (!s) return std::nullopt;
        prefix = *s;
    }
    if (env) {
        auto name = r.text(env, path + ".env");
        if (!name) return std::nullopt;
        auto value = r.getenv(*name);
        if (!value) {
            r.fail("env_unset", path + ".env names " + *name + ", which is not set in airlock's environment");
            return std::nullopt;
        }
        r.note_secret(*value, path + ".env");
        return prefix + *value;
    }
    auto got = r.file(file, path + ".file", max_secret_bytes);
    if (!got) return std::nullopt;
    if (readable_by_others(got->first))
        r.warn(path + ".file " + show_path(got->first) + " can be read by group or others");
    // Files written by editors and `echo` end in a newline that is not part of the secret.
    r.note_secret(std::string(trim(got->second)), path + ".file");
    return prefix + std::string(trim(got->second));
}

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

// `tls: {verify, ca_file}` of an https:// endpoint named `who`.
void read_tls(reader& r, YAML::Node const& v, std::string const& tp, std::optional<std::string> const& url,
              std::string const& who, bool& verify_peer, std::optional<std::string>& ca_file) {
    if (!r.mapping(v, tp, {"verify", "ca_file"})) return;
    if (url && !lowercase(*url).starts_with("https:")) r.fail("conflicting_fields", tp + " applies only to an https:// url");
    if (auto const b = v["verify"]) {
        if (auto verify = r.boolean(b, tp + ".verify")) {
            verify_peer = *verify;
            if (!*verify) r.warn(tp + ".verify is false: anyone on the path to " + who + " can read its calls and answer them");
        }
    }
    if (auto const c = v["ca_file"]) {
        if (auto got = r.file(c, tp + ".ca_file", max_manifest_bytes)) ca_file = got->first.string();
    }
}

// `headers: {Name: VALUE}` sent on every request; values inline or `{env}`/`{file}` (see
// read_secret_value). `reserved` gives why a name may not be configured, or "" when it may.
void read_headers(reader& r, YAML::Node const& v, std::string const& hp,
                  std::vector<std::pair<std::string, std::string>>& out,
                  std::function<std::string(std::string const&)> const& reserved) {
    auto entries = r.entries(v, hp);
    if (!entries) return;
    for (auto const& [name, value] : *entries) {
        auto ep = child_path(hp, name);
        // Refused here as well as by the transport, so `airlock check` reports it with the key path.
        if (!mcp::is_header_name(name)) {
            r.fail("invalid_value", ep + ": " + in_quotes(name) + " is not an HTTP header name");
            continue;
        }
        if (auto why = reserved(name); !why.empty()) {
            r.fail("invalid_value", ep + " " + why);
            continue;
        }
        auto same = std::find_if(out.begin(), out.end(), [&](auto const& h) { return iequals(h.first, name); });
        if (same != out.end()) {
            r.fail("duplicate_key", ep + " repeats header " + same->first + " (header names ignore case)");
            continue;
        }
        auto s = read_secret_value(r, value, ep);
        if (!s) continue;
        // The value is a credential: say which header is wrong, never what it holds.
        if (s->find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
            r.fail("invalid_value", ep + " has a value with a line break or NUL byte");
            continue;
        }
        // Headers are how credentials travel: a value written inline is hidden like one from a file.
        r.secrets.push_back(*s);
        out.emplace_back(name, std::move(*s));
    }
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
            u.destination = core::remote_destination{e->scheme, lowercase(e->host), e->port};
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

// ── egress ────────────────────────────────────────────────────────────────────────────────────

constexpr std::string_view egress_forms = "expected local, process: ARGV0, or http(s)://host[:port]";

// "http(s)://host[:port]" with nothing after the authority but an optional "/".
std::optional<core::remote_destination> parse_remote(reader& r, std::string const& s, std::string const& path) {
    auto sep = s.find("://");
    auto scheme = lowercase(std::string_view(s).substr(0, sep));
    if (scheme != "http" && scheme != "https") {
        r.fail("invalid_destination", path + " is " + in_quotes(s) + "; the scheme must be http or https");
        return std::nullopt;
    }
    std::string_view rest = std::string_view(s).substr(sep + 3);
    if (rest.ends_with('/')) rest.remove_suffix(1);
    if (rest.find_first_of("/?#") != std::string_view::npos) {
        r.fail("invalid_destination",
               path + " is " + in_quotes(s) + "; an egress entry names a host and port, not a path");
        return std::nullopt;
    }
    if (rest.find('@') != std::string_view::npos) {
        r.fail("invalid_destination", path + " carries user information; an egress entry names a host and port only");
        return std::nullopt;
    }
    core::remote_destination d{scheme, "", static_cast<std::uint16_t>(scheme == "https" ? 443 : 80)};
    std::string_view port;
    bool has_port = false;
    if (rest.starts_with('[')) {
        auto close = rest.find(']');
        if (close == std::string_view::npos) {
            r.fail("invalid_destination", path + " is " + in_quotes(s) + "; an IPv6 host needs its closing ']'");
            return std::nullopt;
        }
        d.host = std::string(rest.substr(1, close - 1));
        auto after = rest.substr(close + 1);
        if (!after.empty()) {
            if (!after.starts_with(':')) {
                r.fail("invalid_destination", path + " is " + in_quotes(s) + "; expected ':' and a port after ']'");
                return std::nullopt;
            }
            port = after.substr(1);
            has_port = true;
        }
    } else {
        auto colon = rest.find(':');
        if (colon != std::string_view::npos && rest.find(':', colon + 1) != std::string_view::npos) {
            r.fail("invalid_destination", path + " is " + in_quotes(s) + "; write an IPv6 host in brackets");
            return std::nullopt;
        }
        d.host = std::string(rest.substr(0, colon));
        if (colon != std::string_view::npos) {
            port = rest.substr(colon + 1);
            has_port = true;
        }
    }
    if (has_port) {
        unsigned p = 0;
        if (all_digits(port) && port.size() <= 5) std::from_chars(port.data(), port.data() + port.size(), p);
        if (p == 0 || p > 65535) {
            r.fail("invalid_destination", path + " is " + in_quotes(s) + "; the port must be a number from 1 to 65535");
            return std::nullopt;
        }
        d.port = static_cast<std::uint16_t>(p);
    }
    if (d.host.ends_with('.')) {
        // Absolute and relative names need not be one host, and upstream URLs refuse the form too.
        r.fail("invalid_destination", path + " is " + in_quotes(s) + "; write the host without a trailing '.'");
        return std::nullopt;
    }
    d.host = lowercase(d.host);
    return d;
}

void read_egress(reader& r, YAML::Node const& n, core::egress_allowlist& allow) {
    std::string const p = "egress";
    if (!r.sequence(n, p)) return;
    for (std::size_t i = 0; i < n.size(); ++i) {
        auto ip = index_path(p, i);
        auto const item = n[i];
        std::optional<core::destination> d;
        if (item.IsMap()) {
            if (!r.mapping(item, ip, {"process"})) continue;
            auto const v = item["process"];
            if (!v) {
                r.fail("missing_field", ip + " must be local, {process: ARGV0} or a URL");
                continue;
            }
            auto argv0 = r.string(v, ip + ".process");
            if (!argv0) continue;
            d = core::process_destination{argv0->find('/') != std::string::npos ? r.resolve(*argv0).string() : *argv0};
        } else if (item.IsScalar() && classify(item) == scalar_kind::string) {
            auto const& s = item.Scalar();
            if (s == "local") {
                d = core::local_destination{};
            } else if (s.starts_with("process:")) {
                std::string argv0(trim(std::string_view(s).substr(8)));
                d = core::process_destination{argv0.find('/') != std::string::npos ? r.resolve(argv0).string() : argv0};
            } else if (s.find("://") != std::string::npos) {
                if (auto remote = parse_remote(r, s, ip)) d = *remote;
                else continue;
            } else {
                r.fail("invalid_destination", ip + " is " + in_quotes(s) + "; " + std::string(egress_forms));
                continue;
            }
        } else {
            r.fail("wrong_type", ip + " is " + describe(item) + "; " + std::string(egress_forms));
            continue;
        }
        if (auto added = allow.add(std::move(*d)); !added) r.fail(added.error().code, ip + ": " + added.error().message);
    }
}

// ── principals ────────────────────────────────────────────────────────────────────────────────

bool principal_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-' || c == '@';
}

// Whether `token` can be a bearer token; the reason when not. Never quotes the token.
std::string token_problem(std::string_view token) {
    if (token.empty()) return "the token is empty";
    if (!std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
        return "the token contains spaces, control or non-ASCII characters, which an Authorization header cannot carry";
    if (token.size() < min_token_length)
        return "the token is shorter than " + std::to_string(min_token_length) +
               " characters (make one with: openssl rand -hex 32)";
    return {};
}

// A manifest file named at `v`: every problem it has is recorded under `p`, naming the file.
std::optional<std::pair<fs::path, core::manifest>> read_manifest_file(reader& r, YAML::Node const& v, std::string const& p) {
    auto got = r.file(v, p, max_manifest_bytes);
    if (!got) return std::nullopt;
    auto where = p + " (" + got->first.string() + "): ";
    auto problems = core::manifest_problems(got->second);
    for (auto& e : problems) r.fail(e.code, where + e.message);
    if (!problems.empty()) return std::nullopt;
    auto m = core::parse_manifest(got->second);
    if (!m) {
        r.fail(m.error().code, where + m.error().message);
        return std::nullopt;
    }
    return std::pair{got->first, std::move(*m)};
}

std::optional<agent_config> read_agent(reader& r, YAML::Node const& n, std::string const& p) {
    if (!r.mapping(n, p, {"manifest", "script", "provider"})) return std::nullopt;
    std::size_t before = r.problems.size();
    agent_config a;
    if (auto const v = n["manifest"]; !v) {
        r.fail("missing_field", p + ".manifest is required (the agent's reviewed declaration)");
    } else if (auto got = read_manifest_file(r, v, p + ".manifest")) {
        a.manifest_file = got->first;
        a.manifest = std::move(got->second);
        a.name = a.manifest.name;
        if (!a.manifest.execution)
            r.fail("missing_field", p + ".manifest (" + got->first.string() +
                                        "): spec.execution is required for an agent airlock runs");
    }
    auto const script = n["script"];
    auto const provider = n["provider"];
    if (script && provider) {
        r.fail("conflicting_fields", p + " sets both script and provider; the agent uses one model provider");
    } else if (!script && !provider) {
        r.fail("missing_field", p + " needs script (the scripted provider plays that file) or provider (a name from "
                                    "the providers section)");
    } else if (script) {
        if (auto got = r.file(script, p + ".script", max_manifest_bytes)) {
            a.script_file = got->first;
            auto parsed = parse_script(got->second, show_path(got->first));
            if (parsed) a.scripted = std::move(*parsed);
            else r.fail(parsed.error().code, p + ".script: " + parsed.error().message);
        }
    } else if (auto name = r.text(provider, p + ".provider")) {
        a.provider = *name;
    }
    if (r.problems.size() != before) return std::nullopt;
    return a;
}

void read_metrics(reader& r, YAML::Node const& n, metrics_config& m) {
    if (!r.mapping(n, "metrics", {"enabled", "token_file", "token_env"})) return;
    if (auto const v = n["enabled"]) {
        if (auto b = r.boolean(v, "metrics.enabled")) m.enabled = *b;
    }
    auto const file = n["token_file"];
    auto const env = n["token_env"];
    if (file && env) {
        r.fail("conflicting_fields", "metrics sets both token_file and token_env; give the token one way");
    } else if (file) {
        if (auto got = r.file(file, "metrics.token_file", max_secret_bytes)) {
            m.token_file = got->first;
            m.token = std::string(trim(got->second));
            if (auto problem = token_problem(m.token); !problem.empty())
                r.fail("invalid_token", "metrics.token_file: " + show_path(got->first) + ": " + problem);
            else if (readable_by_others(got->first))
                r.warn("metrics.token_file " + show_path(got->first) + " can be read by group or others");
        }
    } else if (env) {
        if (auto var = r.text(env, "metrics.token_env")) {
            m.token_env = *var;
            if (auto value = r.getenv(*var); !value) {
                r.fail("env_unset", "metrics.token_env names " + *var + ", which is not set in airlock's environment");
            } else {
                m.token = std::string(trim(*value));
                if (auto problem = token_problem(m.token); !problem.empty())
                    r.fail("invalid_token", "metrics.token_env (" + *var + "): " + problem);
            }
        }
    }
}

std::optional<principal_config> read_principal(reader& r, YAML::Node const& n, std::string const& p) {
    if (!r.mapping(n, p, {"name", "token_file", "token_env", "create_if_missing", "manifest", "trusted", "anonymous",
                                 "operator"}))
        return std::nullopt;
    auto before = r.problems.size();
    principal_config pc;
    if (auto const v = n["name"]; !v) {
        r.fail("missing_field", p + ".name is required");
    } else if (auto name = r.text(v, p + ".name")) {
        if (!std::all_of(name->begin(), name->end(), principal_name_char))
            r.fail("invalid_name", p + ".name is " + in_quotes(*name) +
                                       "; use ASCII letters, digits and '_', '.', '-', '@'");
        else
            pc.name = *name;
    }
    if (auto const v = n["create_if_missing"]) {
        if (auto b = r.boolean(v, p + ".create_if_missing")) pc.create_if_missing = *b;
    }
    if (auto const v = n["anonymous"]) {
        if (auto b = r.boolean(v, p + ".anonymous")) pc.anonymous = *b;
    }
    if (auto const v = n["operator"]) {
        if (auto b = r.boolean(v, p + ".operator")) pc.is_operator = *b;
    }
    // An operator reads every run's journal: every client that can reach airlock would.
    if (pc.anonymous && pc.is_operator)
        r.fail("conflicting_fields", p + ".operator sees every run; an anonymous principal cannot be one");
    auto const file = n["token_file"];
    auto const env = n["token_env"];
    if (pc.anonymous) {
        // Without credentials anyone is this principal; a token would grant nothing more.
        if (file || env)
            r.fail("conflicting_fields", p + ".anonymous serves requests without a token; remove token_file/token_env");
        if (pc.create_if_missing) r.fail("conflicting_fields", p + ".create_if_missing applies only to token_file");
    } else if (file && env) {
        r.fail("conflicting_fields", p + " sets both token_file and token_env; give the token one way");
    } else if (!file && !env) {
        r.fail("missing_field", p + " needs token_file or token_env (the token itself is never written in the "
                                    "configuration)");
    } else if (file) {
        auto fp = p + ".token_file";
        if (auto path = r.path(file, fp)) {
            pc.token_file = *path;
            std::error_code ec;
            if (!(pc.create_if_missing && !fs::exists(*path, ec))) {
                if (auto got = r.file(file, fp, max_secret_bytes)) {
                    pc.token = std::string(trim(got->second));
                    if (auto problem = token_problem(pc.token); !problem.empty())
                        r.fail("invalid_token", fp + ": " + show_path(*path) + ": " + problem);
                    else if (readable_by_others(*path))
                        r.warn(fp + " " + show_path(*path) + " can be read by group or others");
                }
            }
        }
    } else {
        auto ep = p + ".token_env";
        if (auto var = r.text(env, ep)) {
            pc.token_env = *var;
            if (pc.create_if_missing) r.fail("conflicting_fields", p + ".create_if_missing applies only to token_file");
            if (auto value = r.getenv(*var); !value) {
                r.fail("env_unset", ep + " names " + *var + ", which is not set in airlock's environment");
            } else {
                pc.token = std::string(trim(*value));
                if (auto problem = token_problem(pc.token); !problem.empty())
                    r.fail("invalid_token", ep + " (" + *var + "): " + problem);
            }
        }
    }
    if (auto const v = n["manifest"]; !v) {
        r.fail("missing_field", p + ".manifest is required (it grants the tools this principal may use)");
    } else if (auto got = read_manifest_file(r, v, p + ".manifest")) {
        pc.manifest_file = got->first;
        pc.manifest = std::move(got->second);
    }
    if (auto const v = n["trusted"]) {
        if (auto b = r.boolean(v, p + ".trusted")) pc.trusted = *b;
    }
    if (r.problems.size() != before) return std::nullopt;
    return pc;
}

// ── providers ─────────────────────────────────────────────────────────────────────────────────

// Where each kind is reached when base_url is not set: the vendor's public API.
std::string default_base_url(provider_kind k) {
    return k == provider_kind::anthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
}

// `api_key: {env: NAME}` or `{file: PATH}`. A key written into the file itself is refused: the
// file ends up in backups, repositories and `airlock check` output pasted into tickets.
void read_api_key(reader& r, YAML::Node const& v, std::string const& kp, provider_config& pc) {
    if (!v.IsMap()) {
        r.fail("invalid_value", kp + " must be {env: NAME} or {file: PATH}, not " + shape(v) +
                                    "; an API key written into the configuration ends up wherever the file goes");
        return;
    }
    if (!r.mapping(v, kp, {"env", "file"})) return;
    auto key = read_secret_value(r, v, kp);
    if (!key) return;
    if (key->empty()) {
        r.fail("empty_field", kp + " names an empty key");
        return;
    }
    // The key is a credential: say what is wrong with it, never what it holds.
    if (key->find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
        r.fail("invalid_value", kp + " is a key with a line break or NUL byte, which no HTTP header can carry");
        return;
    }
    pc.api_key = std::move(*key);
    if (auto const e = v["env"]) pc.api_key_env = e.Scalar();
    if (auto const f = v["file"]) pc.api_key_file = r.resolve(f.Scalar());
}

void read_http_provider(reader& r, YAML::Node const& n, std::string const& p, provider_config& pc) {
    if (n["script"]) r.fail("conflicting_fields", p + ".script applies only to scripted providers");
    std::optional<std::string> url = default_base_url(pc.kind);
    if (auto const v = n["base_url"]) url = r.text(v, p + ".base_url");
    if (url) {
        auto e = mcp::parse_http_url(*url);
        if (!e) {
            r.fail("invalid_url", p + ".base_url: " + e.error().message);
        } else if (e->target.find('?') != std::string::npos) {
            r.fail("invalid_url", p + ".base_url " + in_quotes(*url) + " has a query; request paths are appended to it");
        } else {
            pc.base_url = *url;
            pc.destination = core::remote_destination{e->scheme, lowercase(e->host), e->port};
        }
    }
    if (auto const v = n["api_key"]) read_api_key(r, v, p + ".api_key", pc);
    else if (pc.kind == provider_kind::anthropic)
        r.fail("missing_field", p + ".api_key is required for an anthropic provider ({env: NAME} or {file: PATH})");
    if (auto const v = n["model"]; !v) {
        r.fail("missing_field", p + ".model is required (the model asked for when a run names none)");
    } else if (auto m = r.text(v, p + ".model")) {
        pc.model = *m;
    }
    if (auto const v = n["max_tokens"]) {
        if (auto m = r.count(v, p + ".max_tokens", 1, 10'000'000)) pc.max_tokens = *m;
    }
    auto const* remote = std::get_if<core::remote_destination>(&pc.destination);
    if (remote && remote->host == "api.openai.com") pc.max_tokens_field = "max_completion_tokens";
    if (auto const v = n["max_tokens_field"]) {
        if (pc.kind != provider_kind::openai)
            r.fail("conflicting_fields", p + ".max_tokens_field applies only to openai providers");
        else if (auto f = r.choice(v, p + ".max_tokens_field", {"max_tokens", "max_completion_tokens"}))
            pc.max_tokens_field = *f;
    }
    if (auto const v = n["deadline"]) {
        if (auto d = r.duration(v, p + ".deadline", milliseconds(1))) pc.deadline = *d;
    }
    if (auto const v = n["max_retries"]) {
        if (auto m = r.count(v, p + ".max_retries", 0, 10)) pc.max_retries = static_cast<unsigned>(*m);
    }
    if (auto const v = n["max_retry_wait"]) {
        if (auto d = r.duration(v, p + ".max_retry_wait", milliseconds(0))) pc.max_retry_wait = *d;
    }
    if (auto const v = n["max_connections"]) {
        if (auto m = r.count(v, p + ".max_connections", 1, 100'000)) pc.max_connections = *m;
    }
    if (auto const v = n["headers"]) {
        bool anthropic = pc.kind == provider_kind::anthropic;
        read_headers(r, v, p + ".headers", pc.headers, [anthropic](std::string const& name) {
            if (mcp::is_transport_header(name)) return std::string("is set by airlock itself and cannot be configured");
            if (iequals(name, anthropic ? "x-api-key" : "authorization") ||
                (anthropic && iequals(name, "anthropic-version")))
                return std::string("is set by the provider from api_key; configure the key there");
            return std::string();
        });
    }
    if (auto const v = n["tls"]) read_tls(r, v, p + ".tls", url, "provider " + pc.name, pc.verify_peer, pc.ca_file);
}

std::optional<provider_config> read_provider(reader& r, std::string const& name, YAML::Node const& n,
                                             std::string const& p) {
    if (!r.mapping(n, p, {"kind", "base_url", "api_key", "headers", "model", "max_tokens", "max_tokens_field",
                          "deadline", "max_retries", "max_retry_wait", "max_connections", "tls", "script"}))
        return std::nullopt;
    auto before = r.problems.size();
    provider_config pc;
    pc.name = name;
    if (auto problem = core::tool_id_component_problem(name, p); !problem.empty())
        r.fail("invalid_name", problem + " (it names the provider in model://KIND/NAME)");
    auto const k = n["kind"];
    if (!k) {
        r.fail("missing_field", p + ".kind is required: openai, anthropic or scripted");
        return std::nullopt;
    }
    auto kind = r.choice(k, p + ".kind", {"openai", "anthropic", "scripted"});
    if (!kind) return std::nullopt;
    pc.kind = *kind == "openai" ? provider_kind::openai : *kind == "anthropic" ? provider_kind::anthropic
                                                                              : provider_kind::scripted;
    if (pc.kind == provider_kind::scripted) {
        for (auto key : {"base_url", "api_key", "headers", "max_tokens", "max_tokens_field", "deadline", "max_retries",
                         "max_retry_wait", "max_connections", "tls"})
            if (n[key]) r.fail("conflicting_fields", p + "." + key + " applies only to openai and anthropic providers");
        pc.destination = core::local_destination{};
        if (auto const v = n["model"]) {
            if (auto m = r.text(v, p + ".model")) pc.model = *m;
        }
        if (auto const v = n["script"]; !v) r.fail("missing_field", p + ".script is required (the file of turns it plays)");
        else if (auto got = r.file(v, p + ".script", max_manifest_bytes)) pc.script = got->first;
    } else {
        read_http_provider(r, n, p, pc);
    }
    if (r.problems.size() != before) return std::nullopt;
    return pc;
}

void read_providers(reader& r, YAML::Node const& n, std::vector<provider_config>& out) {
    auto entries = r.entries(n, "providers");
    if (!entries) return;
    for (auto const& [name, value] : *entries)
        if (auto pc = read_provider(r, name, value, child_path("providers", name))) out.push_back(std::move(*pc));
}

// ── the file ──────────────────────────────────────────────────────────────────────────────────

template <class T, class Read>
void read_list(reader& r, YAML::Node const& n, std::string const& p, std::vector<T>& out,
               std::vector<std::size_t>& written_at, Read read) {
    if (!r.sequence(n, p)) return;
    for (std::size_t i = 0; i < n.size(); ++i) {
        auto ip = index_path(p, i);
        if (auto item = read(r, n[i], ip)) {
            auto same = std::find_if(out.begin(), out.end(), [&](T const& x) { return x.name == item->name; });
            if (same != out.end()) {
                r.fail("duplicate_name", ip + ".name " + in_quotes(item->name) + " is already used by " +
                                             index_path(p, written_at[static_cast<std::size_t>(same - out.begin())]));
                continue;
            }
            out.push_back(std::move(*item));
            written_at.push_back(i);
        }
    }
}

struct loaded {
    config c;
    std::vector<core::error> problems;
};

loaded load(fs::path const& file, env_lookup const& env) {
    loaded out;
    auto& c = out.c;
    std::error_code ec;
    auto absolute = fs::absolute(file, ec);
    c.source = (ec ? file : absolute).lexically_normal();
    c.base_dir = c.source.parent_path();
    c.journal.directory = c.base_dir / "var" / "journal";

    auto got = read_text_file(c.source, max_config_bytes);
    if (!got.text) {
        out.problems.push_back(core::make_error(got.problem_code, show_path(c.source) + " " + got.problem));
        return out;
    }
    std::vector<YAML::Node> docs;
    try {
        docs = YAML::LoadAll(*got.text);
    } catch (YAML::Exception const& e) {
        out.problems.push_back(core::make_error(
            "invalid_yaml", "line " + std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1) +
                                ": " + e.msg));
        return out;
    }
    if (docs.size() > 1) {
        out.problems.push_back(core::make_error("invalid_yaml", "the configuration must be one YAML document, not " +
                                                                    std::to_string(docs.size())));
        return out;
    }
    YAML::Node root = docs.empty() ? YAML::Node(YAML::NodeType::Map) : docs.front();
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);  // an empty file means every default
    // Looked up through a const reference only: yaml-cpp's non-const operator[] inserts the key.
    YAML::Node const& doc = root;

    // A section written with nothing under it (every entry commented out) means its defaults.
    auto section = [](YAML::Node const& d, char const* key) {
        auto const v = d[key];
        return v && !v.IsNull() ? v : YAML::Node(YAML::NodeType::Undefined);
    };
    reader r(c.base_dir, env);
    if (r.mapping(doc, "", {"server", "journal", "signing", "upstreams", "egress", "principals", "providers",
                                 "agents", "logging", "metrics", "runs"})) {
        if (auto const v = section(doc, "server")) read_server(r, v, c.server);
        if (auto const v = section(doc, "journal")) read_journal(r, v, c.journal);
        if (auto const v = section(doc, "signing")) c.signing = read_signing(r, v);
        if (auto const v = section(doc, "upstreams")) {
            std::vector<std::size_t> at;
            read_list(r, v, "upstreams", c.upstreams, at, read_upstream);
        }
        if (auto const v = section(doc, "egress")) read_egress(r, v, c.egress);
        std::vector<std::size_t> principal_at;
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
        if (auto const v = section(doc, "logging")) {
            if (r.mapping(v, "logging", {"level", "format"})) {
                if (auto const l = v["level"]) {
                    if (auto s = r.choice(l, "logging.level", {"trace", "debug", "info", "warn", "error"})) {
                        for (auto level : {log_level::trace, log_level::debug, log_level::info, log_level::warn,
                                           log_level::error})
                            if (to_string(level) == *s) c.logging.level = level;
                    }
                }
                if (auto const f = v["format"]) {
                    if (auto s = r.choice(f, "logging.format", {"json", "text"}))
                        c.logging.format = *s == "json" ? log_format::json : log_format::text;
                }
            }
        }
        if (auto const v = section(doc, "metrics")) read_metrics(r, v, c.metrics);
        if (auto const v = section(doc, "runs")) {
            if (r.mapping(v, "runs", {"max_concurrent_runs"})) {
                if (auto const m = v["max_concurrent_runs"]) {
                    if (auto n = r.count(m, "runs.max_concurrent_runs", 1, 1'000'000)) c.runs.max_concurrent_runs = *n;
                }
            }
        }

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
                    r.warn("principal " + pr.name + ": every call to " + g.ref.uri() + " would be refused (" +
                           d.refusal()->detail + "), so it is not listed; grant it with `mutates: false` if it only " +
                           "reads, or mark the principal `trusted: true`");
        }

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
    out.problems = std::move(r.problems);
    c.warnings = std::move(r.warnings);
    c.secrets = std::move(r.secrets);
    return out;
}

// ── creating missing secrets ──────────────────────────────────────────────────────────────────

// Writes a new file with `mode`; refuses to replace one that appeared meanwhile.
core::result<void> write_new_file(fs::path const& p, std::string_view contents, mode_t mode, std::string const& what) {
    std::error_code ec;
    if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
    if (ec)
        return core::make_error("file_unwritable",
                                what + ": cannot create " + show_path(p.parent_path()) + " (" + ec.message() + ")");
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return core::make_error("file_unwritable",
                                what + ": cannot create " + show_path(p) + " (" + std::strerror(errno) + ")");
    std::size_t done = 0;
    while (done < contents.size()) {
        auto n = ::write(fd, contents.data() + done, contents.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            auto err = std::string(std::strerror(errno));
            ::close(fd);
            ::unlink(p.c_str());
            return core::make_error("file_unwritable", what + ": cannot write " + show_path(p) + " (" + err + ")");
        }
        done += static_cast<std::size_t>(n);
    }
    // A key that vanishes in a crash after airlock signed with it would leave signatures nobody can
    // check; the fsync makes "created" mean "on disk".
    bool synced = ::fsync(fd) == 0;
    ::close(fd);
    if (!synced) return core::make_error("file_unwritable", what + ": cannot sync " + show_path(p));
    return {};
}

core::result<std::string> new_ed25519_pem() {
    EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    if (!key) return core::make_error("keygen_failed", "OpenSSL could not generate an Ed25519 key");
    BIO* bio = BIO_new(BIO_s_mem());
    bool ok = bio && PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    std::string pem;
    if (ok) {
        char* data = nullptr;
        long len = BIO_get_mem_data(bio, &data);
        pem.assign(data, static_cast<std::size_t>(len));
    }
    BIO_free(bio);
    EVP_PKEY_free(key);
    if (!ok) return core::make_error("keygen_failed", "OpenSSL could not write the Ed25519 key as PEM");
    return pem;
}

}  // namespace

core::result<config> load_config(fs::path const& file, env_lookup const& env) {
    auto l = load(file, env);
    if (!l.problems.empty()) return l.problems.front();
    return std::move(l.c);
}

std::vector<core::error> config_problems(fs::path const& file, env_lookup const& env) {
    return load(file, env).problems;
}

std::ostream& operator<<(std::ostream& os, config const& c) { return os << summary(c); }

fs::path public_key_path(fs::path const& key_file) {
    auto pub = key_file;
    pub.replace_extension(".pub");
    return pub;
}

core::result<void> create_missing_secrets(config& c) {
    if (c.signing && !c.signing->signer && c.signing->create_if_missing) {
        auto& s = *c.signing;
        auto pem = new_ed25519_pem();
        if (!pem) return pem.error();
        if (auto w = write_new_file(s.key_file, *pem, 0600, "signing.key_file"); !w) return w.error();
        auto signer = core::provenance_signer::from_pem(s.kid.empty() ? "unnamed" : s.kid, *pem);
        if (!signer) return signer.error();
        if (s.kid.empty()) {
            s.kid = key_id_of(signer->public_key_raw());
            signer = core::provenance_signer::from_pem(s.kid, *pem);
            if (!signer) return signer.error();
        }
        // Beside it, the public key the way `airlock keygen` names it, for upstreams that verify.
        auto pub = public_key_path(s.key_file);
        std::error_code ec;
        if (!fs::exists(pub, ec)) {
            if (auto w = write_new_file(pub, signer->public_key_pem(), 0644, "signing public key"); !w)
                return w.error();
        }
        s.signer = std::make_shared<core::provenance_signer const>(std::move(*signer));
    }
    for (auto& p : c.principals) {
        if (!p.token.empty() || !p.create_if_missing || !p.token_file) continue;
        unsigned char bytes[32];
        if (RAND_bytes(bytes, sizeof bytes) != 1)
            return core::make_error("keygen_failed", "OpenSSL could not produce random bytes for a token");
        auto token = core::to_hex(bytes, sizeof bytes);
        if (auto w = write_new_file(*p.token_file, token + "\n", 0600, "principal " + p.name + " token_file"); !w)
            return w.error();
        p.token = std::move(token);
    }
    return {};
}

std::string summary(config const& c) {
    std::ostringstream o;
    auto size_text = [](std::size_t n) {
        static constexpr std::pair<std::size_t, std::string_view> units[] = {
            {std::size_t{1} << 40, "TiB"}, {std::size_t{1} << 30, "GiB"}, {std::size_t{1} << 20, "MiB"}, {1024, "KiB"}};
        for (auto const& [scale, name] : units)
            if (n >= scale && n % scale == 0) return std::to_string(n / scale) + " " + std::string(name);
        return std::to_string(n) + " B";
    };
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
    o << "journal     " << c.journal.directory.string() << " ("
      << (c.journal.mode == store::durability::durable ? "durable" : "fast") << ", up to "
      << size_text(c.journal.map_size) << ")\n";
    if (!c.signing) {
        o << "signing     off: calls are sent unsigned\n";
    } else if (!c.signing->signer) {
        o << "signing     key " << c.signing->key_file.string() << " (created at first start), lifetime "
          << format_duration(c.signing->lifetime) << "\n";
    } else {
        o << "signing     key " << c.signing->kid << " from " << c.signing->key_file.string() << ", lifetime "
          << format_duration(c.signing->lifetime) << "\n";
    }
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
    o << "principals  " << c.principals.size() << "\n";
    for (auto const& p : c.principals) {
        o << "  " << p.name << "  " << p.manifest.tools.size() << " tools granted by " << p.manifest.name << " "
          << p.manifest.version << " (" << p.manifest_file.string() << "), token from ";
        if (p.anonymous) o << "nobody: anonymous";
        else if (p.token_file) o << p.token_file->string() << (p.token.empty() ? " (created at first start)" : "");
        else o << "$" << p.token_env.value_or("?");
        o << (p.trusted ? ", trusted" : ", untrusted") << (p.is_operator ? ", operator" : "") << "\n";
    }
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
    return o.str();
}

namespace {

// The base64 lines of a PEM file: any of them in an output would be a piece of the private key.
void register_pem_lines(fs::path const& file) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.starts_with("-----")) core::secrets::add(line);
    }
}

}  // namespace

void register_secrets(config const& c) {
    for (auto const& p : c.principals) core::secrets::add(p.token);
    for (auto const& s : c.secrets) core::secrets::add(s);
    for (auto const& p : c.providers) core::secrets::add(p.api_key);
    core::secrets::add(c.metrics.token);
    if (c.signing) register_pem_lines(c.signing->key_file);
    if (c.server.tls) register_pem_lines(c.server.tls->key_file);
}

}  // namespace airlock::service
