// The process_* metrics' sources: /proc/self/stat, /proc/stat and /proc/self/limits as text, parsed
// with no file opened; and once against this test's own /proc.
#include "service/ops/process_stats.hpp"

#include <catch2/catch.hpp>

#include <ctime>

#include <unistd.h>

using namespace airlock::service;

namespace {

// A real line of /proc/[pid]/stat (a `cat`), with utime 250, stime 50, starttime 1502475,
// vsize 3133440 and rss 360 put in their places.
constexpr char const* stat_line =
    "19388 (cat) R 19385 19385 13459 0 -1 4194304 96 0 0 0 250 50 0 0 20 0 1 0 1502475 3133440 360 "
    "18446744073709551615 94078643822592 94078643842473 140736176507472 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 "
    "94078643858480 94078643860096 94079009796096 140736176511420 140736176511440 140736176511440 "
    "140736176513003 0\n";

}  // namespace

TEST_CASE("a /proc stat line gives CPU ticks, start ticks, virtual bytes and resident pages") {
    auto s = parse_proc_stat(stat_line);
    REQUIRE(s.has_value());
    CHECK(s->user_ticks == 250);
    CHECK(s->system_ticks == 50);
    CHECK(s->start_ticks == 1502475);
    CHECK(s->virtual_bytes == 3133440);
    CHECK(s->resident_pages == 360);
}

TEST_CASE("a command name with spaces and parentheses does not shift the stat fields") {
    std::string line = stat_line;
    line.replace(line.find("(cat)"), 5, "(airlock ) R 1 (x))");
    auto s = parse_proc_stat(line);
    REQUIRE(s.has_value());
    CHECK(s->user_ticks == 250);
    CHECK(s->resident_pages == 360);
}

// The message a parse failed with: what an operator reads in the log.
template <class T>
std::string failure(airlock::core::result<T> const& r) {
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "bad_proc_text");
    return r.error().message;
}

TEST_CASE("a stat line cut short, without its command name or with a field that is no number is refused, naming why") {
    CHECK(failure(parse_proc_stat("")) == "has no command name in parentheses");
    CHECK(failure(parse_proc_stat("19388 cat R 1 2 3")) == "has no command name in parentheses");
    CHECK(failure(parse_proc_stat("19388 (cat) R 19385 19385 13459 0 -1 4194304 96 0 0 0 250 50")) ==
          "has 15 fields, fewer than the 24 the metrics read");
    std::string line = stat_line;
    line.replace(line.find(" 250 "), 5, " 2x0 ");
    CHECK(failure(parse_proc_stat(line)) == "field 14 (utime) is \"2x0\", not a number");
    line = stat_line;
    line.replace(line.find(" 3133440 "), 9, " -3133440 ");
    CHECK(failure(parse_proc_stat(line)) == "field 23 (vsize) is \"-3133440\", not a number");
    // A field of garbage is quoted cut short.
    line = stat_line;
    line.replace(line.find(" 360 "), 5, " " + std::string(500, 'z') + " ");
    CHECK(failure(parse_proc_stat(line)) == "field 24 (rss) is \"" + std::string(40, 'z') + "...\", not a number");
    // Bytes that are not text at all (a NUL, a high byte) fail the same way, not worse.
    line = stat_line;
    line[line.find(" 50 ") + 1] = '\0';
    CHECK(failure(parse_proc_stat(line)).starts_with("field 15 (stime) is"));
    CHECK(failure(parse_proc_stat(std::string_view("\xff\xfe)\x00", 4))) ==
          "has 3 fields, fewer than the 24 the metrics read");
}

TEST_CASE("the boot time is the btime line of /proc/stat") {
    CHECK(parse_boot_time("cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 5 6\nctxt 77\nbtime 1796282937\nprocesses 9\n").value() ==
          1796282937u);
    CHECK(failure(parse_boot_time("cpu  1 2 3 4\nctxt 77\n")) == "has no btime line");
    CHECK(failure(parse_boot_time("btime soon\n")) == "its btime line is \"btime soon\", not \"btime SECONDS\"");
    CHECK(failure(parse_boot_time("btime 12 13\n")) == "its btime line is \"btime 12 13\", not \"btime SECONDS\"");
    // A line that only starts with the word is another line.
    CHECK(failure(parse_boot_time("btimex 12\n")) == "has no btime line");
}

TEST_CASE("the open-files limit is the soft one, and unlimited is no number") {
    constexpr char const* limits =
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max cpu time              unlimited            unlimited            seconds   \n"
        "Max open files            1024                 1048576              files     \n"
        "Max locked memory         8388608              8388608              bytes     \n";
    CHECK(parse_max_open_files(limits).value() == 1024u);
    auto unlimited = parse_max_open_files("Max open files            unlimited            unlimited            files\n");
    REQUIRE(unlimited.has_value());
    CHECK_FALSE(unlimited->has_value());
    CHECK(failure(parse_max_open_files("Max cpu time              unlimited            unlimited            seconds\n")) ==
          "has no Max open files line");
    CHECK(failure(parse_max_open_files("Max open files            lots\n")) ==
          "its Max open files line is \"Max open files            lots\", with no soft limit");
    CHECK(failure(parse_max_open_files("Max open files")) == "its Max open files line is \"Max open files\", with no soft limit");
}

TEST_CASE("ticks become seconds and pages bytes; the start is the boot time plus the start ticks") {
    auto const stat = parse_proc_stat(stat_line).value();
    auto s = combine(stat, 1796282937, 100, 4096);
    CHECK(s.cpu_seconds == 3.0);
    CHECK(s.start_time_seconds == 1796282937 + 15024.75);
    CHECK(s.resident_bytes == 360u * 4096);
    CHECK(s.virtual_bytes == 3133440u);

    auto no_boot = combine(stat, std::nullopt, 100, 4096);
    CHECK_FALSE(no_boot.start_time_seconds.has_value());
    CHECK(no_boot.cpu_seconds == 3.0);
    auto nothing = combine(std::nullopt, 1796282937, 100, 4096);
    CHECK_FALSE(nothing.cpu_seconds.has_value());
    CHECK_FALSE(nothing.resident_bytes.has_value());
}

TEST_CASE("this process's own sample is sane") {
    auto s = sample_process();
    CHECK(s.problems.empty());
    REQUIRE(s.cpu_seconds.has_value());
    CHECK(*s.cpu_seconds >= 0);
    REQUIRE(s.start_time_seconds.has_value());
    auto const now = static_cast<double>(std::time(nullptr));
    CHECK(*s.start_time_seconds <= now + 60);  // the boot time is whole seconds, and drifts from the clock
    CHECK(*s.start_time_seconds > now - 3600);  // this test binary started moments ago
    REQUIRE(s.resident_bytes.has_value());
    CHECK(*s.resident_bytes > 0);
    CHECK(s.virtual_bytes >= s.resident_bytes);
    REQUIRE(s.open_fds.has_value());
    CHECK(*s.open_fds >= 3);  // stdin, stdout, stderr
    REQUIRE(s.max_fds.has_value());
    CHECK(*s.max_fds >= *s.open_fds);
}
