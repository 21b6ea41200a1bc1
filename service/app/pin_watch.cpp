#include "service/app/pin_watch.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

namespace airlock::service {

namespace asio = boost::asio;

pin_digests digests_of(std::vector<core::pin> const& pins) {
    pin_digests out;
    for (auto const& p : pins) out.emplace(p.key, p.pinned);
    return out;
}

std::set<std::string> servers_with_accepted_pins(pin_digests const& before, pin_digests const& after) {
    std::set<std::string> out;
    for (auto const& [key, digest] : after) {
        auto it = before.find(key);
        if (it == before.end() || it->second == digest) continue;
        out.insert(key.substr(0, key.find('/')));
    }
    return out;
}

asio::awaitable<void> async_watch_pins(std::weak_ptr<core::pin_store> pins,
                                       std::function<void(std::string const& server)> changed,
                                       std::chrono::milliseconds every) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    std::optional<pin_digests> seen;
    for (;;) {
        {
            auto store = pins.lock();
            if (!store) co_return;
            // A handful of small records in one read transaction: cheap enough to do every second.
            auto now = co_await store->async_pins();
            if (!now) {
                spdlog::debug("pins: cannot read them to watch for acceptances: {}", now.error().message);
            } else {
                auto digests = digests_of(*now);
                if (seen)
                    for (auto const& server : servers_with_accepted_pins(*seen, digests)) {
                        spdlog::info("upstream {}: a pinned definition was accepted; reading its tools again", server);
                        changed(server);
                    }
                seen = std::move(digests);
            }
        }
        timer.expires_after(every);
        co_await timer.async_wait(asio::use_awaitable);
    }
}

}  // namespace airlock::service
