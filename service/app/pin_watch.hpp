#pragma once
// `airlock pins accept` writes the journal a running airlock serves, from another process. The
// running airlock reads the pins every second and tells the gateway in force which upstreams had a
// pinned definition change, so an accepted tool is served (and its clients told) at once rather than
// at the catalogue's next re-read. A REST accept (POST /v1/pins/.../accept) tells the gateway itself.

#include "core/pins.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace airlock::service {

// Each pin's key → its pinned digest.
using pin_digests = std::map<std::string, std::string>;
pin_digests digests_of(std::vector<core::pin> const& pins);

// The upstreams ("server" of "server/tool") with a pin in both whose pinned digest differs: an
// acceptance. A pin that is new in `after` is a first sighting by a catalogue read, which needs no one told.
std::set<std::string> servers_with_accepted_pins(pin_digests const& before, pin_digests const& after);

// Reads the pins every `every` and calls `changed` for each upstream servers_with_accepted_pins
// names, until the store is gone. Held weakly: the watch must not keep the journal open.
boost::asio::awaitable<void> async_watch_pins(std::weak_ptr<core::pin_store> pins,
                                              std::function<void(std::string const& server)> changed,
                                              std::chrono::milliseconds every);

}  // namespace airlock::service
