#pragma once
// The legacy (2025-03-26 .. 2025-11-25) sessions of the Streamable HTTP endpoint: where a session
// id is minted, how many sessions one principal and everyone together may hold, when an idle one
// expires and what Retry-After a refused initialize carries. The clock and the CSPRNG are injected,
// so the rules run without sockets or waiting.
//
// Nothing here locks: the endpoint calls it under the mutex that also guards what makes a session
// busy (its requests in flight, its GET stream).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::mcp {

// What the table knows of a session; the endpoint's session derives from it.
struct session_record {
    virtual ~session_record() = default;
    // Something keeps the session from idling: a request in flight or a GET stream open.
    virtual bool busy() const = 0;

    std::string id;         // set by the table when it admits the session
    std::string principal;  // who opened it; nobody else may use it
    std::chrono::steady_clock::time_point last_seen;
};

class session_table {
public:
    using time_point = std::chrono::steady_clock::time_point;

    struct options {
        std::chrono::milliseconds idle_timeout{30 * 60 * 1000};
        std::size_t max_sessions = 1024;
        std::size_t max_per_principal = 64;
        std::function<void(std::uint8_t*, std::size_t)> random;  // CSPRNG for session ids; RAND_bytes when empty
        std::function<time_point()> clock;                      // steady_clock when empty
    };

    // Why an initialize was refused, and the Retry-After (whole seconds) that goes with it.
    struct refusal {
        enum class kind { principal_share, table_full };
        kind why = kind::table_full;
        std::size_t holding = 0;  // principal_share: the sessions the principal holds
        std::int64_t retry_after = 1;
    };

    // What admitting a session came to: `refused`, or the session is in with a fresh id. Either way
    // `expired` lists the caller's own sessions that idled out meanwhile: the caller finishes them.
    struct admission {
        std::optional<refusal> refused;
        std::vector<std::shared_ptr<session_record>> expired;
    };

    explicit session_table(options o);

    time_point now() const;
    std::chrono::milliseconds idle_timeout() const { return options_.idle_timeout; }

    // Mints an id for `s` (of s->principal, last seen now) and adds it, unless a cap refuses it.
    admission admit(std::shared_ptr<session_record> const& s);

    // What looking a session up came to: the caller's live session, or nothing; a session found
    // expired is taken out and handed back for the caller to finish.
    struct lookup {
        std::shared_ptr<session_record> live;
        std::shared_ptr<session_record> expired;
    };
    // The caller's live session with that id (a session of another principal is as good as
    // unknown); `touch` restarts its idle clock.
    lookup find(std::string_view id, std::string const& principal, bool touch);

    // Restarts the session's idle clock (its request finished, its stream closed).
    void touch(session_record& s) const { s.last_seen = now(); }

    // Takes the sessions idle for longer than the timeout out of the table; at most once a second
    // (nothing otherwise). The caller finishes them.
    std::vector<std::shared_ptr<session_record>> sweep();

    // Takes `s` out when it is still the table's session under its id; false when it has ended
    // another way meanwhile.
    bool remove(std::shared_ptr<session_record> const& s);

    // Takes every session out (a stop).
    std::vector<std::shared_ptr<session_record>> take_all();

    std::size_t size() const { return sessions_.size(); }
    std::size_t held_by(std::string const& principal) const;
    template <class F>
    void for_each(F&& f) const {
        for (auto const& [id, s] : sessions_) f(*s);
    }

private:
    using map = std::map<std::string, std::shared_ptr<session_record>, std::less<>>;

    bool expired(session_record const& s, time_point t) const;
    void add(std::shared_ptr<session_record> const& s);
    map::iterator drop(map::iterator it);
    std::vector<std::shared_ptr<session_record>> reap_of(std::string const& principal, time_point t);
    std::int64_t seconds_until_a_slot_frees(std::string const& principal, time_point t) const;

    options options_;
    map sessions_;
    std::map<std::string, std::set<std::string>> held_;  // principal → the ids of its sessions
    time_point last_sweep_{};
};

}  // namespace airlock::mcp
