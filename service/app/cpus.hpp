#pragma once
// How many CPUs airlock may really use, for the default number of I/O threads. The hardware
// thread count overstates it in a container or under `taskset`: the CPU affinity mask and a cgroup
// CPU quota (Docker's --cpus, a Kubernetes CPU limit) each cap it, and more I/O threads than CPUs
// only makes the threads preempt and wake one another.

#include <filesystem>
#include <optional>
#include <string_view>

namespace airlock::service {

// The CPUs of this process's affinity mask, capped by its cgroup's CPU quota (rounded up), never
// fewer than one. Reads /proc/self/cgroup and the cgroup file system under `cgroup_root`.
unsigned usable_cpus(std::filesystem::path const& cgroup_root = "/sys/fs/cgroup");

// The CPUs a cgroup v2 `cpu.max` ("QUOTA PERIOD", or "max PERIOD" for none) allows, rounded up;
// nullopt when it sets no limit or cannot be read.
std::optional<unsigned> cpu_limit_of_cpu_max(std::string_view text);
// The same from cgroup v1's cpu.cfs_quota_us (-1 for none) and cpu.cfs_period_us.
std::optional<unsigned> cpu_limit_of_cfs(std::string_view quota_us, std::string_view period_us);

}  // namespace airlock::service
