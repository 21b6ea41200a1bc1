#include "service/mcp/stdio_endpoint.hpp"

#include "mcp/protocol/era.hpp"
#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/line_framer.hpp"
#include "mcp/protocol/log_throttle.hpp"
#include "mcp/protocol/messages.hpp"
#include "mcp/client/on_strand.hpp"
#include "mcp/client/spawn_logged.hpp"
#include "mcp/server/exchange.hpp"
#include "mcp/server/rules.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/value_from.hpp>

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::as_tuple;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;
using error_code = boost::system::error_code;

namespace {

using line_channel = asio::experimental::concurrent_channel<void(error_code, std::string)>;

struct stdio_state;

// One client request being served: the exchange's request, answered on the process's output.
struct stdio_request : mcp::served_request {
    stdio_request(asio::any_io_executor ex, std::weak_ptr<stdio_state> s) : served_request(ex), state(std::move(s)) {}

    asio::awaitable<bool> async_send(mcp::message m) override;
    asio::awaitable<void> async_round_due() override;
    std::optional<std::string> cannot_ask() const override;
    std::string unanswered() const override {
        return "the client did not answer: the request was cancelled or the client left";
    }

    std::weak_ptr<stdio_state> state;
    bool cut_off = false;  // cancelled because airlock is stopping: answered with an error saying so
};

mcp::exchange::options exchange_options(stdio_endpoint_options const& o) {
    return {{o.input_request_ttl, o.max_pending_inputs, o.max_questions}, o.input_gather, o.random, "stdio"};
}

// Everything below is touched only on `exec` (a strand), except `outbox`, which backend
// listeners may feed from any thread.
struct stdio_state : std::enable_shared_from_this<stdio_state> {
    stdio_state(std::shared_ptr<mcp::server_backend> b, stdio_endpoint_options o, asio::any_io_executor ex)
        : backend(std::move(b)),
          options(std::move(o)),
          exec(ex),
          outbox(ex, 256),
          engine(std::make_shared<mcp::exchange>(exchange_options(options))),
          idle(ex) {}

    std::shared_ptr<mcp::server_backend> backend;
    stdio_endpoint_options options;
    asio::any_io_executor exec;
    line_channel outbox;  // serialized messages for the one writer
    std::shared_ptr<mcp::exchange> engine;  // asks, answers, cancellation and MRTR rounds
    std::shared_ptr<mcp::ask_table> asks = std::make_shared<mcp::ask_table>();  // the legacy session's questions

    // The legacy session, once initialize has been answered.
    bool initialized = false;
    std::string session_id;
    std::string version;
    json::object client_capabilities;
    std::optional<std::uint64_t> legacy_listener;

    std::map<std::string, std::shared_ptr<stdio_request>> in_flight;  // by request id text
    std::map<std::string, std::uint64_t> subscriptions;  // listen request id text → listener
    std::size_t running = 0;
    asio::steady_timer idle;  // cancelled when the last running request finishes
    // options.stop: the first request ends reading (its cancellation), the next the wait in close().
    asio::cancellation_signal stop_reading;
    int stops = 0;
    // The client can make these happen once per message: logged once per interval with a count.
    mcp::log_throttle repeated_log;

    void post_line(mcp::message const& m) {
        if (!outbox.try_send(error_code{}, mcp::serialize(m)) && outbox.is_open())
            if (auto more = repeated_log.admit("dropped"))
                spdlog::warn("stdio: the client is not reading; a message was dropped{}", *more);
    }

    asio::awaitable<void> send_line(mcp::message const& m) {
        auto text = mcp::serialize(m);
        co_await outbox.async_send(error_code{}, std::move(text), as_tuple(use_awaitable));
    }

    // ------------------------------------------------------------ writing

    static asio::awaitable<void> writer(std::shared_ptr<stdio_state> self, asio::posix::stream_descriptor& out) {
        for (;;) {
            auto [ec, text] = co_await self->outbox.async_receive(as_tuple(use_awaitable));
            if (ec) co_return;  // eof: everything queued has been written
            text += '\n';
            auto [wec, n] = co_await asio::async_write(out, asio::buffer(text), as_tuple(use_awaitable));
            if (wec) {
                spdlog::error("stdio: cannot write to the client: {}", wec.message());
                self->outbox.close();  // senders stop waiting for room that will never come
                co_return;
            }
        }
    }

    // ------------------------------------------------------------ requests

    void schedule_round(std::shared_ptr<stdio_request> const& rq) {
        mcp::spawn_logged(exec, end_round(shared_from_this(), rq), "stdio input round");
    }

    // Answers the request with an InputRequiredResult carrying what it has asked, unless it
    // finished or ended meanwhile; it is parked until the retry.
    static asio::awaitable<void> end_round(std::shared_ptr<stdio_state> self, std::shared_ptr<stdio_request> rq) {
        auto round = co_await self->engine->async_end_round(rq);
        using outcome = mcp::exchange::round::outcome;
        if (round.what == outcome::none) co_return;
        if (round.what == outcome::refused) {
            if (auto more = self->repeated_log.admit("inputs"))
                spdlog::warn("stdio: {} requests already wait for client input; {} {} refused{}",
                             self->options.max_pending_inputs, rq->method, rq->key, *more);
            mcp::message refused = mcp::make_error_response(round.reply_id, mcp::rpc_code::internal_error,
                                                            "too many requests are waiting for client input; retry later");
            co_await self->send_line(refused);
            co_return;
        }
        // The attempt is answered: its id is free again, and only the retry's id names the request.
        if (auto it = self->in_flight.find(rq->key); it != self->in_flight.end() && it->second == rq) self->in_flight.erase(it);
        auto reply = mcp::exchange::reply_of(mcp::era::modern, rq->method, round.reply_id, std::move(round.result));
        co_await self->send_line(reply);
    }

    // A retry carrying a requestState: the answers go to the waiting questions, and the parked
    // request goes on under the retry's id.
    void resume(mcp::request const& r, std::optional<json::object> const& responses) {
        auto go = engine->resume(r, options.principal, responses);
        if (go.refused)
            return post_line(mcp::make_error_response(r.id, mcp::rpc_code::invalid_params, "Invalid params: " + *go.refused));
        auto rq = std::static_pointer_cast<stdio_request>(go.rq);
        if (!go.step.done) {
            rq->key = mcp::to_string(r.id);
            in_flight[rq->key] = rq;
        }
        if (go.step.schedule_round) schedule_round(rq);
        mcp::mrtr_rounds::hand_over(go.step);
        if (!go.step.done) return;
        // It finished while parked: this retry gets its result.
        post_line(mcp::exchange::reply_of(mcp::era::modern, rq->method, r.id, std::move(*go.step.done)));
    }

    static asio::awaitable<void> run_request(std::shared_ptr<stdio_state> self, std::shared_ptr<stdio_request> rq,
                                             mcp::request r) {
        auto done = co_await self->engine->async_run(*self->backend, rq, std::move(r));
        if (auto it = self->in_flight.find(rq->key); it != self->in_flight.end() && it->second == rq) self->in_flight.erase(it);
        // A cancelled request gets no response (the cancellation rules of both eras), unless
        // airlock cut it off: then its client, which may still be reading, learns why. A request
        // the backend finished all the same (its call landed, and the journal says done) gets its
        // answer: "cut off" is said only of what the cancellation did end, which returns an error.
        // A parked request's result waits for its retry.
        if (done) {
            auto result = std::move(done->result);
            if (rq->cut_off && !result) result = mcp::rules::cut_off_by_stop();
            if (rq->cut_off || !rq->cancelled) {
                auto reply = mcp::exchange::reply_of(rq->ctx.client_era, rq->method, done->id, std::move(result));
                co_await self->send_line(reply);
            }
        }
        if (--self->running == 0) self->idle.cancel();
    }

    void start_request(mcp::request r, mcp::era e, std::string version, json::object caps,
                       std::optional<json::object> prefill = std::nullopt) {
        auto rq = std::make_shared<stdio_request>(exec, weak_from_this());
        mcp::exchange::caller who;
        who.principal = options.principal;
        who.session_id = e == mcp::era::legacy ? session_id : std::string();
        who.client_era = e;
        who.version = std::move(version);
        who.capabilities = std::move(caps);
        who.prefill = std::move(prefill);
        engine->bind(rq, r, std::move(who));
        rq->asks = asks;
        in_flight[rq->key] = rq;
        ++running;
        mcp::spawn_logged(exec, run_request(shared_from_this(), rq, std::move(r)), "stdio request");
    }

    void initialize(mcp::request const& r) {
        if (initialized) {
            post_line(mcp::make_error_response(r.id, mcp::rpc_code::invalid_request, "Invalid request: already initialized"));
            return;
        }
        auto params = mcp::parse_initialize_params(r.params ? json::value(*r.params) : json::value(json::object{}));
        if (!params) {
            post_line(mcp::make_error_response(r.id, mcp::rpc_code::invalid_params, "Invalid params: " + params.error().message));
            return;
        }
        initialized = true;
        version = std::string(mcp::negotiate_initialize_version(params->protocol_version));
        client_capabilities = params->capabilities;
        // One session for the life of the process, so the backend can keep (and seal) what it holds for it.
        session_id = "stdio-" + mcp::rules::new_session_id(options.random);
        mcp::initialize_result result{version, backend->server_capabilities(options.principal), backend->server_info(),
                                      backend->instructions(options.principal), std::nullopt};
        post_line(mcp::response{r.id, json::value_from(result).as_object()});
        // The stdio channel is the legacy session's server-notification stream.
        std::weak_ptr<stdio_state> ws = shared_from_this();
        legacy_listener = backend->add_session_listener(options.principal, session_id, [ws](mcp::notification const& n) {
            if (auto s = ws.lock()) s->post_line(n);
        });
        spdlog::info("stdio: session opened by '{}' ({}, client {})", options.principal, version, params->client_info.name);
    }

    void listen(mcp::request const& r) {
        auto filter = mcp::rules::parse_subscription_filter(r.params);
        auto key = mcp::to_string(r.id);
        if (subscriptions.contains(key)) {
            post_line(mcp::make_error_response(r.id, mcp::rpc_code::invalid_request, "Invalid request: this id already names a subscription"));
            return;
        }
        post_line(mcp::rules::subscription_acknowledged(r.id, filter));
        std::weak_ptr<stdio_state> ws = shared_from_this();
        subscriptions[key] = backend->add_listener(options.principal, [ws, filter, id = r.id](mcp::notification const& n) {
            if (!mcp::rules::admits(filter, n)) return;
            if (auto s = ws.lock()) s->post_line(mcp::rules::tag_subscription(n, id));
        });
    }

    void on_request(mcp::request r) {
        if (r.method == mcp::method::initialize && !mcp::rules::is_modern_initialize(r)) return initialize(r);
        bool modern = false;
        if (r.params)
            if (auto const* m = r.params->if_contains("_meta"); m && m->is_object() && m->get_object().contains(mcp::meta_key::protocol_version))
                modern = true;
        if (modern) {
            auto meta = mcp::parse_request_meta(r.params);
            if (!meta)
                return post_line(mcp::make_error_response(r.id, mcp::rpc_code::invalid_params, "Invalid params: " + meta.error().message));
            if (mcp::era_of(meta->protocol_version) != mcp::era::modern)
                return post_line(mcp::unsupported_version_error(r.id, meta->protocol_version));
            if (mcp::rules::removed_in_modern(r.method))
                return post_line(mcp::make_error_response(r.id, mcp::rpc_code::method_not_found,
                                                          "Method not found: " + r.method + " is not part of protocol version " +
                                                              meta->protocol_version));
            if (r.method == mcp::method::server_discover)
                return post_line(mcp::response{r.id, mcp::rules::discover_result(*backend, options.principal)});
            if (r.method == "subscriptions/listen") return listen(r);
            auto attempt = mcp::mrtr_rounds::read_attempt(r);
            if (!attempt)
                return post_line(mcp::make_error_response(r.id, mcp::rpc_code::invalid_params, "Invalid params: " + attempt.error().message));
            if (attempt->retry) return resume(r, attempt->responses);
            auto v = meta->protocol_version;
            auto caps = meta->client_capabilities;
            return start_request(std::move(r), mcp::era::modern, std::move(v), std::move(caps), std::move(attempt->responses));
        }
        if (r.method == mcp::method::ping) return post_line(mcp::response{r.id, {}});
        if (!initialized)
            return post_line(mcp::make_error_response(
                r.id, mcp::rpc_code::invalid_params,
                "Invalid params: send initialize first (2025-11-25 and earlier), or carry _meta[\"" +
                    std::string(mcp::meta_key::protocol_version) + "\"] (2026-07-28)"));
        start_request(std::move(r), mcp::era::legacy, version, client_capabilities);
    }

    static asio::awaitable<void> deliver_notification(std::shared_ptr<stdio_state> self, mcp::notification n) {
        bool modern = false;
        if (n.params)
            if (auto const* m = n.params->if_contains("_meta"); m && m->is_object() && m->get_object().contains(mcp::meta_key::protocol_version))
                modern = true;
        auto ctx = mcp::exchange::notification_context(self->options.principal, modern ? std::string() : self->session_id,
                                                       modern ? mcp::era::modern : mcp::era::legacy, self->version,
                                                       self->client_capabilities);
        try {
            co_await self->backend->async_notification(std::move(n), ctx);
        } catch (std::exception const& x) {
            spdlog::error("stdio: a notification failed with an internal error: {}", x.what());
        }
    }

    void on_notification(mcp::notification n) {
        if (n.method == mcp::method::initialized) return;
        if (n.method == mcp::method::cancelled) {
            auto p = mcp::parse_cancelled_params(n.params ? json::value(*n.params) : json::value(json::object{}));
            if (!p || !p->id) return;
            auto key = mcp::to_string(*p->id);
            if (auto it = in_flight.find(key); it != in_flight.end()) {
                spdlog::info("stdio: the client cancelled {} {}", it->second->method, key);
                engine->cancel(it->second);
            } else if (auto sub = subscriptions.find(key); sub != subscriptions.end()) {
                backend->remove_listener(sub->second);
                subscriptions.erase(sub);
            }
            return;
        }
        mcp::spawn_logged(exec, deliver_notification(shared_from_this(), std::move(n)), "stdio notification");
    }

    void on_answer(mcp::message const& m) { engine->route_answer(*asks, m); }

    void on_line(std::string_view line) {
        auto parsed = mcp::parse_message(line);
        if (!parsed) return post_line(parsed.error().reply);
        auto& m = *parsed;
        if (auto* r = std::get_if<mcp::request>(&m)) return on_request(std::move(*r));
        if (auto* n = std::get_if<mcp::notification>(&m)) return on_notification(std::move(*n));
        on_answer(m);
    }

    // ------------------------------------------------------------ the session

    static asio::awaitable<void> reader(std::shared_ptr<stdio_state> self, asio::posix::stream_descriptor& in) {
        std::string buf(64 * 1024, '\0');
        mcp::line_framer framer(self->options.max_message_bytes);
        auto deliver = [&](mcp::line_framer::ended e) {
            if (e == mcp::line_framer::ended::oversized) return self->on_oversized(framer.skipped());
            auto line = framer.line();
            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
            if (line.find_first_not_of(" \t") != std::string_view::npos) self->on_line(line);
        };
        for (;;) {
            if (self->stops > 0) break;
            auto until_stopped = asio::bind_cancellation_slot(self->stop_reading.slot(), as_tuple(use_awaitable));
            auto [ec, n] = co_await in.async_read_some(asio::buffer(buf), until_stopped);
            if (ec == asio::error::operation_aborted && self->stops > 0) break;
            std::string_view data(buf.data(), n);
            while (!data.empty()) {
                if (auto e = framer.take(data); e != mcp::line_framer::ended::none) deliver(e);
            }
            if (ec) {
                // The last message may lack its newline; anything else ends here.
                if (ec != asio::error::eof) spdlog::error("stdio: cannot read from the client: {}", ec.message());
                else if (auto e = framer.finish(); e != mcp::line_framer::ended::none) deliver(e);
                break;
            }
        }
        co_await self->close();
    }

    // A line too long to read is dropped, not the session: its newline still frames the next one.
    // Its id, when its first or last bytes show it, lets the client's request fail at once.
    void on_oversized(mcp::oversized_line const& skipped) {
        auto const limit = std::to_string(options.max_message_bytes);
        auto id = skipped.id();
        if (!skipped.head.has_method && id && std::holds_alternative<std::int64_t>(*id) &&
            engine->asking(*asks, std::get<std::int64_t>(*id))) {
            if (auto more = repeated_log.admit("oversized answer"))
                spdlog::warn("stdio: the client's answer {} is longer than {} bytes (server.body_limit); the question fails{}",
                             mcp::to_string(*id), limit, *more);
            on_answer(mcp::make_error_response(*id, mcp::rpc_code::invalid_request,
                                               "the client's answer was longer than " + limit + " bytes"));
            return;
        }
        if (!skipped.head.has_method) id.reset();
        if (auto more = repeated_log.admit("oversized"))
            spdlog::warn("stdio: skipped a message {}longer than {} bytes (server.body_limit){}",
                         id ? "(id " + mcp::to_string(*id) + ") " : std::string(), limit, *more);
        post_line(mcp::make_error_response(std::move(id), mcp::rpc_code::invalid_request,
                                           "Invalid request: the message is longer than " + limit +
                                               " bytes (server.body_limit) and was not read"));
    }

    // options.stop, on the strand: the first ends reading, the next ends the wait in close() that
    // is under way (the drain grace, then the wait for requests cut off).
    void on_stop() {
        if (++stops == 1) {
            stop_reading.emit(asio::cancellation_type::terminal);
            return;
        }
        if (running > 0 && stops == 2) spdlog::warn("stdio: stopping now: {} request(s) still running are cut off", running);
        if (running > 0 && stops > 2) spdlog::warn("stdio: not waiting for {} request(s) still running", running);
        idle.cancel();
    }

    // Until no request runs, `deadline` passes, or options.stop has been requested `stops_until` times.
    asio::awaitable<void> async_wait_for_requests(std::chrono::steady_clock::time_point deadline, int stops_until) {
        while (running > 0 && stops < stops_until && std::chrono::steady_clock::now() < deadline) {
            idle.expires_at(deadline);
            co_await idle.async_wait(as_tuple(use_awaitable));
        }
    }

    // How long requests cut off get to return from their cancellation before the session ends
    // without them (a backend that ignores its cancellation slot does not keep the process alive).
    static constexpr std::chrono::seconds cut_off_wait{2};

    // End of input (or a stop). A client that closed only its write end may still be reading
    // (`printf ... | airlock stdio` does just that), so requests in flight get the drain grace to
    // finish and are answered as usual; those still running then are cut off, and each is answered
    // with an error saying so, rather than left for the client to wait on forever.
    asio::awaitable<void> close() {
        engine->stop_asking();
        // Nothing more can come from the client: questions to it cannot be answered, and parked
        // requests cannot be retried. Their expiry timers would otherwise keep the process up.
        engine->end_parked();
        engine->fail_all(*asks);
        if (legacy_listener) backend->remove_listener(*legacy_listener);
        legacy_listener.reset();
        for (auto& [key, l] : subscriptions) backend->remove_listener(l);
        subscriptions.clear();
        // The stop that ended reading, or the end of input, counts as the first: the next stop
        // cuts the grace short.
        stops = std::max(stops, 1);
        co_await async_wait_for_requests(std::chrono::steady_clock::now() + options.drain_grace, 2);
        if (running > 0) {
            spdlog::info("stdio: cutting off {} request(s) still running", running);
            for (auto& [key, rq] : in_flight) {
                rq->cut_off = !rq->cancelled;
                engine->cancel(rq);
            }
            co_await async_wait_for_requests(std::chrono::steady_clock::now() + cut_off_wait, 3);
        }
        if (running > 0) spdlog::warn("stdio: {} request(s) still running at exit", running);
        if (initialized) {
            spdlog::info("stdio: session of '{}' ended", options.principal);
            backend->session_closed(session_id);
        }
        // A full outbox: wait for room rather than lose the end marker (the writer drains it).
        if (!outbox.try_send(asio::error::eof, std::string()) && outbox.is_open()) {
            std::string none;
            co_await outbox.async_send(asio::error::eof, std::move(none), as_tuple(use_awaitable));
        }
    }
};

asio::awaitable<bool> stdio_request::async_send(mcp::message m) {
    auto s = state.lock();
    if (!s) co_return false;
    co_await s->send_line(m);
    co_return true;
}

asio::awaitable<void> stdio_request::async_round_due() {
    if (auto s = state.lock()) s->schedule_round(std::static_pointer_cast<stdio_request>(shared_from_this()));
    co_return;
}

std::optional<std::string> stdio_request::cannot_ask() const {
    auto s = state.lock();
    if (!s || cancelled || s->engine->closing()) return "the request has ended";
    return std::nullopt;
}

asio::awaitable<void> serve_on_strand(std::shared_ptr<stdio_state> state, int in_fd, int out_fd) {
    asio::posix::stream_descriptor in(state->exec), out(state->exec);
    error_code ec;
    int a = ::dup(in_fd), b = ::dup(out_fd);
    if (a >= 0) in.assign(a, ec);
    if (b >= 0 && !ec) out.assign(b, ec);
    if (a < 0 || b < 0 || ec) {
        if (a >= 0 && !in.is_open()) ::close(a);
        if (b >= 0 && !out.is_open()) ::close(b);
        spdlog::error("stdio: cannot use the standard streams: {}", ec ? ec.message() : std::string(std::strerror(errno)));
        co_return;
    }
    if (state->options.stop) {
        std::weak_ptr<stdio_state> w = state;
        state->options.stop->attach([w, exec = state->exec] {
            asio::post(exec, [w] {
                if (auto s = w.lock()) s->on_stop();
            });
        });
    }
    co_await (stdio_state::reader(state, in) && stdio_state::writer(state, out));
    if (state->options.stop) state->options.stop->attach(nullptr);
}

}  // namespace

void stdio_stop::request() {
    std::function<void()> hook;
    {
        std::lock_guard lock(mutex_);
        ++requests_;
        hook = on_request_;
    }
    if (hook) hook();
}

void stdio_stop::attach(std::function<void()> on_request) {
    int made = 0;
    {
        std::lock_guard lock(mutex_);
        on_request_ = on_request;
        made = requests_;
    }
    if (on_request)
        for (int i = 0; i < made; ++i) on_request();
}

asio::awaitable<void> async_serve_stdio(std::shared_ptr<mcp::server_backend> backend, stdio_endpoint_options options,
                                        int in_fd, int out_fd) {
    auto strand = asio::make_strand(co_await asio::this_coro::executor);
    auto state = std::make_shared<stdio_state>(std::move(backend), std::move(options), strand);
    auto task = serve_on_strand(state, in_fd, out_fd);
    co_await mcp::co_await_on(strand, std::move(task));
}

}  // namespace airlock::service
