#include "service/mcp/streamable_http_endpoint.hpp"

#include "core/ascii.hpp"
#include "mcp/client/spawn_logged.hpp"
#include "mcp/protocol/era.hpp"
#include "mcp/protocol/log_throttle.hpp"
#include "mcp/protocol/mrtr.hpp"
#include "mcp/server/exchange.hpp"
#include "service/mcp/http_exchange.hpp"
#include "service/mcp/http_sessions.hpp"
#include "service/mcp/sse_streams.hpp"
#include "service/config/durations.hpp"
#include "service/http/door.hpp"
#include "core/sha256.hpp"
#include "mcp/protocol/sse.hpp"
#include "service/ops/request_observer.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <variant>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::as_tuple;
using asio::use_awaitable;
using error_code = boost::system::error_code;
using detail::event_channel;
using detail::http_exchange;
using detail::outgoing;

// ---------------------------------------------------------------- the endpoint

namespace {

http_response rpc_json(unsigned status, std::string body, unsigned version) {
    return json_response(static_cast<http::status>(status), std::move(body), version);
}

http_response rpc_error(unsigned status, std::optional<mcp::request_id> id, std::int64_t code, std::string message,
                        unsigned version) {
    return rpc_json(status, mcp::serialize(mcp::make_error_response(std::move(id), code, std::move(message))), version);
}

http_response accepted(unsigned version) {
    http_response res{http::status::accepted, version};
    res.content_length(0);
    return res;
}

mcp::http_headers headers_of(http_request const& req) {
    mcp::http_headers h;
    for (auto const& f : req) h.add(f.name_string(), f.value());
    return h;
}

std::string short_id(std::string const& id) { return id.substr(0, 8); }

// What a browser client of /mcp may send and read (service/http/door answers its preflights).
constexpr cors_rules mcp_cors{
    "POST, GET, DELETE, OPTIONS", "POST, GET, DELETE",
    "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID",
    "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate"};

mcp::session_table::options session_options(mcp_endpoint_options const& o) {
    return {o.session_idle_timeout, o.max_sessions, o.max_sessions_per_principal, o.random, o.clock};
}

mcp::exchange::options exchange_options(mcp_endpoint_options const& o) {
    return {{o.input_request_ttl, o.max_pending_inputs, o.max_questions}, o.input_gather, o.random, "mcp"};
}

}  // namespace

struct mcp_endpoint::impl : std::enable_shared_from_this<impl> {
    std::shared_ptr<mcp::server_backend> backend;
    mcp_endpoint_options options;
    // The door's rules as configured and derived from the listening address; replaced whole by
    // configure(), read under the mutex.
    std::shared_ptr<door_policy const> door;

    mutable std::mutex mutex;
    http_sessions sessions{session_options(options)};  // legacy sessions, with a lock of their own
    std::set<std::shared_ptr<listen_stream>> subscriptions;  // modern listen streams
    std::shared_ptr<mcp::exchange> engine = std::make_shared<mcp::exchange>(exchange_options(options));
    // What a client can make happen once per request or per notification is logged once per
    // interval with a count: refusals at the door (per client address), dropped notifications.
    mcp::log_throttle door_log;
    std::shared_ptr<mcp::log_throttle> dropped_log = std::make_shared<mcp::log_throttle>();

    impl(std::shared_ptr<mcp::server_backend> b, mcp_endpoint_options o) : backend(std::move(b)), options(std::move(o)) {
        configure(options.listen_host, options.listen_port, options.unix_socket);
    }

    void configure(std::string const& host, std::uint16_t port, bool unix_socket) {
        std::lock_guard lock(mutex);
        options.listen_host = host;
        options.listen_port = port;
        options.unix_socket = unix_socket;
        auto hosts = options.allowed_hosts;
        auto origins = options.allowed_origins;
        if (hosts.empty() && !unix_socket) hosts = default_allowed_hosts(host, port);
        if (origins.empty() && !unix_socket) origins = default_allowed_origins(host, port);
        // Over a unix socket, or on a public address nobody named, the Host header cannot be
        // judged (no hosts: any Host); authentication and the Origin check still apply.
        auto policy = make_door_policy(std::move(hosts), std::move(origins), options.authenticate,
                                       options.allow_anonymous, true);
        apply_oauth(policy, options.oauth);
        door = std::make_shared<door_policy const>(std::move(policy));
    }

    // ------------------------------------------------------------ the door

    std::shared_ptr<door_policy const> door_now() const {
        std::lock_guard lock(mutex);
        return door;
    }

    // A refusal a client can repeat is logged at most once per interval per client address.
    void log_refusal(door_refusal const& r) {
        if (!r.log) return;
        if (auto more = door_log.admit(r.log_key)) spdlog::warn("mcp: {}{}", r.log_message, *more);
    }

    // The door's refusal (service/http/door), answered as JSON-RPC. The token is never logged,
    // stored or passed on.
    http_response refusal_reply(door_refusal const& refused, unsigned version) {
        log_refusal(refused);
        auto res = rpc_error(refused.status, std::nullopt, core::to_jsonrpc_code(refused.code),
                             refusal_words(refused.status) + refused.detail, version);
        if (!refused.www_authenticate.empty()) res.set(http::field::www_authenticate, refused.www_authenticate);
        return res;
    }

    // ------------------------------------------------------------ sessions

    // Ends sessions idle for longer than the timeout; at most once a second.
    void sweep() {
        for (auto& s : sessions.sweep()) finish_session(s, "idle");
    }

    // The caller's live session with that id; a session of another principal is as good as unknown.
    std::shared_ptr<http_session> find_session(std::string_view id, std::string const& principal, bool touch) {
        auto found = sessions.find(id, principal, touch);
        if (found.expired) finish_session(found.expired, "idle");
        return found.live;
    }

    // Releases what an ended session held: its requests are cancelled, its questions to the
    // client fail, its stream ends, and the backend hears of it.
    // `cut_off` (stage cut_off or deleted): the session's requests end by airlock's or the client's
    // decision while they run, and each gets an error saying so; `running`: they are only cancelled.
    void finish_session(std::shared_ptr<http_session> const& s, std::string_view why,
                        http_exchange::stage cut_off = http_exchange::stage::running) {
        auto held = sessions.release(*s);
        for (auto& rq : held.running) {
            auto ex = std::static_pointer_cast<http_exchange>(rq);
            auto expected = http_exchange::stage::running;
            // A request its client cancelled gets no answer, whatever ends its session.
            if (cut_off != http_exchange::stage::running && !ex->cancelled)
                ex->ended.compare_exchange_strong(expected, cut_off);
            engine->cancel(ex);
        }
        engine->fail_all(*s->asks);
        if (held.stream) end_listen_stream(held.stream, std::nullopt);
        spdlog::info("mcp: session {}… of '{}' ended ({})", short_id(s->id), s->principal, why);
        backend->session_closed(s->id);
    }

    // ------------------------------------------------------------ request lifecycle

    // The client can no longer receive this request's messages. Modern: that is its cancellation.
    // Legacy: a disconnect is not a cancellation (the spec says so); the work goes on, its output is dropped.
    void client_gone(std::shared_ptr<http_exchange> const& ex) {
        if (ex->gone.exchange(true)) return;
        ex->events.close();  // a backend notifying a departed client must not wait for room
        if (ex->ctx.client_era == mcp::era::modern) {
            engine->cancel(ex);
        } else {
            engine->fail_asks(ex, "the client's stream closed");
        }
    }

    // The response that ends a request, as its era writes it.
    static outgoing final_message(mcp::era e, std::string const& method, mcp::request_id const& id, mcp::handler_result result) {
        outgoing o;
        o.final = true;
        if (!result) o.status = mcp::http_status_for(e, result.error().code);
        o.json = mcp::serialize(mcp::exchange::reply_of(e, method, id, std::move(result)));
        return o;
    }

    static asio::awaitable<void> run_backend(std::shared_ptr<impl> self, std::shared_ptr<http_exchange> ex, mcp::request r) {
        auto e = ex->ctx.client_era;
        auto done = co_await self->engine->async_run(*self->backend, ex, std::move(r));
        if (!done) co_return;  // parked: the retry gets the result
        auto result = std::move(done->result);
        auto expected = http_exchange::stage::running;
        bool cut_off = !ex->ended.compare_exchange_strong(expected, http_exchange::stage::answered) &&
                       (expected == http_exchange::stage::cut_off || expected == http_exchange::stage::deleted);
        // What the backend finished all the same (its call landed, and the journal says done) is
        // answered as it is: "cut off" is said only of what the cancellation ended, which returns an error.
        if (cut_off && !result)
            result = expected == http_exchange::stage::deleted ? mcp_rules::cut_off_by_delete() : mcp_rules::cut_off_by_stop();
        outgoing o = final_message(e, ex->method, done->id, std::move(result));
        o.suppress = ex->cancelled && !cut_off;
        if (auto s = ex->owner.lock()) self->sessions.end_request(*s, ex);
        // A departed client's channel is closed: the send fails at once, and the result is dropped.
        co_await ex->events.async_send(error_code{}, std::move(o), as_tuple(use_awaitable));
    }

    struct request_setup {
        std::string principal;
        mcp::era e = mcp::era::legacy;
        std::string version;
        json::object capabilities;
        std::shared_ptr<http_session> owner;  // legacy
        std::optional<json::object> prefill;  // modern: inputResponses on a first attempt
        std::optional<mcp::http_headers> param_headers;  // modern tools/call: its Mcp-Param-* headers
        json::object authentication;                     // the OAuth identity, when a token admitted it
    };

    // Serves a request through the backend, answering with JSON when the backend finishes before
    // emitting anything, and with SSE from the first notification or question on.
    asio::awaitable<http_reply> serve_request(unsigned version, mcp::request r, request_setup setup) {
        auto exec = co_await asio::this_coro::executor;
        auto ex = std::make_shared<http_exchange>(exec);
        mcp::exchange::caller who;
        who.principal = setup.principal;
        who.authentication = std::move(setup.authentication);
        who.session_id = setup.owner ? setup.owner->id : std::string();
        who.client_era = setup.e;
        who.version = std::move(setup.version);
        who.capabilities = std::move(setup.capabilities);
        who.prefill = std::move(setup.prefill);
        engine->bind(ex, r, std::move(who));
        ex->ctx.param_headers = std::move(setup.param_headers);
        if (setup.owner) {
            ex->owner = setup.owner;
            ex->asks = setup.owner->asks;
            sessions.add_request(*setup.owner, ex);
        }
        auto self = shared_from_this();
        mcp::spawn_logged(exec, run_backend(self, ex, std::move(r)), "mcp request");
        co_return co_await reply(version, std::move(ex));
    }

    // Answers the HTTP request that is the exchange's current reader: JSON when the first thing
    // it has to say is its final message, SSE otherwise.
    asio::awaitable<http_reply> reply(unsigned version, std::shared_ptr<http_exchange> ex) {
        auto exec = co_await asio::this_coro::executor;
        auto self = shared_from_this();
        auto [ec, first] = co_await async_next(self, ex);
        if (ec) {
            // The server cancelled the wait: the client left before anything was ready.
            client_gone(ex);
            co_return rpc_error(500, std::nullopt, mcp::rpc_code::internal_error, "the client went away", version);
        }
        if (first.final && !first.suppress) co_return rpc_json(first.status, std::move(first.json), version);

        auto body = make_body_channel(exec, 64);
        http_stream st;
        st.head = sse_head(version);
        st.body = body;
        auto quiet = std::make_shared<asio::steady_timer>(exec);
        st.on_end = [self, ex, quiet](bool completed) {
            quiet->cancel();
            if (!completed) self->client_gone(ex);
        };
        mcp::spawn_logged(exec, pump(self, ex, body, quiet, std::move(first)), "mcp reply stream");
        mcp::spawn_logged(exec, async_keep_alive(quiet, body, options.keep_alive_interval), "mcp keep-alive");
        co_return st;
    }

    // Moves a request's messages onto its SSE stream. Keep-alive comments come from a loop of their
    // own: racing the receive against a timer could lose a message that arrives as the timer fires.
    // The stream ends right after the response it exists for: the keep-alive loop stops, and the
    // end of the body waits for room behind what is buffered (a notification flood fills the
    // buffer; an end marker tried and dropped there left the body open for good).
    static asio::awaitable<void> pump(std::shared_ptr<impl> self, std::shared_ptr<http_exchange> ex,
                                      std::shared_ptr<http_body_channel> body,
                                      std::shared_ptr<asio::steady_timer> quiet, outgoing first) {
        auto s = ex->owner.lock();
        bool legacy = ex->ctx.client_era == mcp::era::legacy;
        auto next_id = [&]() -> std::optional<std::string> {
            // Legacy events carry ids unique within the session; modern streams are not resumable.
            if (!legacy || !s) return std::nullopt;
            return std::to_string(s->next_event++);
        };
        auto send = [&](std::string text) -> asio::awaitable<bool> {
            auto [ec] = co_await body->async_send(error_code{}, std::move(text), as_tuple(use_awaitable));
            co_return !ec;
        };

        if (legacy) {
            auto priming = sse_event("", next_id(), static_cast<std::uint64_t>(self->options.sse_retry.count()));
            if (!co_await send(std::move(priming))) co_return;
        }
        outgoing item = std::move(first);
        for (;;) {
            if (item.final && item.suppress) break;
            // A failed send means the stream is over; its on_end has dealt with the request.
            auto event = sse_event(std::move(item.json), next_id());
            if (!co_await send(std::move(event))) co_return;
            if (item.final) break;
            auto [ec, o] = co_await async_next(self, ex);
            if (ec) {
                // Closed because the client left; make sure the stream ends if it has not.
                quiet->cancel();
                co_await body->async_send(asio::error::connection_aborted, std::string(), as_tuple(use_awaitable));
                co_return;
            }
            item = std::move(o);
        }
        quiet->cancel();
        // A send that fails finds the stream already over.
        co_await body->async_send(asio::error::eof, std::string(), as_tuple(use_awaitable));
    }

    // The next message of a request for its reader. An input_required marker ends the round with
    // an InputRequiredResult when questions are still open by then, and is skipped otherwise.
    static asio::awaitable<std::tuple<error_code, outgoing>> async_next(std::shared_ptr<impl> self,
                                                                         std::shared_ptr<http_exchange> ex) {
        for (;;) {
            auto [ec, o] = co_await ex->events.async_receive(as_tuple(use_awaitable));
            if (ec || !o.input_required) co_return std::make_tuple(ec, std::move(o));
            auto round = co_await self->async_end_round(ex);
            if (round) co_return std::make_tuple(error_code{}, std::move(*round));
        }
    }

    asio::awaitable<std::optional<outgoing>> async_end_round(std::shared_ptr<http_exchange> ex) {
        auto round = co_await engine->async_end_round(ex);
        using outcome = mcp::exchange::round::outcome;
        if (round.what == outcome::none) co_return std::nullopt;
        if (round.what == outcome::issued)
            co_return final_message(mcp::era::modern, ex->method, round.reply_id, std::move(round.result));
        if (auto more = door_log.admit("inputs " + ex->ctx.principal))
            spdlog::warn("mcp: {} requests already wait for client input; {} {} refused{}", options.max_pending_inputs,
                         ex->method, ex->key, *more);
        mcp::error_object err{mcp::rpc_code::internal_error, "too many requests are waiting for client input; retry later",
                              std::nullopt};
        co_return final_message(mcp::era::modern, ex->method, round.reply_id, std::move(err));
    }

    // A retry carrying a requestState: the answers go to the waiting questions, and this HTTP
    // request becomes the pending request's reader.
    asio::awaitable<http_reply> resume(unsigned v, mcp::request const& r, std::string const& principal,
                                       std::optional<json::object> responses) {
        auto go = engine->resume(r, principal, responses);
        if (go.refused)
            co_return rpc_error(mcp::http_status_for(mcp::era::modern, mcp::rpc_code::invalid_params), r.id,
                                mcp::rpc_code::invalid_params, "Invalid params: " + std::move(*go.refused), v);
        auto ex = std::static_pointer_cast<http_exchange>(go.rq);
        if (go.step.schedule_round) {
            outgoing o;
            o.input_required = true;
            ex->events.try_send(error_code{}, std::move(o));
        }
        mcp::mrtr_rounds::hand_over(go.step);
        auto& done = go.step.done;
        if (done) {
            auto o = final_message(mcp::era::modern, ex->method, r.id, std::move(*done));
            co_return rpc_json(o.status, std::move(o.json), v);
        }
        co_return co_await reply(v, std::move(ex));
    }

    // ------------------------------------------------------------ notification streams

    listen_options stream_options() const { return {options.stream_buffer, options.keep_alive_interval, dropped_log}; }

    // ------------------------------------------------------------ HTTP methods

    asio::awaitable<http_reply> handle(http_request& req) {
        auto reply = co_await handle_at_door(req);
        // Every reply depends on the request's Origin: refused for a foreign one, readable by the
        // browser for an allowed one, and neither without one. A cache in front must keep them
        // apart, or it hands a reply without Access-Control-Allow-Origin to a browser.
        std::visit(
            [](auto& r) {
                if (head_of(r).find(http::field::vary) == head_of(r).end()) head_of(r).set(http::field::vary, "Origin");
            },
            reply);
        co_return reply;
    }

    asio::awaitable<http_reply> handle_at_door(http_request& req) {
        auto const policy = door_now();
        auto verdict = co_await async_pass_door(*policy, read_door_request(req));
        auto const* refused = std::get_if<door_refusal>(&verdict);
        if (refused && (refused->kind == door_refusal_kind::host_missing ||
                        refused->kind == door_refusal_kind::host_not_allowed ||
                        refused->kind == door_refusal_kind::origin_not_allowed))
            co_return refusal_reply(*refused, req.version());
        // An Origin that got past the check is allowed: a browser client there may read the reply,
        // a refusal of its credentials included.
        std::string const origin(req[http::field::origin]);
        if (std::holds_alternative<door_preflight>(verdict)) co_return preflight_response(req, origin, mcp_cors);
        http_reply reply;
        if (refused) reply = refusal_reply(*refused, req.version());
        else reply = co_await handle_allowed(req, std::get<door_admitted>(std::move(verdict)));
        if (!origin.empty()) std::visit([&](auto& r) { allow_origin(head_of(r), origin, mcp_cors); }, reply);
        co_return reply;
    }

    static http::response_header<>& head_of(http_response& r) { return r.base(); }
    static http::response_header<>& head_of(http_stream& s) { return s.head.base(); }

    asio::awaitable<http_reply> handle_allowed(http_request& req, door_admitted admitted) {
        unsigned v = req.version();
        auto const principal = std::move(admitted.principal);
        auto const auth = journal_identity(admitted);
        note_principal(req, principal);
        sweep();
        switch (req.method()) {
        case http::verb::post: co_return co_await handle_post(req, principal, auth);
        case http::verb::get: co_return co_await handle_get(req, principal);
        case http::verb::delete_: co_return handle_delete(req, principal);
        default: {
            auto res = rpc_error(405, std::nullopt, mcp::rpc_code::invalid_request, "Method not allowed: use POST, GET or DELETE", v);
            res.set(http::field::allow, "POST, GET, DELETE, OPTIONS");
            co_return res;
        }
        }
    }

    // GET and DELETE have no body: their era is the MCP-Protocol-Version header's. A modern one
    // gets 405 (2026-07-28 has neither); a legacy one needs a live session of the caller.
    std::variant<std::shared_ptr<http_session>, http_response> bodiless_session(http_request const& req, std::string const& principal) {
        unsigned v = req.version();
        auto h = headers_of(req);
        if (auto pv = h.get(mcp::header::protocol_version)) {
            auto e = mcp::era_of(*pv);
            if (e == mcp::era::modern) {
                auto res = rpc_error(405, std::nullopt, mcp::rpc_code::invalid_request,
                                     "Method not allowed: 2026-07-28 uses POST only", v);
                res.set(http::field::allow, "POST");
                return res;
            }
            if (!e)
                return rpc_error(400, std::nullopt, mcp::rpc_code::invalid_request,
                                 "Invalid request: unsupported MCP-Protocol-Version '" + std::string(*pv) + "'", v);
        }
        if (h.count(mcp::header::session_id) > 1)
            return rpc_error(400, std::nullopt, mcp::rpc_code::invalid_request, "Invalid request: Mcp-Session-Id appears more than once", v);
        auto sid = h.get(mcp::header::session_id);
        if (!sid)
            return rpc_error(400, std::nullopt, mcp::rpc_code::invalid_request,
                             "Invalid request: Mcp-Session-Id header is required; send initialize first", v);
        auto s = find_session(*sid, principal, true);
        if (!s)
            return rpc_error(404, std::nullopt, mcp::rpc_code::invalid_request,
                             "Invalid request: session not found; send initialize to start a new one", v);
        return s;
    }

    asio::awaitable<http_reply> handle_get(http_request& req, std::string const& principal) {
        unsigned v = req.version();
        auto found = bodiless_session(req, principal);
        if (auto* refused = std::get_if<http_response>(&found)) co_return std::move(*refused);
        auto s = std::get<std::shared_ptr<http_session>>(std::move(found));

        auto ls = std::make_shared<listen_stream>();
        if (!sessions.open_stream(*s, ls))
            co_return rpc_error(409, std::nullopt, mcp::rpc_code::invalid_request,
                                "Conflict: this session already has a notification stream open", v);
        std::weak_ptr<http_session> ws = s;
        auto priming = sse_event("", std::to_string(s->next_event++), static_cast<std::uint64_t>(options.sse_retry.count()));
        std::function<std::optional<std::string>(mcp::notification const&)> format =
            [ws](mcp::notification const& n) -> std::optional<std::string> {
            auto sp = ws.lock();
            if (!sp) return std::nullopt;
            return sse_event(mcp::serialize(n), std::to_string(sp->next_event++));
        };
        auto self = shared_from_this();
        std::function<void()> on_close = [self, ws, ls] {
            if (auto sp = ws.lock()) self->sessions.close_stream(*sp, ls);
        };
        co_return co_await async_open_listen_stream(backend, stream_options(), v, principal, ls, std::move(priming), std::move(format), std::move(on_close), s->id);
    }

    http_response handle_delete(http_request& req, std::string const& principal) {
        auto found = bodiless_session(req, principal);
        if (auto* refused = std::get_if<http_response>(&found)) return std::move(*refused);
        auto s = std::get<std::shared_ptr<http_session>>(std::move(found));
        bool dropped = sessions.remove(s);
        // Otherwise it has just ended another way (idle, shutdown), and was finished there.
        // A request still running on it is answered, so its client does not wait for a reply that
        // can no longer come.
        if (dropped) finish_session(s, "deleted by the client", http_exchange::stage::deleted);
        http_response res{http::status::no_content, req.version()};
        return res;
    }

    asio::awaitable<http_reply> handle_post(http_request& req, std::string const& principal, json::object const& auth) {
        unsigned v = req.version();
        if (auto ct = req.find(http::field::content_type);
            ct != req.end() && mcp::classify_content_type(ct->value()) != mcp::body_kind::json)
            co_return rpc_error(415, std::nullopt, mcp::rpc_code::invalid_request,
                                "Unsupported media type: the body must be application/json", v);
        auto parsed = mcp::parse_message(req.body());
        if (!parsed) {
            auto const& reply = parsed.error().reply;
            co_return rpc_json(400, mcp::serialize(reply), v);
        }
        auto h = headers_of(req);
        auto e = mcp::classify_post(h, *parsed);
        // classify_post files every initialize as legacy: it is the legacy handshake. A 2026-07-28
        // client sending one is calling a method its era removed, and is answered as that era answers.
        if (auto const* r = std::get_if<mcp::request>(&*parsed); r && mcp_rules::is_modern_initialize(*r)) e = mcp::era::modern;
        if (e == mcp::era::modern) co_return co_await modern_post(v, h, std::move(*parsed), principal, auth);
        co_return co_await legacy_post(v, h, std::move(*parsed), principal, auth);
    }

    asio::awaitable<http_reply> legacy_post(unsigned v, mcp::http_headers const& h, mcp::message msg,
                                            std::string const& principal, json::object const& auth) {
        auto find = [&](std::string_view id) -> std::optional<std::string> {
            auto s = find_session(id, principal, false);
            if (!s) return std::nullopt;
            return s->protocol_version;
        };
        auto checked = mcp::validate_legacy_post(h, msg, true, find);
        if (!checked) co_return rpc_json(checked.error().status, mcp::serialize(checked.error().body), v);
        auto version = std::move(*checked);

        if (auto* r = std::get_if<mcp::request>(&msg); r && r->method == mcp::method::initialize)
            co_return initialize(v, *r, principal, version);

        std::shared_ptr<http_session> s;
        if (auto sid = h.get(mcp::header::session_id)) s = find_session(*sid, principal, true);
        if (!s)
            co_return rpc_error(404, mcp::id_of(msg), mcp::rpc_code::invalid_request,
                                "Invalid request: session not found; send initialize to start a new one", v);

        if (auto* r = std::get_if<mcp::request>(&msg)) {
            if (r->method == mcp::method::ping) co_return rpc_json(200, mcp::serialize(mcp::response{r->id, {}}), v);
            request_setup setup{principal, mcp::era::legacy, version, s->client_capabilities, s};
            setup.authentication = auth;
            co_return co_await serve_request(v, std::move(*r), std::move(setup));
        }
        if (auto* n = std::get_if<mcp::notification>(&msg)) {
            if (n->method == mcp::method::cancelled) {
                cancel_by_notification(s, *n);
            } else if (n->method != mcp::method::initialized) {
                auto ctx = mcp::exchange::notification_context(principal, s->id, mcp::era::legacy, version, s->client_capabilities);
                co_await backend->async_notification(std::move(*n), ctx);
            }
            co_return accepted(v);
        }
        engine->route_answer(*s->asks, msg);
        co_return accepted(v);
    }

    void cancel_by_notification(std::shared_ptr<http_session> const& s, mcp::notification const& n) {
        auto p = mcp::parse_cancelled_params(n.params ? json::value(*n.params) : json::value(json::object{}));
        if (!p || !p->id) return;
        auto ex = sessions.request(*s, mcp::to_string(*p->id));
        if (!ex) return;  // already finished: the spec tells us to ignore it
        spdlog::info("mcp: the client cancelled {} {}", ex->method, ex->key);
        engine->cancel(ex);
    }

    http_response initialize(unsigned v, mcp::request const& r, std::string const& principal, std::string const& version) {
        auto params = mcp::parse_initialize_params(r.params ? json::value(*r.params) : json::value(json::object{}));
        if (!params)
            return rpc_error(200, r.id, mcp::rpc_code::invalid_params, "Invalid params: " + params.error().message, v);
        auto s = std::make_shared<http_session>();
        s->principal = principal;
        s->protocol_version = version;
        s->client_capabilities = params->capabilities;
        auto admitted = sessions.admit(s);
        std::optional<http_response> refused;
        if (auto const& why = admitted.refused) {
            if (why->why == mcp::session_table::refusal::kind::principal_share) {
                refused = session_limit_reached(v, r.id, principal, why->holding);
            } else {
                spdlog::warn("mcp: refused initialize from '{}': {} sessions are open", principal, admitted.open);
                refused = rpc_error(503, r.id, mcp::rpc_code::internal_error, "Too many sessions; retry later", v);
            }
            refused->set(http::field::retry_after, std::to_string(why->retry_after));
        }
        for (auto& ended : admitted.expired) finish_session(ended, "idle");
        if (refused) return std::move(*refused);
        mcp::initialize_result result{version, backend->server_capabilities(principal), backend->server_info(),
                                      backend->instructions(principal), std::nullopt};
        spdlog::info("mcp: session {}… opened by '{}' ({}, client {})", short_id(s->id), principal, version,
                     params->client_info.name);
        auto res = rpc_json(200, mcp::serialize(mcp::response{r.id, json::value_from(result).as_object()}), v);
        res.set(mcp::header::session_id, s->id);
        return res;
    }

    // 429 for a principal that holds its share of the sessions: what the limit is and how to get
    // below it. Nobody else is affected.
    http_response session_limit_reached(unsigned v, mcp::request_id const& id, std::string const& principal,
                                        std::size_t holding) {
        spdlog::warn("mcp: refused initialize from '{}': it holds {} sessions, the most one principal may", principal,
                     holding);
        auto idle = format_duration(options.session_idle_timeout);
        return rpc_error(429, id, mcp::rpc_code::internal_error,
                         "Too many sessions: principal '" + principal + "' holds " + std::to_string(holding) +
                             ", the most one principal may. To open another, end one it no longer uses (DELETE "
                             "with its Mcp-Session-Id header) or wait until an idle one (nothing in flight, no GET "
                             "stream open) expires after " + idle,
                         v);
    }

    asio::awaitable<http_reply> modern_post(unsigned v, mcp::http_headers const& h, mcp::message msg,
                                            std::string const& principal, json::object const& auth) {
        auto checked = mcp::validate_modern_post(h, msg, nullptr);
        if (!checked) co_return rpc_json(checked.error().status, mcp::serialize(checked.error().body), v);

        if (auto* n = std::get_if<mcp::notification>(&msg)) {
            // On HTTP a modern client cancels by closing the stream; a cancelled notification names
            // nothing we can find, so it is accepted and ignored.
            if (n->method != mcp::method::cancelled) {
                auto meta = mcp::parse_request_meta(n->params);
                auto ctx = mcp::exchange::notification_context(principal, "", mcp::era::modern, meta ? meta->protocol_version : std::string(mcp::version::modern),
                                            meta ? meta->client_capabilities : json::object{});
                co_await backend->async_notification(std::move(*n), ctx);
            }
            co_return accepted(v);
        }
        auto& r = std::get<mcp::request>(msg);
        auto meta = mcp::parse_request_meta(r.params);  // validated above
        if (!meta) co_return rpc_error(400, r.id, mcp::rpc_code::invalid_params, "Invalid params: " + meta.error().message, v);

        if (mcp_rules::removed_in_modern(r.method))
            co_return rpc_error(404, r.id, mcp::rpc_code::method_not_found,
                                "Method not found: " + r.method + " is not part of protocol version " + meta->protocol_version, v);
        if (r.method == mcp::method::server_discover)
            co_return rpc_json(200, mcp::serialize(mcp::response{r.id, mcp_rules::discover_result(*backend, principal)}), v);
        if (r.method == "subscriptions/listen") co_return co_await listen(v, r, principal);

        auto attempt = mcp::mrtr_rounds::read_attempt(r);
        if (!attempt)
            co_return rpc_error(mcp::http_status_for(mcp::era::modern, mcp::rpc_code::invalid_params), r.id,
                                mcp::rpc_code::invalid_params, "Invalid params: " + attempt.error().message, v);
        if (attempt->retry) co_return co_await resume(v, r, principal, std::move(attempt->responses));
        request_setup setup{principal, mcp::era::modern, meta->protocol_version, meta->client_capabilities, nullptr,
                            std::move(attempt->responses), std::nullopt};
        setup.authentication = auth;
        if (r.method == mcp::method::tools_call) {
            // The backend knows the called tool's x-mcp-header parameters; these are what it checks.
            mcp::http_headers params;
            constexpr std::string_view prefix = mcp::header::param_prefix;
            for (auto const& f : h)
                if (f.name.size() > prefix.size() && core::iequals(std::string_view(f.name).substr(0, prefix.size()), prefix))
                    params.add(f.name, f.value);
            setup.param_headers = std::move(params);
        }
        co_return co_await serve_request(v, std::move(r), std::move(setup));
    }

    asio::awaitable<http_reply> listen(unsigned v, mcp::request const& r, std::string const& principal) {
        auto filter = mcp_rules::parse_subscription_filter(r.params);
        auto id = r.id;
        auto ls = std::make_shared<listen_stream>();
        ls->subscription = id;
        {
            std::lock_guard lock(mutex);
            subscriptions.insert(ls);
        }
        auto ack = sse_event(mcp::serialize(mcp_rules::subscription_acknowledged(id, filter)));
        std::function<std::optional<std::string>(mcp::notification const&)> format =
            [filter, id](mcp::notification const& n) -> std::optional<std::string> {
            if (!mcp_rules::admits(filter, n)) return std::nullopt;
            return sse_event(mcp::serialize(mcp_rules::tag_subscription(n, id)));
        };
        auto self = shared_from_this();
        std::function<void()> on_close = [self, ls] {
            std::lock_guard lock(self->mutex);
            self->subscriptions.erase(ls);
        };
        co_return co_await async_open_listen_stream(backend, stream_options(), v, principal, ls, std::move(ack), std::move(format), std::move(on_close));
    }

    void close_streams() {
        std::vector<std::shared_ptr<listen_stream>> streams;
        {
            std::lock_guard lock(mutex);
            streams.assign(subscriptions.begin(), subscriptions.end());
            subscriptions.clear();
        }
        for (auto& ls : sessions.take_streams()) streams.push_back(std::move(ls));
        for (auto& ls : streams) {
            if (ls->subscription)
                end_listen_stream(ls, sse_event(mcp::serialize(mcp::response{*ls->subscription, mcp_rules::subscription_completed(*ls->subscription)})));
            else
                end_listen_stream(ls, std::nullopt);
        }
    }

    void shutdown() {
        close_streams();
        auto all = sessions.take_all();
        engine->end_parked();
        for (auto& s : all) finish_session(s, "server shutting down", http_exchange::stage::cut_off);
    }
};

mcp_endpoint::mcp_endpoint(std::shared_ptr<mcp::server_backend> backend, mcp_endpoint_options options)
    : impl_(std::make_shared<impl>(std::move(backend), std::move(options))) {}

mcp_endpoint::~mcp_endpoint() = default;

void mcp_endpoint::listening_on(std::string host, std::uint16_t port, bool unix_socket) {
    impl_->configure(host, port, unix_socket);
}

asio::awaitable<http_reply> mcp_endpoint::async_handle(http_request& req) { return impl_->handle(req); }

void mcp_endpoint::close_streams() { impl_->close_streams(); }

void mcp_endpoint::shutdown() { impl_->shutdown(); }

std::size_t mcp_endpoint::session_count() const {
    return impl_->sessions.size();
}

namespace {

asio::awaitable<http_reply> route_mcp(std::shared_ptr<mcp_endpoint> endpoint, http_response_handler const& fallback,
                                      std::string const& path, http_request& req) {
    auto target = req.target();
    if (target.substr(0, target.find('?')) == path) {
        note_route(req, path);
        co_return co_await endpoint->async_handle(req);
    }
    co_return http_reply(co_await fallback(req));
}

}  // namespace

std::function<std::optional<std::string>(std::string_view, std::string_view)> mcp_refusal_body(std::string path) {
    return [path = std::move(path)](std::string_view target, std::string_view message) -> std::optional<std::string> {
        if (target.substr(0, target.find('?')) != path) return std::nullopt;
        // MCP types an error's id as optional for this case; an id of null fails the TypeScript SDK's schema.
        return mcp::serialize(
            mcp::make_error_response(std::nullopt, mcp::rpc_code::invalid_request, "Invalid request: " + std::string(message)));
    };
}

http_handler make_mcp_handler(std::shared_ptr<mcp_endpoint> endpoint, http_response_handler fallback, std::string path) {
    return [endpoint = std::move(endpoint), fallback = std::move(fallback), path = std::move(path)](http_request& req) {
        return route_mcp(endpoint, fallback, path, req);
    };
}

}  // namespace airlock::service
