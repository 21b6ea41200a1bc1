#include "service/config/sections.hpp"

#include "service/config/reader.hpp"

namespace airlock::service::config_detail {

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
    r.note_secret(std::string(core::trim_space(got->second)), path + ".file");
    return prefix + std::string(core::trim_space(got->second));
}

}  // namespace airlock::service::config_detail
