#include "service/rfc3339.hpp"

#include <cstdio>

namespace airlock::service {

std::string rfc3339(std::chrono::system_clock::time_point t) {
    auto secs = std::chrono::floor<std::chrono::seconds>(t);
    auto day = std::chrono::floor<std::chrono::days>(secs);
    std::chrono::year_month_day ymd{day};
    std::chrono::hh_mm_ss hms{secs - day};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02lld:%02lld:%02lldZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<long long>(hms.hours().count()), static_cast<long long>(hms.minutes().count()),
                  static_cast<long long>(hms.seconds().count()));
    return buf;
}

}  // namespace airlock::service
