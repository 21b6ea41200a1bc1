#include "service/config/config.hpp"

namespace airlock::service {

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

}  // namespace airlock::service
