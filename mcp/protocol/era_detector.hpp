#pragma once
// The state machine a client uses to find out which era a server speaks.

#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/messages.hpp"
#include "mcp/protocol/versions.hpp"

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <vector>

namespace airlock::mcp {

enum class transport_kind { stdio, http };

// A reply to the request the detector asked to send.
struct probe_reply {
    std::optional<unsigned> http_status;  // HTTP only
    std::optional<message> body;          // nullopt: an empty or unreadable body
};

// Finds out which era a server speaks (2026-07-28 versioning, "Backward Compatibility"): probe with
// server/discover carrying our preferred modern version; a DiscoverResult or a recognised modern
// error means modern (pick a mutual version from what it lists); any other error, or on stdio no
// answer in time, means legacy: initialize, then notifications/initialized. The caller performs the
// sends and reports replies; the detector never does I/O. Its request ids are the strings
// "airlock-era-probe" and "airlock-initialize".
class era_detector {
public:
    struct options {
        transport_kind transport = transport_kind::stdio;
        implementation client_info;
        boost::json::object client_capabilities;
        // Versions the client is willing to speak, most preferred first; each must be one airlock speaks.
        std::vector<std::string> versions = {std::string(version::modern), std::string(version::legacy_latest),
                                             std::string(version::legacy_2025_06_18),
                                             std::string(version::legacy_2025_03_26)};
    };

    enum class step_kind {
        send,    // send `request`, then report its reply (on_reply) or its absence (on_timeout)
        wait,    // the input was not the awaited reply (another id, a notification): keep waiting
        done,    // decided: `decided_era` and `version`; for legacy, send `notification` first
        failed,  // no way to talk to this server: `reason` says why
    };

    struct step {
        step_kind kind = step_kind::wait;
        std::optional<mcp::request> request;
        std::optional<mcp::notification> notification;
        era decided_era = era::modern;
        std::string version;
        std::optional<discover_result> discovered;    // modern, when the probe returned one
        std::optional<initialize_result> initialized;  // legacy
        std::string reason;                            // how it was decided, or why it failed
    };

    explicit era_detector(options o);

    step start();                              // the server/discover probe
    step on_reply(probe_reply const& reply);   // a reply to the last request sent
    step on_timeout();                         // no reply within the caller's deadline

private:
    enum class state { idle, probing, initializing, finished };
    step send_initialize(std::string legacy_version, std::string why);
    step decide_modern(std::string version, std::string why, std::optional<discover_result> d = std::nullopt);
    step choose_from(std::vector<std::string> const& offered, std::string const& context,
                     std::optional<discover_result> d);
    step fail(std::string why);

    options opts_;
    state state_ = state::idle;
    std::string fallback_reason_;
};

}  // namespace airlock::mcp
