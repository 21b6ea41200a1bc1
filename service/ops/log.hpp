#pragma once
// The process's log: every spdlog call writes one line on stderr, as a JSON object (the default)
// or as text for humans, and no configured secret ever appears in one (core/secrets.hpp: every
// line is redacted as it is formatted). docs/operations.md lists the fields.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

enum class log_level;   // config.hpp
enum class log_format;  // config.hpp

namespace log {

// Makes the default spdlog logger write `format` lines on stderr at `level` and above.
void install(log_format format, log_level level);
void set_level(log_level level);
std::optional<log_level> parse_level(std::string_view text);
std::optional<log_format> parse_format(std::string_view text);

// A value of a structured field: JSON string or number; text: key=value.
struct field {
    std::string key;
    std::string value;
    bool number = false;
};

// One info line with structured fields (top-level keys in JSON, key=value pairs in text).
void info(std::string_view message, std::vector<field> const& fields);

// What `install` writes for one line, for tests: `time` is RFC 3339 UTC.
std::string format_line(log_format format, std::string_view time, std::string_view level, std::string_view message,
                        std::vector<field> const& fields);

}  // namespace log
}  // namespace airlock::service
