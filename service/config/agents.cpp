#include "service/config/sections.hpp"

#include "service/config/reader.hpp"

#include <algorithm>

namespace airlock::service::config_detail {

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

void read_runs(reader& r, YAML::Node const& v, runs_config& runs) {
        if (r.mapping(v, "runs", {"max_concurrent_runs"})) {
            if (auto const m = v["max_concurrent_runs"]) {
                if (auto n = r.count(m, "runs.max_concurrent_runs", 1, 1'000'000)) runs.max_concurrent_runs = *n;
            }
        }
}

}  // namespace airlock::service::config_detail
