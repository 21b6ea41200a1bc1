#pragma once
// Gateway session runs that an airlock process left open when it ended without closing them (a
// crash, kill -9, a host lost): who holds a run, and sealing the runs nobody holds any more, with
// the calls that were in flight flagged as in doubt.

#include "core/error.hpp"
#include "core/journal.hpp"

#include <boost/asio/awaitable.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

// This process's claim on the gateway runs it admits: a file in <journal>/owners named by a random
// id, held under an exclusive flock(2) while the process lives. The kernel drops the lock when the
// process ends however it ends, so another airlock on the same journal (`airlock stdio` beside
// `airlock serve`, or the next start) tells a live owner from a dead one without guessing.
class instance_lock {
public:
    static core::result<std::unique_ptr<instance_lock>> acquire(std::filesystem::path const& journal_dir);
    ~instance_lock();
    instance_lock(instance_lock const&) = delete;
    instance_lock& operator=(instance_lock const&) = delete;

    std::string const& id() const noexcept { return id_; }
    std::filesystem::path const& journal_dir() const noexcept { return journal_dir_; }
    // Whether the process `id` still holds its lock (this process counts as alive). An id that is not a
    // lock's name (an empty one: runs written before owners were recorded) is nobody's: not alive.
    bool alive(std::string_view id) const;
    // Removes the files of processes that are gone; returns how many.
    std::size_t sweep() const;

private:
    instance_lock(std::filesystem::path dir, std::string id, int fd);
    std::filesystem::path journal_dir_;
    std::string id_;
    int fd_ = -1;
};

// What closing one interrupted session run writes: a note per call started with no outcome (and
// none noted before), then the seal. Pure: the decision is tested without a journal.
struct interrupted_seal {
    std::vector<core::new_record> notes;  // {event: "effect_in_doubt", effect_key, tool, mutates, why}
    std::size_t in_doubt = 0;             // calls in doubt, notes written earlier included
    std::string status;                   // "quarantined" when a mutating call is in doubt, else "cancelled"
    std::string reason;
};
interrupted_seal plan_interrupted_seal(std::vector<core::record> const& records);

// Whether a run's first record admits a gateway session run (its body's mode is "gateway", or has
// no mode: gateway runs written before modes were recorded), and the instance that admitted it.
struct session_owner {
    bool gateway = false;
    std::string instance;  // "" when the run names none
};
session_owner owner_of(core::record const& admitted);

// Seals every unsealed gateway session run whose owner `alive` says is gone, and quarantines every
// unsealed run whose records cannot be read (nothing could resume it). Returns how many runs it
// sealed; failures to seal one run are logged and do not stop the others.
boost::asio::awaitable<core::result<std::size_t>> async_seal_interrupted_sessions(
    std::shared_ptr<core::journal_store> journal, std::function<bool(std::string_view instance)> alive);

}  // namespace airlock::service
