#pragma once
// What a SIGHUP reload would do, decided without doing it: from the configuration in force and the
// one just read, a refusal, or which upstream clients are kept, made anew and retired, and which
// settings wait for a restart. Pure: no I/O, no clients; service/app/reload.cpp performs a plan.

#include "service/config/config.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace airlock::service {

struct reload_plan {
    // Why the reload is refused (the running configuration stays); nullopt when it goes ahead.
    std::optional<std::string> refusal;
    // keep[i]: the index in before.upstreams whose client next.upstreams[i] keeps, or nullopt when
    // it needs a new one (new, or changed in anything its client was built from).
    std::vector<std::optional<std::size_t>> keep;
    std::vector<std::size_t> retired;  // indices in before.upstreams whose clients nobody keeps
    // Settings that changed and take effect only at the next restart ("server.tls", "agents", ...).
    std::vector<std::string> restart_only;
    std::vector<std::string> principals_added;    // by name, in next's order
    std::vector<std::string> principals_removed;  // by name, in before's order

    std::size_t new_clients() const;  // the upstreams of next that get a new client
};

// The plan for replacing `before` by `next`. Upstreams are matched in order: each of next's keeps
// the client of the first of before's, not yet kept, that it is the same client as.
reload_plan plan_reload(config const& before, config const& next);

// Whether a client built for `a` (under egress `ea`) serves `b` (under `eb`) unchanged: everything
// the client was built from is the same (the egress list too, for HTTP upstreams, whose address
// check holds a copy of it).
bool same_client(upstream_config const& a, core::egress_allowlist const& ea, upstream_config const& b,
                 core::egress_allowlist const& eb);

// Settings a reload cannot change on a running server: they wait for the next restart.
std::vector<std::string> restart_only_changes(config const& before, config const& after);

bool has_anonymous(config const& c);  // a principal serves requests without a token

}  // namespace airlock::service
