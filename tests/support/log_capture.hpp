#pragma once
// Captures what airlock logs while it lives: the default spdlog logger is replaced by one writing
// to a ring buffer, and restored afterwards.

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace airlock::testing {

class log_capture {
public:
    explicit log_capture(spdlog::level::level_enum level = spdlog::level::info)
        : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(2000)), previous_(spdlog::default_logger()) {
        sink_->set_pattern("%l %v");
        auto logger = std::make_shared<spdlog::logger>("capture", sink_);
        logger->set_level(level);
        spdlog::set_default_logger(logger);
    }
    ~log_capture() { spdlog::set_default_logger(previous_); }
    log_capture(log_capture const&) = delete;
    log_capture& operator=(log_capture const&) = delete;

    std::string text() const {
        std::string all;
        for (auto const& line : sink_->last_formatted()) all += line;
        return all;
    }
    bool contains(std::string const& needle) const { return text().find(needle) != std::string::npos; }

private:
    std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
    std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace airlock::testing
