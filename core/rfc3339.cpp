#include "core/rfc3339.hpp"

#include <algorithm>
#include <cstdio>

namespace airlock::core {

std::string rfc3339(std::chrono::system_clock::time_point t) {
    return rfc3339(std::chrono::floor<std::chrono::seconds>(t));
}

std::string rfc3339(std::chrono::sys_seconds secs) {
    auto day = std::chrono::floor<std::chrono::days>(secs);
    std::chrono::year_month_day ymd{day};
    std::chrono::hh_mm_ss hms{secs - day};
    char buf[64];  // room for any year and field the types can hold, so nothing is cut
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02lld:%02lld:%02lldZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<long long>(hms.hours().count()), static_cast<long long>(hms.minutes().count()),
                  static_cast<long long>(hms.seconds().count()));
    return buf;
}

// The floor keeps "valid until 10:00:00" reading as expired at 10:00:00.5, and a bound of
// 10:00:00.5 matching runs admitted within that second (admitted_at has whole seconds).
std::optional<std::chrono::sys_seconds> parse_rfc3339(std::string_view s) {
    using namespace std::chrono;
    auto digits = [&](std::size_t pos, std::size_t len) -> std::optional<int> {
        if (pos + len > s.size()) return std::nullopt;
        int n = 0;
        for (std::size_t i = pos; i < pos + len; ++i) {
            if (s[i] < '0' || s[i] > '9') return std::nullopt;
            n = n * 10 + (s[i] - '0');
        }
        return n;
    };
    auto is = [&](std::size_t pos, std::string_view any) { return pos < s.size() && any.find(s[pos]) != any.npos; };
    auto y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2), mi = digits(14, 2),
         sec = digits(17, 2);
    if (!y || !mo || !d || !h || !mi || !sec || !is(4, "-") || !is(7, "-") || !is(10, "Tt ") || !is(13, ":") ||
        !is(16, ":"))
        return std::nullopt;
    std::size_t pos = 19;
    if (is(pos, ".")) {
        ++pos;
        std::size_t const start = pos;
        while (is(pos, "0123456789")) ++pos;
        if (pos == start) return std::nullopt;
    }
    minutes offset{0};
    if (is(pos, "Zz")) {
        ++pos;
    } else if (is(pos, "+-")) {
        bool const east = s[pos] == '+';
        auto oh = digits(pos + 1, 2), om = digits(pos + 4, 2);
        if (!oh || !om || !is(pos + 3, ":") || *oh > 23 || *om > 59) return std::nullopt;
        offset = hours{*oh} + minutes{*om};
        if (!east) offset = -offset;
        pos += 6;
    } else {
        return std::nullopt;
    }
    if (pos != s.size()) return std::nullopt;
    year_month_day const ymd{year{*y}, month{static_cast<unsigned>(*mo)}, day{static_cast<unsigned>(*d)}};
    // RFC 3339 allows a leap second (:60); it lies within the last second of its minute.
    if (!ymd.ok() || *h > 23 || *mi > 59 || *sec > 60) return std::nullopt;
    return sys_seconds{sys_days{ymd}} + hours{*h} + minutes{*mi} + seconds{std::min(*sec, 59)} - offset;
}

std::optional<std::string> since_bound(std::string_view s) {
    using namespace std::chrono;
    auto t = parse_rfc3339(s);
    if (!t) return std::nullopt;
    // An offset can carry a time out of years 0000-9999, which have the only four-digit spellings
    // (and string order is time order only among those); every admission lies within them anyway.
    constexpr sys_seconds earliest{sys_days{year{0} / January / 1}};
    constexpr sys_seconds latest{sys_days{year{9999} / December / 31} + hours{23} + minutes{59} + seconds{59}};
    return rfc3339(std::clamp(*t, earliest, latest));
}

}  // namespace airlock::core
