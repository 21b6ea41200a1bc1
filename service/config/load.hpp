#pragma once
// Loading the configuration: the file → a typed, validated config, section by section
// (sections.hpp), then what must hold across sections (an anonymous principal at most, a token
// each, destinations egress allows...).

#include "service/config/config.hpp"

#include "core/error.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace airlock::service {

// Reads one environment variable; nullopt when it is unset. Injected so tests need no setenv.
using env_lookup = std::function<std::optional<std::string>(std::string const& name)>;
env_lookup process_environment();                                     // ::getenv
env_lookup environment_from(std::map<std::string, std::string> vars);  // a fixed set, for tests

// Reads, validates and resolves the file; the first problem found, with the key path at fault.
core::result<config> load_config(std::filesystem::path const& file, env_lookup const& env = process_environment());
// Every problem load_config would refuse for, section by section; empty when it loads.
std::vector<core::error> config_problems(std::filesystem::path const& file,
                                         env_lookup const& env = process_environment());

}  // namespace airlock::service
