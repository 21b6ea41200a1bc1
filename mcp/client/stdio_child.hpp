#pragma once
// The pieces of the stdio transport's state (stdio_transport.cpp): one child as the transport drives
// it, a message waiting to be written to it, and a call or notification waiting for its outcome.
// Internal to the transport; every member but the child's process is used on its strand only.

#include "mcp/client/child_process.hpp"
#include "mcp/client/transport.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace airlock::mcp {

namespace detail {

namespace asio = boost::asio;
using strand_type = asio::strand<asio::any_io_executor>;
using clock_type = std::chrono::steady_clock;

struct stdio_pending;

struct stdio_outgoing {
    std::string line;                       // one message, newline included (what is left of it)
    std::shared_ptr<stdio_pending> owner;   // who waits for this write; null for fire-and-forget
    bool begun = false;                     // its first bytes are already in the pipe
};

// One child process as the transport drives it: its pipes on the strand, its process (spawn,
// signals, reaping: child_process.hpp) shared with the destructor, which kills from any thread.
struct stdio_child {
    stdio_child(strand_type const& s, std::shared_ptr<child_process> p)
        : proc(std::move(p)), pid(proc->pid()), in(s), out(s), err(s), pidfd(s), writer_wake(s), drain_timer(s) {}

    void signal(int sig) { proc->signal(sig); }
    bool try_reap() { return proc->try_reap(); }
    void kill_and_reap() { proc->kill_and_reap(); }
    std::string how_it_ended() const { return proc->how_it_ended(); }

    std::shared_ptr<child_process> proc;
    pid_t pid;
    clock_type::time_point started;
    asio::posix::stream_descriptor in, out, err, pidfd;
    bool have_pidfd = false;

    // strand only
    bool exit_seen = false;      // reaped, as far as the strand knows
    bool lost = false;           // its pending requests have been failed; it serves no more
    bool stopping = false;       // the shutdown sequence runs for it
    bool stdin_closed = false;
    bool writing = false;        // the writer has a message in flight
    bool stdout_open = true;
    std::deque<stdio_outgoing> queue;
    asio::steady_timer writer_wake;
    asio::steady_timer drain_timer;
    std::vector<std::shared_ptr<asio::steady_timer>> exit_waiters;
};

struct stdio_pending {
    enum class phase { queued, writing, written };

    explicit stdio_pending(strand_type const& s) : timer(s) {}

    void finish() {
        done = true;
        timer.cancel();
    }

    bool is_request = false;
    request_id id;
    std::shared_ptr<stdio_child> child;
    phase at = phase::queued;
    std::optional<request_id> progress;
    bool wants_log = false;
    std::function<void(notification const&)> on_notification;
    asio::steady_timer timer;  // expires at the deadline; cancelled when the outcome is known
    bool done = false;
    std::optional<message> reply;
    std::optional<transport_error> error;
};

}  // namespace detail

}  // namespace airlock::mcp
