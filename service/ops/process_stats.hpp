#pragma once
// What the kernel says about this process, for the standard Prometheus process_* metrics: CPU time,
// memory, file descriptors and start time, read from /proc. The parsers are pure functions of the
// files' text, so tests give them any text; sample_process() reads the files.

#include "core/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

// The fields of /proc/self/stat the metrics need, in the kernel's units.
struct proc_stat {
    std::uint64_t user_ticks = 0;      // utime: clock ticks spent in user mode
    std::uint64_t system_ticks = 0;    // stime: clock ticks spent in the kernel
    std::uint64_t start_ticks = 0;     // starttime: clock ticks after boot when the process started
    std::uint64_t virtual_bytes = 0;   // vsize
    std::uint64_t resident_pages = 0;  // rss
};

// /proc/[pid]/stat. Text that is not one (no command name, too few fields, a field not a number)
// is an error "bad_proc_text" naming the field, as proc(5) numbers it.
core::result<proc_stat> parse_proc_stat(std::string_view text);
// The boot time in seconds since the epoch: the `btime` line of /proc/stat.
core::result<std::uint64_t> parse_boot_time(std::string_view text);
// The soft limit of the "Max open files" line of /proc/[pid]/limits; nullopt when it is
// "unlimited" (which Linux never reports for open files, but the file's format allows).
core::result<std::optional<std::uint64_t>> parse_max_open_files(std::string_view text);

// The process_* values, in the units Prometheus names them by. A value the system would not give
// is nullopt, its metric keeps its last reading, and `problems` says why.
struct process_sample {
    std::optional<double> cpu_seconds;
    std::optional<double> start_time_seconds;  // since the epoch
    std::optional<std::uint64_t> resident_bytes;
    std::optional<std::uint64_t> virtual_bytes;
    std::optional<std::uint64_t> open_fds;
    std::optional<std::uint64_t> max_fds;

    struct problem {
        std::string source;   // the file read, e.g. "/proc/self/stat"
        std::string message;  // what was wrong with it
    };
    std::vector<problem> problems;
};

// Combines what the files say with the clock tick rate and the page size.
process_sample combine(std::optional<proc_stat> const& stat, std::optional<std::uint64_t> boot_time,
                       long ticks_per_second, long page_size);
// Reads /proc/self/stat, /proc/stat, /proc/self/limits and /proc/self/fd now.
process_sample sample_process();

}  // namespace airlock::service
