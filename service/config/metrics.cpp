#include "service/config/sections.hpp"

#include "service/config/reader.hpp"

namespace airlock::service::config_detail {

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
            m.token = std::string(core::trim_space(got->second));
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
                m.token = std::string(core::trim_space(*value));
                if (auto problem = token_problem(m.token); !problem.empty())
                    r.fail("invalid_token", "metrics.token_env (" + *var + "): " + problem);
            }
        }
    }
}

}  // namespace airlock::service::config_detail
