#pragma once
// The legacy sessions of `/mcp` (2025-03-26 .. 2025-11-25): the table that mints, caps and expires
// them (mcp/server/session_table), and what each session holds while it lives — its requests in
// flight and its GET stream — under one lock of their own.

#include "mcp/server/exchange.hpp"
#include "mcp/server/session_table.hpp"
#include "service/mcp/sse_streams.hpp"

#include <boost/json/object.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

struct http_session : mcp::session_record {
    bool busy() const override { return !in_flight.empty() || get_stream; }

    // Set before the session is admitted, then only read.
    std::string protocol_version;
    boost::json::object client_capabilities;
    std::shared_ptr<mcp::ask_table> asks = std::make_shared<mcp::ask_table>();  // guarded by the exchange
    std::atomic<std::uint64_t> next_event{1};  // the ids of its SSE events, unique within the session

    // Guarded by http_sessions.
    std::map<std::string, std::weak_ptr<mcp::served_request>> in_flight;  // by request id text
    std::shared_ptr<listen_stream> get_stream;
};

class http_sessions {
public:
    explicit http_sessions(mcp::session_table::options o) : table_(std::move(o)) {}

    // A new session in, or refused; `expired`: the caller's sessions that idled out meanwhile,
    // taken out for the caller to finish. `open`: how many sessions are open.
    struct admission {
        std::optional<mcp::session_table::refusal> refused;
        std::vector<std::shared_ptr<http_session>> expired;
        std::size_t open = 0;
    };
    admission admit(std::shared_ptr<http_session> const& s);

    // The caller's live session with that id (`touch`: its idle clock restarts), and a session
    // found expired, taken out for the caller to finish.
    struct lookup {
        std::shared_ptr<http_session> live;
        std::shared_ptr<http_session> expired;
    };
    lookup find(std::string_view id, std::string const& principal, bool touch);

    // Takes out the sessions idle for longer than the timeout (at most once a second).
    std::vector<std::shared_ptr<http_session>> sweep();
    // Takes `s` out; false when it has ended another way meanwhile.
    bool remove(std::shared_ptr<http_session> const& s);
    // Takes every session out (a stop).
    std::vector<std::shared_ptr<http_session>> take_all();
    std::size_t size() const;

    // What an ended session held, taken out of it.
    struct holdings {
        std::vector<std::shared_ptr<mcp::served_request>> running;
        std::shared_ptr<listen_stream> stream;
    };
    holdings release(http_session& s);

    void add_request(http_session& s, std::shared_ptr<mcp::served_request> const& rq);
    // The request is done: it leaves the session, whose idle clock starts again.
    void end_request(http_session& s, std::shared_ptr<mcp::served_request> const& rq);
    // The request in flight with that id text, if any.
    std::shared_ptr<mcp::served_request> request(http_session& s, std::string const& key);

    // Makes `ls` the session's GET stream; false when one is open already.
    bool open_stream(http_session& s, std::shared_ptr<listen_stream> const& ls);
    // The GET stream `ls` closed: the session's idle clock starts again.
    void close_stream(http_session& s, std::shared_ptr<listen_stream> const& ls);
    // Takes every session's GET stream out (a drain).
    std::vector<std::shared_ptr<listen_stream>> take_streams();

private:
    mutable std::mutex mutex_;
    mcp::session_table table_;
};

}  // namespace airlock::service
