#include "service/ops/log.hpp"

#include "core/secrets.hpp"
#include "service/config/config.hpp"

#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <sstream>

namespace airlock::service::log {

namespace {

// The length of the valid UTF-8 sequence at s[i], or 0.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
    auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 && b <= 0xdf ? 2 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
    auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b == 0xe0 && b1 < 0xa0) return 0;                 // overlong
    if (b == 0xed && b1 > 0x9f) return 0;                 // surrogates
    if (b == 0xf0 && b1 < 0x90) return 0;                 // overlong
    if (b == 0xf4 && b1 > 0x8f) return 0;                 // above U+10FFFF
    return n;
}

// A JSON string body: control characters escaped, invalid UTF-8 (an upstream's stderr can hold
// anything) replaced by U+FFFD, so every line parses.
void json_escape(std::string& out, std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
        } else if (auto n = utf8_sequence(s, i)) {
            out.append(s.substr(i, n));
            i += n;
            continue;
        } else {
            out += "\\ufffd";
        }
        ++i;
    }
}

// Text lines stay one line: line breaks and other control characters are shown escaped.
void text_escape(std::string& out, std::string_view s) {
    for (unsigned char c : s) {
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else out += static_cast<char>(c);
    }
}

void text_value(std::string& out, std::string_view v) {
    bool quote = v.empty() || v.find_first_of(" \"=\\") != std::string_view::npos;
    if (!quote) return text_escape(out, v);
    out += '"';
    for (char c : v) {
        if (c == '"' || c == '\\') out += '\\';
        std::string one(1, c);
        text_escape(out, one);
    }
    out += '"';
}

std::string rfc3339_millis(std::chrono::system_clock::time_point t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

std::string_view level_name(spdlog::level::level_enum l) {
    switch (l) {
        case spdlog::level::trace: return "trace";
        case spdlog::level::debug: return "debug";
        case spdlog::level::info: return "info";
        case spdlog::level::warn: return "warn";
        case spdlog::level::err: return "error";
        case spdlog::level::critical: return "critical";
        default: return "off";
    }
}

spdlog::level::level_enum to_spdlog(log_level l) {
    switch (l) {
        case log_level::trace: return spdlog::level::trace;
        case log_level::debug: return spdlog::level::debug;
        case log_level::info: return spdlog::level::info;
        case log_level::warn: return spdlog::level::warn;
        case log_level::error: return spdlog::level::err;
    }
    return spdlog::level::info;
}

// The structured fields of the line being logged on this thread: spdlog's sync logger formats in
// the caller's thread, inside the log call that info() makes.
thread_local std::vector<field> const* current_fields = nullptr;

class line_formatter final : public spdlog::formatter {
public:
    explicit line_formatter(log_format f) : format_(f) {}

    void format(spdlog::details::log_msg const& msg, spdlog::memory_buf_t& dest) override {
        static std::vector<field> const none;
        auto line = format_line(format_, rfc3339_millis(msg.time), level_name(msg.level),
                                std::string_view(msg.payload.data(), msg.payload.size()),
                                current_fields ? *current_fields : none);
        dest.append(line.data(), line.data() + line.size());
    }

    std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<line_formatter>(format_); }

private:
    log_format format_;
};

}  // namespace

std::string format_line(log_format format, std::string_view time, std::string_view level, std::string_view message,
                        std::vector<field> const& fields) {
    // Redacted before escaping: the secret is looked for as it was written (and as JSON writes it).
    auto secrets = core::secrets::current();
    std::string msg(message);
    secrets->redact(msg);
    std::string out;
    out.reserve(64 + msg.size());
    if (format == log_format::json) {
        out += "{\"time\":\"";
        out += time;
        out += "\",\"level\":\"";
        out += level;
        out += "\",\"msg\":\"";
        json_escape(out, msg);
        out += '"';
        for (auto const& f : fields) {
            std::string v = f.value;
            secrets->redact(v);
            out += ",\"";
            json_escape(out, f.key);
            out += "\":";
            if (f.number) {
                out += v;
            } else {
                out += '"';
                json_escape(out, v);
                out += '"';
            }
        }
        out += "}\n";
        return out;
    }
    out += time;
    out += ' ';
    out += level;
    out.append(level.size() < 5 ? 5 - level.size() + 1 : 1, ' ');
    text_escape(out, msg);
    for (auto const& f : fields) {
        std::string v = f.value;
        secrets->redact(v);
        out += ' ';
        out += f.key;
        out += '=';
        text_value(out, v);
    }
    out += '\n';
    return out;
}

void install(log_format format, log_level level) {
    // Unbuffered stderr, one write per line: stdout belongs to command output and to MCP over stdio.
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    sink->set_formatter(std::make_unique<line_formatter>(format));
    auto logger = std::make_shared<spdlog::logger>("airlock", std::move(sink));
    logger->set_level(to_spdlog(level));
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(std::move(logger));
}

void set_level(log_level level) { spdlog::set_level(to_spdlog(level)); }

std::optional<log_level> parse_level(std::string_view text) {
    for (auto l : {log_level::trace, log_level::debug, log_level::info, log_level::warn, log_level::error})
        if (to_string(l) == text) return l;
    return std::nullopt;
}

std::optional<log_format> parse_format(std::string_view text) {
    if (text == "json") return log_format::json;
    if (text == "text") return log_format::text;
    return std::nullopt;
}

void info(std::string_view message, std::vector<field> const& fields) {
    auto logger = spdlog::default_logger_raw();
    if (!logger->should_log(spdlog::level::info)) return;
    current_fields = &fields;
    logger->log(spdlog::level::info, message);
    current_fields = nullptr;
}

}  // namespace airlock::service::log
