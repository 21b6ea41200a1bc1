#include "service/config/sections.hpp"

#include "service/config/reader.hpp"

namespace airlock::service::config_detail {

namespace {

bool principal_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-' || c == '@';
}

}  // namespace

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

namespace {

// token_file or token_env, or neither for an anonymous principal.
void read_principal_token(reader& r, YAML::Node const& n, std::string const& p, principal_config& pc) {
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
        // A principal auth.oauth maps a claim to is reached by its OAuth tokens; it needs no bearer token.
        if (!r.oauth_principals.contains(pc.name))
            r.fail("missing_field", p + " needs token_file or token_env (the token itself is never written in the "
                                        "configuration)" +
                                        (r.oauth_principals.empty() ? "" : ", or a mapping under auth.oauth.principals"));
    } else if (file) {
        auto fp = p + ".token_file";
        if (auto path = r.path(file, fp)) {
            pc.token_file = *path;
            std::error_code ec;
            if (!(pc.create_if_missing && !fs::exists(*path, ec))) {
                if (auto got = r.file(file, fp, max_secret_bytes)) {
                    pc.token = std::string(core::trim_space(got->second));
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
                pc.token = std::string(core::trim_space(*value));
                if (auto problem = token_problem(pc.token); !problem.empty())
                    r.fail("invalid_token", ep + " (" + *var + "): " + problem);
            }
        }
    }
}

}  // namespace

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
    read_principal_token(r, n, p, pc);
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

}  // namespace airlock::service::config_detail
