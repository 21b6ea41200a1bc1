#include "service/app/cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace airlock::service {

namespace {

namespace fs = std::filesystem;

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
    return s;
}

std::optional<long long> number(std::string_view s) {
    s = trimmed(s);
    long long v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return v;
}

// A quota of `quota` µs of CPU time every `period` µs allows quota/period CPUs: 1.5 rounds up to 2.
std::optional<unsigned> cpus_for(long long quota, long long period) {
    if (quota <= 0 || period <= 0) return std::nullopt;
    return static_cast<unsigned>(std::max<long long>(1, (quota + period - 1) / period));
}

// Keeps in `best` the lower of it and `l`, where nullopt means "no limit".
void keep_tighter(std::optional<unsigned>& best, std::optional<unsigned> l) {
    if (l && (!best || *l < *best)) best = l;
}

std::optional<std::string> read_text(fs::path const& p) {
    std::ifstream in(p);
    if (!in) return std::nullopt;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The cgroup paths of this process from /proc/self/cgroup: the v2 one ("0::/path") and the v1 one
// of the cpu controller ("N:cpu,cpuacct:/path").
struct own_cgroups {
    std::optional<std::string> v2, v1_cpu;
};

own_cgroups read_own_cgroups() {
    own_cgroups out;
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
        auto first = line.find(':');
        auto second = first == std::string::npos ? first : line.find(':', first + 1);
        if (second == std::string::npos) continue;
        auto controllers = std::string_view(line).substr(first + 1, second - first - 1);
        auto path = line.substr(second + 1);
        if (line.compare(0, first, "0") == 0 && controllers.empty()) {
            out.v2 = path;
            continue;
        }
        std::string_view rest = controllers;
        while (!rest.empty()) {
            auto comma = rest.find(',');
            if (rest.substr(0, comma) == "cpu") out.v1_cpu = path;
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
    }
    return out;
}

// The tightest limit on the way from the process's cgroup up to the root: a parent's quota binds
// its children too. `limit_at` reads one directory's limit.
template <class F>
std::optional<unsigned> tightest(fs::path const& mount, std::string const& own, F limit_at) {
    std::optional<unsigned> best;
    fs::path rel = fs::path(own).relative_path();
    for (;;) {
        keep_tighter(best, limit_at(mount / rel));
        if (rel.empty()) break;
        rel = rel.parent_path();
    }
    return best;
}

std::optional<unsigned> cgroup_limit(fs::path const& root) {
    auto own = read_own_cgroups();
    std::optional<unsigned> limit;
    if (own.v2)
        keep_tighter(limit, tightest(root, *own.v2, [](fs::path const& dir) -> std::optional<unsigned> {
            auto text = read_text(dir / "cpu.max");
            return text ? cpu_limit_of_cpu_max(*text) : std::nullopt;
        }));
    if (own.v1_cpu) {
        // The cpu controller is mounted as cpu, or with cpuacct beside it, depending on the distribution.
        for (auto const* name : {"cpu", "cpu,cpuacct", "cpuacct,cpu"}) {
            auto mount = root / name;
            std::error_code ec;
            if (!fs::exists(mount / "cpu.cfs_quota_us", ec)) continue;
            keep_tighter(limit, tightest(mount, *own.v1_cpu, [](fs::path const& dir) -> std::optional<unsigned> {
                auto quota = read_text(dir / "cpu.cfs_quota_us");
                auto period = read_text(dir / "cpu.cfs_period_us");
                return quota && period ? cpu_limit_of_cfs(*quota, *period) : std::nullopt;
            }));
            break;
        }
    }
    return limit;
}

}  // namespace

std::optional<unsigned> cpu_limit_of_cpu_max(std::string_view text) {
    text = trimmed(text);
    auto space = text.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    auto quota = text.substr(0, space);
    if (quota == "max") return std::nullopt;
    auto q = number(quota);
    auto p = number(text.substr(space + 1));
    if (!q || !p) return std::nullopt;
    return cpus_for(*q, *p);
}

std::optional<unsigned> cpu_limit_of_cfs(std::string_view quota_us, std::string_view period_us) {
    auto q = number(quota_us);
    auto p = number(period_us);
    if (!q || !p) return std::nullopt;
    return cpus_for(*q, *p);
}

unsigned usable_cpus(std::filesystem::path const& cgroup_root) {
    unsigned cpus = std::thread::hardware_concurrency();
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        auto in_mask = static_cast<unsigned>(CPU_COUNT(&set));
        if (in_mask > 0 && (cpus == 0 || in_mask < cpus)) cpus = in_mask;
    }
    if (auto limit = cgroup_limit(cgroup_root); limit && (cpus == 0 || *limit < cpus)) cpus = *limit;
    return std::max(1u, cpus);
}

}  // namespace airlock::service
