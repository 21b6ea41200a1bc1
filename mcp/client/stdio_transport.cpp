#include "mcp/client/stdio_transport.hpp"

#include "core/secrets.hpp"
#include "mcp/client/stderr_log.hpp"
#include "mcp/client/stdio_child.hpp"
#include "mcp/protocol/line_class.hpp"
#include "mcp/protocol/line_framer.hpp"
#include "mcp/protocol/log_throttle.hpp"
#include "mcp/client/on_strand.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <spdlog/spdlog.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <deque>
#include <map>
#include <mutex>
#include <set>

namespace airlock::mcp {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::as_tuple;
using asio::use_awaitable;
using error_code = boost::system::error_code;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr std::size_t read_chunk_bytes = 64 * 1024;
// After the child exits, what it wrote just before exiting may still be in the pipe: read on for
// this long before closing stdout (a grandchild that escaped the process group could hold it open).
constexpr milliseconds drain_after_exit{200};
// When stdout reaches EOF, wait this long for the exit status so failed calls can say how it ended.
constexpr milliseconds exit_status_wait{200};
// After SIGKILL the kernel needs no cooperation; this only bounds a wait that should never be long.
constexpr milliseconds after_sigkill_wait{5'000};
// Reaping without a pidfd (kernels before 5.3) polls at this interval.
constexpr milliseconds reap_poll_interval{50};

using strand_type = asio::strand<asio::any_io_executor>;


std::string excerpt(std::string_view text, std::size_t cap = 200) {
    if (text.size() <= cap) return std::string(text);
    // Cut here, so redacted here: a secret the cut splits would be half shown by every later output.
    std::string head(text.substr(0, cap));
    core::secrets::redact_cut(head);
    return head + "... (" + std::to_string(text.size()) + " bytes)";
}

// Requests carry `_meta.progressToken` when the caller wants progress, and (2026-07-28)
// `_meta["io.modelcontextprotocol/logLevel"]` when it wants request-scoped log messages.
json::object const* meta_of(std::optional<json::object> const& params) {
    if (!params) return nullptr;
    auto const* m = params->if_contains("_meta");
    return m && m->is_object() ? &m->get_object() : nullptr;
}

}  // namespace

using detail::stdio_child;
using detail::stdio_outgoing;
using detail::stdio_pending;

struct stdio_transport::state : std::enable_shared_from_this<state> {
    state(asio::any_io_executor exec, stdio_options o)
        : strand(asio::make_strand(std::move(exec))), opts(std::move(o)), backoff(opts.restart_backoff_initial) {}

    strand_type strand;
    stdio_options opts;
    std::atomic<bool> abandoned{false};
    std::atomic<int> current_pid{-1};
    std::atomic<std::uint64_t> children_lost{0};
    // The server can make these happen once per line: logged once per interval with a count.
    log_throttle repeated_log;

    // strand only
    std::shared_ptr<stdio_child> current;
    std::set<std::shared_ptr<stdio_child>> active;  // spawned and not yet fully wound down
    std::map<request_id, std::shared_ptr<stdio_pending>> pending;
    bool closing = false;
    clock_type::time_point next_start{};
    milliseconds backoff;
    std::vector<std::shared_ptr<asio::steady_timer>> backoff_waiters;

    // any thread: the destructor kills these synchronously
    std::mutex children_mutex;
    std::vector<std::shared_ptr<stdio_child>> unreaped;

    std::mutex handlers_mutex;
    std::function<void(notification const&)> notification_handler;
    server_request_handler request_handler;
    std::string protocol_version;

    std::string const& name() const { return opts.server_name; }

    // The first parameter of every coroutine below: a coroutine's parameters live in its frame, so
    // the state outlives any coroutine still running when the transport object is destroyed.
    using keep_alive = std::shared_ptr<state>;

    void spawn(asio::awaitable<void> task) {
        auto report = [name = opts.server_name](std::exception_ptr e) {
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (std::exception const& ex) {
                spdlog::error("upstream {}: stdio transport task ended by an internal error: {}", name, ex.what());
            }
        };
        asio::co_spawn(strand, std::move(task), std::move(report));
    }

    // ---- starting ----------------------------------------------------------------------------

    transport_result<std::shared_ptr<stdio_child>> start_child() {
        auto started = spawn_child(child_spec{opts.argv, opts.env, opts.cwd});
        if (!started) return transport_fault(transport_error::kind::not_sent, "upstream " + name() + ": " + started.error().message);
        auto const& pipes = started->pipes;
        auto c = std::make_shared<stdio_child>(strand, std::move(started->process));
        c->started = clock_type::now();
        c->in.assign(pipes.in);
        c->out.assign(pipes.out);
        c->err.assign(pipes.err);
        error_code ignored;
        c->in.non_blocking(true, ignored);
        c->out.non_blocking(true, ignored);
        c->err.non_blocking(true, ignored);
        if (pipes.pidfd >= 0) {
            c->pidfd.assign(pipes.pidfd);
            c->have_pidfd = true;
        }
        {
            std::lock_guard lock(children_mutex);
            unreaped.push_back(c);
        }
        spdlog::info("upstream {}: started {} (pid {})", name(), opts.argv.front(), c->pid);
        return c;
    }

    void launch(std::shared_ptr<stdio_child> const& c) {
        current = c;
        current_pid = c->pid;
        active.insert(c);
        auto self = shared_from_this();
        spawn(read_stdout(self, c));
        spawn(read_stderr(self, c));
        spawn(write_stdin(self, c));
        spawn(watch_exit(self, c));
    }

    void schedule_restart(clock_type::duration lived) {
        // A child that ran for a long while before dying has failed anew: start from the shortest wait.
        if (lived >= opts.restart_backoff_max) backoff = opts.restart_backoff_initial;
        next_start = clock_type::now() + backoff;
        backoff = std::min(backoff * 2, opts.restart_backoff_max);
    }

    // The running child, starting one (after the restart backoff) when none runs. Gives up with
    // not_sent when the backoff would outlast `give_up`.
    asio::awaitable<transport_result<std::shared_ptr<stdio_child>>> ensure_child(
        std::optional<clock_type::time_point> give_up) {
        if (closing) co_return transport_fault(transport_error::kind::not_sent, "upstream " + name() + ": the transport is closed");
        if (current) co_return current;
        auto now = clock_type::now();
        if (next_start > now) {
            if (give_up && next_start > *give_up)
                co_return transport_fault(transport_error::kind::not_sent,
                               "upstream " + name() + ": restarting after a failure; next attempt in " +
                                   std::to_string(std::chrono::duration_cast<milliseconds>(next_start - now).count()) +
                                   " ms, after the deadline");
            auto t = std::make_shared<asio::steady_timer>(strand, next_start);
            backoff_waiters.push_back(t);
            co_await t->async_wait(as_tuple(use_awaitable));
            std::erase(backoff_waiters, t);
            if (closing) co_return transport_fault(transport_error::kind::not_sent, "upstream " + name() + ": the transport is closed");
            if (current) co_return current;
        }
        auto started = start_child();
        if (!started) {
            schedule_restart(clock_type::duration::zero());
            spdlog::warn("{}", started.error().detail);
            co_return started.error();
        }
        launch(*started);
        co_return *started;
    }

    // ---- writing -----------------------------------------------------------------------------

    void enqueue(std::shared_ptr<stdio_child> const& c, std::string line, std::shared_ptr<stdio_pending> owner) {
        line.push_back('\n');
        bool begun = false;
        // Nothing queued or in flight: the line goes into the pipe now, without waking the writer
        // (one hop less per call). Whatever the pipe does not take at once, and any error, is left
        // to the writer, which handles it as it always does.
        if (!c->writing && c->queue.empty() && !c->stdin_closed) {
            auto n = ::write(c->in.native_handle(), line.data(), line.size());
            if (n == static_cast<ssize_t>(line.size())) {
                if (owner) {
                    owner->at = stdio_pending::phase::written;
                    if (!owner->is_request) owner->finish();
                }
                return;
            }
            if (n > 0) {
                line.erase(0, static_cast<std::size_t>(n));
                begun = true;
                if (owner) owner->at = stdio_pending::phase::writing;
            }
        }
        c->queue.push_back(stdio_outgoing{std::move(line), std::move(owner), begun});
        c->writer_wake.cancel();
    }

    // The only writer of the child's stdin: messages leave in the order they were queued, whole.
    asio::awaitable<void> write_stdin(keep_alive, std::shared_ptr<stdio_child> c) {
        while (!c->stdin_closed) {
            if (c->queue.empty()) {
                c->writer_wake.expires_at(clock_type::time_point::max());
                co_await c->writer_wake.async_wait(as_tuple(use_awaitable));
                continue;
            }
            auto item = std::move(c->queue.front());
            c->queue.pop_front();
            if (item.owner) item.owner->at = stdio_pending::phase::writing;
            c->writing = true;
            auto [ec, n] = co_await asio::async_write(c->in, asio::buffer(item.line), as_tuple(use_awaitable));
            c->writing = false;
            if (ec) {
                // Bytes that reached the pipe may reach the server: that request is in doubt.
                bool sent_some = n > 0 || item.begun;
                if (item.owner) item.owner->at = sent_some ? stdio_pending::phase::written : stdio_pending::phase::queued;
                std::string why = "its stdin could not be written: " + ec.message();
                if (item.owner && !item.owner->is_request && !item.owner->done) {
                    item.owner->error = transport_fault(sent_some ? transport_error::kind::no_reply : transport_error::kind::not_sent,
                                             "upstream " + name() + ": " + why);
                    item.owner->finish();
                }
                if (!c->stdin_closed) lost(c, why);
                break;
            }
            if (item.owner) {
                item.owner->at = stdio_pending::phase::written;
                if (!item.owner->is_request) item.owner->finish();
            }
        }
        fail_queue(c, "the server's stdin is closed");
    }

    void fail_queue(std::shared_ptr<stdio_child> const& c, std::string const& why) {
        for (auto& item : c->queue) {
            if (item.owner && !item.owner->done) {
                item.owner->error = transport_fault(item.begun ? transport_error::kind::no_reply : transport_error::kind::not_sent,
                                         "upstream " + name() + ": " + why);
                item.owner->finish();
            }
        }
        c->queue.clear();
    }

    void close_stdin(std::shared_ptr<stdio_child> const& c, std::string const& why) {
        if (c->stdin_closed) return;
        c->stdin_closed = true;
        fail_queue(c, why);
        error_code ignored;
        c->in.close(ignored);
        c->writer_wake.cancel();
    }

    // ---- reading -----------------------------------------------------------------------------

    asio::awaitable<void> read_stdout(keep_alive, std::shared_ptr<stdio_child> c) {
        std::string buf(read_chunk_bytes, '\0');
        line_framer framer(opts.max_message_bytes);
        // No read deadline here: a server is silent between calls by design. What must not wait
        // forever is a call, and each call has its own deadline.
        for (;;) {
            auto [ec, n] = co_await c->out.async_read_some(asio::buffer(buf), as_tuple(use_awaitable));
            std::string_view data(buf.data(), n);
            while (!data.empty()) {
                auto ended = framer.take(data);
                if (ended == line_framer::ended::none) break;
                if (ended == line_framer::ended::oversized) skip_oversized(c, framer.skipped());
                else handle_line(c, framer.line());
                if (abandoned) co_return;
            }
            if (ec) break;
        }
        c->stdout_open = false;
        if (abandoned) co_return;
        if (framer.finish() != line_framer::ended::none)
            spdlog::warn("upstream {}: stdout ended inside a line: {}", name(), excerpt(framer.line()));
        if (!c->exit_seen) co_await wait_exit(c, exit_status_wait);
        lost(c, c->exit_seen ? c->how_it_ended() : std::string("closed its stdout"));
    }

    asio::awaitable<void> read_stderr(keep_alive, std::shared_ptr<stdio_child> c) {
        std::string buf(read_chunk_bytes, '\0');
        stderr_log log(name());
        for (;;) {
            auto [ec, n] = co_await c->err.async_read_some(asio::buffer(buf), as_tuple(use_awaitable));
            log.take(std::string_view(buf.data(), n));
            if (ec) break;
        }
        if (!abandoned) log.finish();
    }

    void handle_line(std::shared_ptr<stdio_child> const& c, std::string_view line) {
        auto seen = classify_line(line);
        switch (seen.what) {
            case line_class::kind::blank: return;
            case line_class::kind::message: return handle_message(c, std::move(*seen.msg));
            case line_class::kind::unreadable_reply:
            case line_class::kind::not_json_rpc: return skip_unreadable(c, seen);
        }
    }

    void handle_message(std::shared_ptr<stdio_child> const& c, message m) {
        if (auto* n = std::get_if<notification>(&m)) {
            route_notification(c, *n);
        } else if (auto* r = std::get_if<request>(&m)) {
            spawn(answer_server_request(shared_from_this(), c, std::move(*r)));
        } else {
            auto id = id_of(m);
            auto p = id ? awaiting_reply(c, *id) : nullptr;
            if (!p) {
                // Typically the reply to a request that passed its deadline (the spec says to ignore it).
                spdlog::debug("upstream {}: ignored a reply for {} which no request awaits", name(),
                              id ? to_string(*id) : std::string("an unknown id"));
                return;
            }
            pending.erase(*id);
            p->reply = std::move(m);
            p->finish();
        }
    }

    // A line that is not a valid JSON-RPC message is skipped. But if it is shaped like a reply to
    // a request in flight, that request would otherwise wait for its deadline: it fails now, as a
    // reply that could not be understood.
    void skip_unreadable(std::shared_ptr<stdio_child> const& c, line_class const& seen) {
        auto const& line = seen.text;
        auto const& reason = seen.reason;
        if (auto p = seen.what == line_class::kind::unreadable_reply ? awaiting_reply(c, *seen.id) : nullptr) {
            auto const& id = *seen.id;
            if (auto more = repeated_log.admit("unreadable reply"))
                spdlog::warn("upstream {}: the reply to request {} is not valid JSON-RPC ({}): {}{}", name(),
                             to_string(id), reason, excerpt(line), *more);
            pending.erase(id);
            p->error = transport_fault(transport_error::kind::protocol,
                            "upstream " + name() + ": the reply to request " + to_string(id) +
                                " is not valid JSON-RPC: " + reason);
            p->finish();
            return;
        }
        if (auto more = repeated_log.admit("not JSON-RPC"))
            spdlog::warn("upstream {}: skipped a stdout line that is not a JSON-RPC message ({}): {}{}", name(), reason,
                         excerpt(line), *more);
    }

    // A line longer than max_message_bytes is not read. If it answers a call in flight, that call
    // fails now rather than at its deadline.
    void skip_oversized(std::shared_ptr<stdio_child> const& c, oversized_line const& skipped) {
        auto const limit = std::to_string(opts.max_message_bytes);
        auto p = owner_of_oversized(c, skipped);
        if (!p) {
            if (auto more = repeated_log.admit("oversized"))
                spdlog::warn("upstream {}: skipped a stdout message longer than {} bytes (max_message_bytes){}", name(), limit,
                             *more);
            return;
        }
        if (auto more = repeated_log.admit("oversized reply"))
            spdlog::warn("upstream {}: the reply to request {} is longer than {} bytes (max_message_bytes); the request fails{}",
                         name(), to_string(p->id), limit, *more);
        pending.erase(p->id);
        p->error = transport_fault(transport_error::kind::protocol, "upstream " + name() + ": the server sent a message of more than " +
                                                             limit + " bytes in reply to request " + to_string(p->id) +
                                                             "; the limit is the upstream's max_message_bytes");
        p->finish();
    }

    // The call an oversized line answers: the one its id names (found in its first or last bytes),
    // or the only call in flight when those bytes do not tell. None when the line is a request or a
    // notification, or when more than one call could own it.
    std::shared_ptr<stdio_pending> owner_of_oversized(std::shared_ptr<stdio_child> const& c, oversized_line const& skipped) {
        auto seen = classify_oversized(skipped);
        if (seen.what == oversized_class::kind::not_a_reply) return nullptr;
        if (seen.what == oversized_class::kind::reply_to) return awaiting_reply(c, *seen.id);
        std::shared_ptr<stdio_pending> only;
        for (auto const& [_, p] : pending) {
            if (p->child != c || p->done) continue;
            if (only) return nullptr;
            only = p;
        }
        return only;
    }

    // The call in flight on `c` that waits for the reply with this id, if any.
    std::shared_ptr<stdio_pending> awaiting_reply(std::shared_ptr<stdio_child> const& c, request_id const& id) {
        auto it = pending.find(id);
        if (it == pending.end() || it->second->child != c || it->second->done) return nullptr;
        return it->second;
    }

    void route_notification(std::shared_ptr<stdio_child> const& c, notification const& n) {
        std::shared_ptr<stdio_pending> target;
        if (n.method == "notifications/progress") {
            auto const* token = n.params ? n.params->if_contains("progressToken") : nullptr;
            auto wanted = token ? read_request_id(*token) : std::nullopt;
            for (auto const& [id, p] : pending)
                if (wanted && p->child == c && p->progress == wanted) target = p;
        } else if (n.method == "notifications/message") {
            // stdio has no per-request stream: a log message belongs to a request only when exactly
            // one request in flight asked for request-scoped logging (2026-07-28's _meta logLevel).
            // Session-wide logging (legacy logging/setLevel) goes to the notification handler.
            int askers = 0;
            for (auto const& [id, p] : pending)
                if (p->child == c && p->wants_log) ++askers, target = p;
            if (askers != 1) target = nullptr;
        }
        if (target) {
            if (target->on_notification) call_handler(target->on_notification, n);
            return;
        }
        std::function<void(notification const&)> handler;
        {
            std::lock_guard lock(handlers_mutex);
            handler = notification_handler;
        }
        if (handler) {
            call_handler(handler, n);
        } else {
            spdlog::debug("upstream {}: no handler for notification {}", name(), n.method);
        }
    }

    void call_handler(std::function<void(notification const&)> const& h, notification const& n) {
        try {
            h(n);
        } catch (std::exception const& e) {
            spdlog::error("upstream {}: a notification handler for {} threw: {}", name(), n.method, e.what());
        }
    }

    asio::awaitable<void> answer_server_request(keep_alive, std::shared_ptr<stdio_child> c, request r) {
        server_request_handler handler;
        {
            std::lock_guard lock(handlers_mutex);
            handler = request_handler;
        }
        message reply;
        // ping is the transport's own liveness check: answered here, whatever the handler knows.
        if (r.method == "ping") {
            reply = response{r.id, json::object{}};
        } else if (!handler) {
            reply = make_error_response(r.id, rpc_code::method_not_found, "Method not found: " + r.method);
        } else {
            std::optional<boost::system::result<json::object, error_object>> answered;
            std::string failure;
            try {
                answered = co_await handler(r);
            } catch (std::exception const& e) {
                failure = e.what();
            }
            if (!answered) {
                spdlog::error("upstream {}: the handler for server request {} threw: {}", name(), r.method, failure);
                reply = make_error_response(r.id, rpc_code::internal_error, "Internal error");
            } else if (*answered) {
                reply = response{r.id, std::move(**answered)};
            } else {
                reply = error_response{r.id, answered->error()};
            }
        }
        if (!c->lost && !c->stdin_closed) enqueue(c, serialize(reply), nullptr);
    }

    // ---- exit, loss and shutdown -------------------------------------------------------------

    asio::awaitable<void> watch_exit(keep_alive, std::shared_ptr<stdio_child> c) {
        while (!c->try_reap()) {
            if (abandoned) break;
            bool readable = false;
            if (c->have_pidfd) {
                auto [ec] = co_await c->pidfd.async_wait(asio::posix::stream_descriptor::wait_read, as_tuple(use_awaitable));
                readable = !ec;
            }
            if (readable && c->try_reap()) break;
            if (abandoned) break;
            asio::steady_timer t(strand, reap_poll_interval);
            co_await t.async_wait(as_tuple(use_awaitable));
        }
        {
            std::lock_guard lock(children_mutex);
            std::erase(unreaped, c);
        }
        error_code ignored;
        c->pidfd.close(ignored);
        c->exit_seen = true;
        for (auto& w : c->exit_waiters) w->cancel();
        if (abandoned) {
            active.erase(c);
            co_return;
        }
        auto how = c->how_it_ended();
        if (c->stopping || closing) {
            spdlog::info("upstream {}: pid {} {}", name(), c->pid, how);
        } else {
            spdlog::warn("upstream {}: pid {} {} unexpectedly", name(), c->pid, how);
        }
        if (c->stdout_open) {
            c->drain_timer.expires_after(drain_after_exit);
            co_await c->drain_timer.async_wait(as_tuple(use_awaitable));
        }
        c->out.close(ignored);  // ends the reader if a process outside the group still holds the pipe
        c->err.close(ignored);
        lost(c, how);
        active.erase(c);
    }

    // Waits until the child has been reaped, at most `limit`; true when it has.
    asio::awaitable<bool> wait_exit(std::shared_ptr<stdio_child> c, milliseconds limit) {
        if (c->exit_seen) co_return true;
        auto t = std::make_shared<asio::steady_timer>(strand, limit);
        c->exit_waiters.push_back(t);
        co_await t->async_wait(as_tuple(use_awaitable));
        std::erase(c->exit_waiters, t);
        co_return c->exit_seen;
    }

    // The child serves no more: its calls fail, according to whether they had been written, and a
    // process still running is stopped. Restarting waits for the next call.
    void lost(std::shared_ptr<stdio_child> const& c, std::string const& why) {
        if (c->lost) return;
        c->lost = true;
        if (current == c) {
            current = nullptr;
            current_pid = -1;
            ++children_lost;
            if (!closing) {
                schedule_restart(clock_type::now() - c->started);
                spdlog::warn("upstream {}: the server {}; it restarts on the next call (not before {} ms)", name(), why,
                             std::chrono::duration_cast<milliseconds>(next_start - clock_type::now()).count());
            }
        }
        for (auto it = pending.begin(); it != pending.end();) {
            auto p = it->second;
            if (p->child != c) {
                ++it;
                continue;
            }
            it = pending.erase(it);
            if (p->done) continue;
            bool left = p->at != stdio_pending::phase::queued;
            p->error = transport_fault(left ? transport_error::kind::no_reply : transport_error::kind::not_sent,
                            "upstream " + name() + ": the server " + why +
                                (left ? " after the request was sent" : " before the request was sent"));
            p->finish();
        }
        close_stdin(c, "the server " + why);
        if (!c->exit_seen && !c->stopping && !closing) spawn(stop_child(shared_from_this(), c));
    }

    // The spec's order: close stdin, wait; SIGTERM, wait; SIGKILL. Returns once the child is reaped.
    asio::awaitable<void> stop_child(keep_alive, std::shared_ptr<stdio_child> c) {
        if (c->stopping) {
            co_await wait_exit(c, opts.stdin_close_grace + opts.sigterm_grace + after_sigkill_wait);
            co_return;
        }
        c->stopping = true;
        close_stdin(c, "the transport is shutting the server down");
        bool gone = co_await wait_exit(c, opts.stdin_close_grace);
        if (gone) co_return;
        spdlog::info("upstream {}: pid {} still runs {} ms after its stdin closed; sending SIGTERM", name(), c->pid,
                     opts.stdin_close_grace.count());
        c->signal(SIGTERM);
        gone = co_await wait_exit(c, opts.sigterm_grace);
        if (gone) co_return;
        spdlog::warn("upstream {}: pid {} ignored SIGTERM for {} ms; sending SIGKILL", name(), c->pid,
                     opts.sigterm_grace.count());
        c->signal(SIGKILL);
        gone = co_await wait_exit(c, after_sigkill_wait);
        if (!gone) spdlog::error("upstream {}: pid {} has not been reaped after SIGKILL", name(), c->pid);
    }

    // ---- the operations ----------------------------------------------------------------------

    asio::awaitable<transport_result<void>> do_open(keep_alive) {
        auto c = co_await ensure_child(std::nullopt);
        if (!c) co_return c.error();
        co_return transport_result<void>{};
    }

    asio::awaitable<transport_result<message>> do_request(keep_alive, request req, request_options ro) {
        auto give_up = clock_type::now() + ro.deadline;
        auto opened = co_await ensure_child(give_up);
        if (!opened) co_return opened.error();
        auto c = *opened;
        if (pending.count(req.id))
            co_return transport_fault(transport_error::kind::not_sent,
                           "upstream " + name() + ": request id " + to_string(req.id) + " is already in flight");

        auto p = std::make_shared<stdio_pending>(strand);
        p->is_request = true;
        p->id = req.id;
        p->child = c;
        p->on_notification = std::move(ro.on_notification);
        if (auto const* meta = meta_of(req.params)) {
            if (auto const* token = meta->if_contains("progressToken")) p->progress = read_request_id(*token);
            p->wants_log = meta->contains("io.modelcontextprotocol/logLevel");
        }
        pending.emplace(req.id, p);
        enqueue(c, serialize(req), p);

        p->timer.expires_at(give_up);
        auto [ec] = co_await p->timer.async_wait(as_tuple(use_awaitable));
        if (auto it = pending.find(req.id); it != pending.end() && it->second == p) pending.erase(it);
        if (p->reply) co_return std::move(*p->reply);
        if (p->error) co_return *p->error;

        // No outcome: the deadline passed (or whoever awaits this call cancelled it).
        p->done = true;
        bool by_caller = ec == asio::error::operation_aborted;
        std::string why = by_caller ? "the call was cancelled" : "no reply within " + std::to_string(ro.deadline.count()) + " ms";
        if (p->at == stdio_pending::phase::queued) {
            std::erase_if(c->queue, [&](stdio_outgoing const& o) { return o.owner == p; });
            co_return transport_fault(transport_error::kind::not_sent,
                           "upstream " + name() + ": request " + to_string(req.id) + " could not be written: " + why);
        }
        // The server may be working on it: tell it to stop (the spec forbids cancelling initialize).
        if (req.method != "initialize" && !c->lost && !c->stdin_closed) {
            json::object params{{"requestId", to_json(req.id)}, {"reason", why}};
            enqueue(c, serialize(message{notification{"notifications/cancelled", std::move(params)}}), nullptr);
        }
        spdlog::info("upstream {}: request {} ({}): {}; sent notifications/cancelled", name(), to_string(req.id),
                     req.method, why);
        co_return transport_fault(by_caller ? transport_error::kind::cancelled : transport_error::kind::deadline,
                       "upstream " + name() + ": " + req.method + ": " + why);
    }

    asio::awaitable<transport_result<void>> do_notify(keep_alive, notification n) {
        auto give_up = clock_type::now() + opts.write_deadline;
        auto opened = co_await ensure_child(give_up);
        if (!opened) co_return opened.error();
        auto c = *opened;
        auto p = std::make_shared<stdio_pending>(strand);
        p->child = c;
        enqueue(c, serialize(message{std::move(n)}), p);
        if (!p->done) {  // written at once: nothing to wait for
            p->timer.expires_at(give_up);
            co_await p->timer.async_wait(as_tuple(use_awaitable));
        }
        if (p->error) co_return *p->error;
        if (p->done) co_return transport_result<void>{};
        p->done = true;
        if (p->at == stdio_pending::phase::queued) {
            std::erase_if(c->queue, [&](stdio_outgoing const& o) { return o.owner == p; });
            co_return transport_fault(transport_error::kind::not_sent, "upstream " + name() + ": the notification could not be written in time");
        }
        co_return transport_fault(transport_error::kind::no_reply, "upstream " + name() + ": the notification was only partly written in time");
    }

    asio::awaitable<void> do_close(std::shared_ptr<state> self) {
        closing = true;
        for (auto& w : backoff_waiters) w->cancel();
        if (auto c = current) lost(c, "was shut down by airlock");
        // Children that died earlier may still be winding down: every one is reaped before returning.
        std::vector<std::shared_ptr<stdio_child>> children(active.begin(), active.end());
        for (auto& c : children) co_await stop_child(self, c);
    }

    // The transport object is gone: nobody awaits anything; close every descriptor so the
    // coroutines end (the destructor already killed and reaped the processes).
    void abandon() {
        closing = true;
        for (auto& [id, p] : pending) {
            if (p->done) continue;
            p->error = transport_fault(transport_error::kind::no_reply, "upstream " + name() + ": the transport was destroyed");
            p->finish();
        }
        pending.clear();
        for (auto& w : backoff_waiters) w->cancel();
        current = nullptr;
        for (auto const& c : active) {
            c->lost = true;
            c->stdin_closed = true;
            c->queue.clear();
            error_code ignored;
            c->in.close(ignored);
            c->out.close(ignored);
            c->err.close(ignored);
            c->pidfd.close(ignored);
            c->writer_wake.cancel();
            c->drain_timer.cancel();
            for (auto& w : c->exit_waiters) w->cancel();
        }
    }
};

stdio_transport::stdio_transport(asio::any_io_executor exec, stdio_options opts)
    : state_(std::make_shared<state>(std::move(exec), std::move(opts))) {
    ignore_sigpipe();
}

stdio_transport::~stdio_transport() {
    auto s = state_;
    s->abandoned = true;
    {
        std::lock_guard lock(s->children_mutex);
        for (auto& c : s->unreaped) c->kill_and_reap();
        s->unreaped.clear();
    }
    auto wind_down = [s] { s->abandon(); };
    asio::post(s->strand, std::move(wind_down));
}

asio::awaitable<transport_result<void>> stdio_transport::async_open() {
    auto s = state_;
    auto task = s->do_open(s);
    co_return co_await co_await_on(s->strand, std::move(task));
}

asio::awaitable<transport_result<message>> stdio_transport::async_request(request req, request_options opts) {
    auto s = state_;
    auto task = s->do_request(s, std::move(req), std::move(opts));
    co_return co_await co_await_on(s->strand, std::move(task));
}

asio::awaitable<transport_result<void>> stdio_transport::async_notify(notification n) {
    auto s = state_;
    auto task = s->do_notify(s, std::move(n));
    co_return co_await co_await_on(s->strand, std::move(task));
}

asio::awaitable<void> stdio_transport::async_close() {
    auto s = state_;
    auto task = s->do_close(s);
    co_await co_await_on(s->strand, std::move(task));
}

void stdio_transport::set_protocol_version(std::string version) {
    std::lock_guard lock(state_->handlers_mutex);
    state_->protocol_version = std::move(version);
}

void stdio_transport::set_notification_handler(std::function<void(notification const&)> handler) {
    std::lock_guard lock(state_->handlers_mutex);
    state_->notification_handler = std::move(handler);
}

void stdio_transport::set_server_request_handler(server_request_handler handler) {
    std::lock_guard lock(state_->handlers_mutex);
    state_->request_handler = std::move(handler);
}

core::destination stdio_transport::destination() const {
    return core::process_destination{state_->opts.argv.empty() ? std::string() : state_->opts.argv.front()};
}

std::uint64_t stdio_transport::losses() const { return state_->children_lost; }

std::optional<int> stdio_transport::pid() const {
    int p = state_->current_pid;
    return p > 0 ? std::optional<int>(p) : std::nullopt;
}

}  // namespace airlock::mcp
