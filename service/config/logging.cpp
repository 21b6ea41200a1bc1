#include "service/config/sections.hpp"

#include "service/config/reader.hpp"

namespace airlock::service::config_detail {

void read_logging(reader& r, YAML::Node const& v, logging_config& logging) {
        if (r.mapping(v, "logging", {"level", "format"})) {
            if (auto const l = v["level"]) {
                if (auto s = r.choice(l, "logging.level", {"trace", "debug", "info", "warn", "error"})) {
                    for (auto level : {log_level::trace, log_level::debug, log_level::info, log_level::warn,
                                       log_level::error})
                        if (to_string(level) == *s) logging.level = level;
                }
            }
            if (auto const f = v["format"]) {
                if (auto s = r.choice(f, "logging.format", {"json", "text"}))
                    logging.format = *s == "json" ? log_format::json : log_format::text;
            }
        }
}

}  // namespace airlock::service::config_detail
