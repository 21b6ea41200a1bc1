#include "service/ops/process_stats.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

namespace airlock::service {

namespace {

core::error bad_text(std::string message) { return core::make_error("bad_proc_text", std::move(message)); }

std::optional<std::uint64_t> to_number(std::string_view s) {
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

// The fields of `s` split at runs of spaces, tabs and line feeds.
std::vector<std::string_view> fields_of(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
        auto j = i;
        while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\n') ++j;
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

// The lines of `text`, each without its line feed.
std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        auto nl = text.find('\n');
        out.push_back(text.substr(0, nl));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return out;
}

// A field quoted into a message, cut short: the text came from a file, not from us.
std::string quoted(std::string_view field) {
    constexpr std::size_t most = 40;
    return "\"" + std::string(field.substr(0, most)) + (field.size() > most ? "...\"" : "\"");
}

core::result<std::string> read_text(char const* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return core::make_error("proc_unreadable", std::string("cannot be read: ") + std::strerror(errno));
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The value `parsed` holds, or nullopt with why it holds none noted under `path`.
template <class T>
std::optional<T> or_noted(core::result<T> parsed, char const* path, std::vector<process_sample::problem>& problems) {
    if (parsed) return std::move(*parsed);
    problems.push_back({path, parsed.error().message});
    return std::nullopt;
}

// `parse` on the file at `path`: a file that cannot be read is noted as a parse that failed is.
template <class Parse>
auto read_and_parse(char const* path, Parse parse, std::vector<process_sample::problem>& problems) {
    auto text = read_text(path);
    if (!text) return or_noted(decltype(parse(std::string_view()))(text.error()), path, problems);
    return or_noted(parse(*text), path, problems);
}

}  // namespace

core::result<proc_stat> parse_proc_stat(std::string_view text) {
    // "PID (COMM) STATE ...": the command name may hold spaces and parentheses of its own (a thread
    // can name itself ") R 1"), so the fields are counted from the last ')', where the kernel's
    // own text resumes. After it, f[0] is the state, field 3 of proc(5): f[i] is field i + 3.
    auto close = text.rfind(')');
    if (close == std::string_view::npos) return bad_text("has no command name in parentheses");
    auto f = fields_of(text.substr(close + 1));
    struct wanted {
        std::size_t field;  // as proc(5) numbers it
        char const* name;
        std::uint64_t proc_stat::*into;
    };
    constexpr wanted fields[] = {{14, "utime", &proc_stat::user_ticks},      {15, "stime", &proc_stat::system_ticks},
                                 {22, "starttime", &proc_stat::start_ticks}, {23, "vsize", &proc_stat::virtual_bytes},
                                 {24, "rss", &proc_stat::resident_pages}};
    if (f.size() + 2 < 24)
        return bad_text("has " + std::to_string(f.size() + 2) + " fields, fewer than the 24 the metrics read");
    proc_stat out;
    for (auto const& w : fields) {
        auto v = to_number(f[w.field - 3]);
        if (!v)
            return bad_text("field " + std::to_string(w.field) + " (" + w.name + ") is " + quoted(f[w.field - 3]) +
                            ", not a number");
        out.*w.into = *v;
    }
    return out;
}

core::result<std::uint64_t> parse_boot_time(std::string_view text) {
    for (auto line : lines_of(text)) {
        auto f = fields_of(line);
        if (f.empty() || f[0] != "btime") continue;
        if (f.size() == 2)
            if (auto v = to_number(f[1])) return *v;
        return bad_text("its btime line is " + quoted(line) + ", not \"btime SECONDS\"");
    }
    return bad_text("has no btime line");
}

core::result<std::optional<std::uint64_t>> parse_max_open_files(std::string_view text) {
    // "Max open files            1024                 1048576              files": the limit's name
    // has spaces, so the soft limit is the first field after it.
    constexpr std::string_view name = "Max open files";
    for (auto line : lines_of(text)) {
        if (!line.starts_with(name)) continue;
        auto f = fields_of(line.substr(name.size()));
        if (!f.empty() && f[0] == "unlimited") return std::optional<std::uint64_t>();
        if (!f.empty())
            if (auto v = to_number(f[0])) return std::optional(*v);
        return bad_text("its Max open files line is " + quoted(line) + ", with no soft limit");
    }
    return bad_text("has no Max open files line");
}

process_sample combine(std::optional<proc_stat> const& stat, std::optional<std::uint64_t> boot_time,
                       long ticks_per_second, long page_size) {
    process_sample s;
    if (!stat) return s;
    if (ticks_per_second > 0) {
        auto const hz = static_cast<double>(ticks_per_second);
        s.cpu_seconds = static_cast<double>(stat->user_ticks + stat->system_ticks) / hz;
        if (boot_time) s.start_time_seconds = static_cast<double>(*boot_time) + static_cast<double>(stat->start_ticks) / hz;
    }
    if (page_size > 0) s.resident_bytes = stat->resident_pages * static_cast<std::uint64_t>(page_size);
    s.virtual_bytes = stat->virtual_bytes;
    return s;
}

process_sample sample_process() {
    std::vector<process_sample::problem> problems;
    auto stat = read_and_parse("/proc/self/stat", parse_proc_stat, problems);
    auto boot = read_and_parse("/proc/stat", parse_boot_time, problems);
    auto s = combine(stat, boot, ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE));
    if (auto limit = read_and_parse("/proc/self/limits", parse_max_open_files, problems)) s.max_fds = *limit;
    std::error_code ec;
    std::uint64_t fds = 0;
    // The directory's own descriptor, open while it is read, is counted too: a scrape sees one more
    // than the server holds between scrapes.
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++fds;
    if (ec)
        problems.push_back({"/proc/self/fd", "cannot be listed: " + ec.message()});
    else
        s.open_fds = fds;
    s.problems = std::move(problems);
    return s;
}

}  // namespace airlock::service
