#pragma once
// The configuration's reader: the strict YAML reader every document in airlock uses, with the
// configuration's own typed values on top (paths, files, durations, sizes, secrets) and the error
// text each of them gives. Every section reader (sections.hpp) reads through one of these.

#include "core/ascii.hpp"
#include "service/config/config.hpp"

#include "core/secrets.hpp"
#include "core/strict_yaml.hpp"
#include "service/config/durations.hpp"
#include "service/config/sizes.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::service::config_detail {

namespace fs = std::filesystem;
using std::chrono::milliseconds;


using core::yaml::all_digits;
using core::yaml::child_path;
using core::yaml::classify;
using core::yaml::describe;
using core::yaml::in_quotes;
using core::yaml::index_path;
using core::yaml::scalar_kind;
using core::yaml::shape;

std::string show_path(fs::path const& p);

// ── files ─────────────────────────────────────────────────────────────────────────────────────

struct file_text {
    std::optional<std::string> text;
    std::string problem_code;  // "file_missing", "file_unreadable", "file_too_large"
    std::string problem;       // why it could not be read, without its contents
};

file_text read_text_file(fs::path const& p, std::size_t max_bytes);
// True when group or others may read the file: a secret there is not a secret for long.
bool readable_by_others(fs::path const& p);
// The same search stdio_transport does at start, so `airlock check` can say so early.
bool found_executable(std::string const& argv0, std::string const& path_var);

inline constexpr std::size_t max_config_bytes = 1024 * 1024;
inline constexpr std::size_t max_secret_bytes = 64 * 1024;
inline constexpr std::size_t max_manifest_bytes = 4 * 1024 * 1024;

// A bearer token shorter than this can be guessed online; `openssl rand -hex 32` makes a good one.
inline constexpr std::size_t min_token_length = 16;

// ── the reader ────────────────────────────────────────────────────────────────────────────────

// The configuration's own typed values (paths, files, durations, sizes, secrets), on top of the
// strict reader every YAML document in airlock uses.
class reader : public core::yaml::reader {
public:
    reader(fs::path base, env_lookup const& env)
        : core::yaml::reader({.document = "the configuration"}), base_(std::move(base)), env_(env) {}

    std::vector<std::string> warnings;
    std::vector<std::string> secrets;  // values read from secret sources, for the log to redact
    // The principals auth.oauth.principals maps a claim to (read before the principals): they may
    // have no bearer token of their own.
    std::set<std::string, std::less<>> oauth_principals;

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

// Reads each item of the sequence `n` at `p` with `read`, refusing a second item with a name
// already used; written_at[i] is the index in the file of out[i].
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

}  // namespace airlock::service::config_detail
