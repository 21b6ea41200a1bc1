#include "service/mcp/streamable_http_endpoint.hpp"

#include "mcp/protocol/era.hpp"
#include "mcp/protocol/log_throttle.hpp"
#include "mcp/protocol/mrtr.hpp"
#include "mcp/server/mrtr_rounds.hpp"
#include "service/config/durations.hpp"
#include "core/sha256.hpp"
#include "mcp/protocol/sse.hpp"
#include "service/ops/request_observer.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
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
#include <stdexcept>
#include <variant>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::as_tuple;
using asio::use_awaitable;
using clock_type = std::chrono::steady_clock;
using error_code = boost::system::error_code;

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = lower(c);
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace

bool is_loopback_host(std::string_view host) noexcept {
    if (iequals(host, "localhost")) return true;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    error_code ec;
    auto a = asio::ip::make_address(std::string(host), ec);
    return !ec && a.is_loopback();
}

std::vector<std::string> default_allowed_hosts(std::string_view listen_host, std::uint16_t port) {
    if (!is_loopback_host(listen_host)) return {};
    auto p = ":" + std::to_string(port);
    std::vector<std::string> out{"127.0.0.1" + p, "localhost" + p, "[::1]" + p};
    // Another loopback address (127.0.0.2) is reachable by that name too.
    std::string h = lowered(listen_host);
    if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";
    if (std::find(out.begin(), out.end(), h + p) == out.end()) out.push_back(h + p);
    return out;
}

std::vector<std::string> default_allowed_origins(std::string_view listen_host, std::uint16_t port) {
    std::vector<std::string> out;
    for (auto const& h : default_allowed_hosts(listen_host, port)) {
        out.push_back("http://" + h);
        out.push_back("https://" + h);
    }
    return out;
}

// ---------------------------------------------------------------- the endpoint

namespace {

// One item on the way to a request's response stream.
struct outgoing {
    std::string json;       // a serialized JSON-RPC message
    bool final = false;     // the response to the request: nothing follows
    bool suppress = false;  // final, but the request was cancelled: the client gets no response
    unsigned status = 200;  // the HTTP status when the final message is the whole reply
    bool input_required = false;  // modern: questions wait for the client; the reader ends the round
};

using event_channel = asio::experimental::concurrent_channel<void(error_code, outgoing)>;
using answer_channel = mcp::mrtr_rounds::answer_channel;
using mcp::mrtr_rounds::input_state;

struct session;

// Modern (2026-07-28) requests reach their client only through InputRequiredResults (MRTR): the
// request keeps running while the client answers, and a retry carrying the answers and the
// requestState continues it (mcp/server/mrtr_rounds.hpp). Its input_state is guarded by impl::mutex.

// One client request being served.
struct exchange {
    explicit exchange(asio::any_io_executor ex) : exec(ex), events(ex, 64) {}
    asio::any_io_executor exec;  // the strand the backend's handler runs on
    event_channel events;        // backend → the reply (JSON or SSE)
    asio::cancellation_signal cancel;
    bool cancel_emitted = false;  // on exec
    mcp::request_context ctx;
    std::string method;
    std::weak_ptr<session> owner;  // legacy only
    std::string key;               // the request id's text, within its session
    std::atomic<bool> gone{false};       // the client can no longer receive what this request emits
    std::atomic<bool> cancelled{false};  // the client cancelled it (notifications/cancelled or closed modern stream)
    // running → answered (the backend returned) or → cut_off (airlock ended it while running: the
    // client is told so, unless the backend finished it all the same); whichever comes first holds,
    // so a finished result is never replaced.
    enum class stage { running, answered, cut_off, deleted };
    std::atomic<stage> ended{stage::running};
    // Modern: a capability the request turned out to need that the client did not declare; the
    // request then ends with -32021 whatever the backend makes of the refusal. Guarded by impl::mutex.
    std::optional<std::string> missing_capability;
    // Modern requests that may end in an InputRequiredResult: the request id and params (the
    // requestState is bound to them), and the MRTR state once the backend asks something.
    mcp::request_id id;
    std::optional<json::object> mrtr_params;
    std::optional<json::object> mrtr_prefill;
    std::unique_ptr<input_state> input;  // guarded by impl::mutex
    std::atomic<bool> parked{false};     // mirrors input->parked for the notification path
};

struct pending_ask {
    std::shared_ptr<answer_channel> answer;
    std::weak_ptr<exchange> asker;
};

// An open server-notification stream: a legacy GET stream or a modern subscriptions/listen.
struct listen_stream {
    std::shared_ptr<http_body_channel> body;
    std::uint64_t listener = 0;
    bool listening = false;
    std::optional<mcp::request_id> subscription;  // modern: the listen request's id
    std::shared_ptr<asio::steady_timer> keep_alive;
    std::atomic<bool> ended{false};
};

struct session {
    std::string id;
    std::string principal;
    std::string protocol_version;
    json::object client_capabilities;
    clock_type::time_point last_seen;
    std::map<std::string, std::weak_ptr<exchange>> in_flight;
    std::map<std::int64_t, pending_ask> asks;
    std::int64_t next_ask = 1;
    std::atomic<std::uint64_t> next_event{1};
    std::shared_ptr<listen_stream> get_stream;
};


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

http::response<http::empty_body> sse_head(unsigned version) {
    http::response<http::empty_body> head{http::status::ok, version};
    head.set(http::field::content_type, "text/event-stream");
    head.set(http::field::cache_control, "no-cache, no-store");
    // nginx and friends would otherwise hold events back until a buffer fills.
    head.set("X-Accel-Buffering", "no");
    return head;
}

std::string sse_event(std::string data, std::optional<std::string> id = std::nullopt,
                      std::optional<std::uint64_t> retry = std::nullopt) {
    mcp::sse_frame f;
    f.data = std::move(data);
    f.id = std::move(id);
    f.retry = retry;
    // The data is serialized JSON (no raw line breaks) and ids are decimal: formatting cannot fail.
    return mcp::format_sse_event(f).value();
}

mcp::http_headers headers_of(http_request const& req) {
    mcp::http_headers h;
    for (auto const& f : req) h.add(f.name_string(), f.value());
    return h;
}

mcp::request_context detached_context(std::string principal, std::string session_id, mcp::era e, std::string version,
                                      json::object caps) {
    mcp::request_context ctx;
    ctx.principal = std::move(principal);
    ctx.session_id = std::move(session_id);
    ctx.client_era = e;
    ctx.protocol_version = std::move(version);
    ctx.client_capabilities = std::move(caps);
    ctx.notify = [](mcp::notification) -> asio::awaitable<void> { co_return; };
    ctx.ask_client = [](std::string, json::object) -> asio::awaitable<mcp::handler_result> {
        co_return mcp::error_object{mcp::rpc_code::internal_error, "a notification cannot ask the client anything", std::nullopt};
    };
    return ctx;
}

std::string short_id(std::string const& id) { return id.substr(0, 8); }

}  // namespace

struct mcp_endpoint::impl : std::enable_shared_from_this<impl> {
    std::shared_ptr<mcp::server_backend> backend;
    mcp_endpoint_options options;
    std::vector<std::string> hosts;    // lowercased
    std::vector<std::string> origins;  // lowercased
    bool any_host = false;

    mutable std::mutex mutex;
    std::map<std::string, std::shared_ptr<session>> sessions;
    std::map<std::string, std::set<std::string>> held;  // principal → the ids of its sessions
    std::set<std::shared_ptr<listen_stream>> subscriptions;  // modern listen streams
    clock_type::time_point last_sweep{};
    std::map<std::string, std::shared_ptr<exchange>> pending_inputs;  // parked MRTR requests by pending id
    std::optional<mcp::mrtr::state_sealer> sealer;
    // What a client can make happen once per request or per notification is logged once per
    // interval with a count: refusals at the door (per client address), dropped notifications.
    mcp::log_throttle door_log;
    std::shared_ptr<mcp::log_throttle> dropped_log = std::make_shared<mcp::log_throttle>();

    impl(std::shared_ptr<mcp::server_backend> b, mcp_endpoint_options o) : backend(std::move(b)), options(std::move(o)) {
        configure(options.listen_host, options.listen_port, options.unix_socket);
        sealer.emplace(mcp::mrtr_rounds::fresh_sealer(options.random));
    }

    mcp::mrtr_rounds::limits input_limits() const {
        return {options.input_request_ttl, options.max_pending_inputs, options.max_questions};
    }

    void configure(std::string const& host, std::uint16_t port, bool unix_socket) {
        std::lock_guard lock(mutex);
        options.listen_host = host;
        options.listen_port = port;
        options.unix_socket = unix_socket;
        hosts.clear();
        origins.clear();
        for (auto const& h : options.allowed_hosts) hosts.push_back(lowered(h));
        for (auto const& o : options.allowed_origins) origins.push_back(lowered(o));
        if (hosts.empty() && !unix_socket) hosts = default_allowed_hosts(host, port);
        if (origins.empty() && !unix_socket) origins = default_allowed_origins(host, port);
        // Over a unix socket, or on a public address nobody named, the Host header cannot be
        // judged; authentication and the Origin check still apply.
        any_host = hosts.empty();
    }

    clock_type::time_point now() const { return options.clock ? options.clock() : clock_type::now(); }

    // ------------------------------------------------------------ the door

    std::optional<http_response> check_host_origin(http_request const& req) {
        unsigned v = req.version();
        auto forbidden = [&](std::string why) {
            return rpc_error(403, std::nullopt, mcp::rpc_code::invalid_request, "Forbidden: " + std::move(why), v);
        };
        std::lock_guard lock(mutex);
        if (!any_host) {
            auto it = req.find(http::field::host);
            if (it == req.end()) return forbidden("a Host header is required");
            auto h = lowered(trim(it->value()));
            if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) {
                if (auto more = door_log.admit(std::string("host ") + std::string(client_address(req))))
                    spdlog::warn("mcp: refused a request for Host '{}' (DNS rebinding protection){}", h, *more);
                return forbidden("this Host is not allowed");
            }
        }
        if (auto it = req.find(http::field::origin); it != req.end()) {
            auto o = lowered(trim(it->value()));
            if (std::find(origins.begin(), origins.end(), o) == origins.end()) {
                if (auto more = door_log.admit(std::string("origin ") + std::string(client_address(req))))
                    spdlog::warn("mcp: refused a request from Origin '{}'{}", o, *more);
                return forbidden("this Origin is not allowed");
            }
        }
        return std::nullopt;
    }

    // The principal, or the 401 to send. The token is never logged, stored or passed on.
    std::variant<std::string, http_response> authenticate(http_request const& req) {
        unsigned v = req.version();
        auto unauthorized = [&](std::string why, bool token_given) {
            auto res = rpc_error(401, std::nullopt, mcp::rpc_code::invalid_request, "Unauthorized: " + std::move(why), v);
            res.set(http::field::www_authenticate,
                    token_given ? R"(Bearer realm="airlock", error="invalid_token")" : R"(Bearer realm="airlock")");
            return res;
        };
        if (!options.authenticate) {
            if (options.allow_anonymous) return std::string();
            return unauthorized("no bearer tokens are configured", false);
        }
        auto it = req.find(http::field::authorization);
        if (it == req.end()) {
            if (options.allow_anonymous) return std::string();
            return unauthorized("a bearer token is required", false);
        }
        auto value = trim(it->value());
        constexpr std::string_view scheme = "bearer";
        if (value.size() <= scheme.size() || !iequals(value.substr(0, scheme.size()), scheme) ||
            (value[scheme.size()] != ' ' && value[scheme.size()] != '\t')) {
            if (auto more = door_log.admit(std::string("scheme ") + std::string(client_address(req))))
                spdlog::warn("mcp: refused a request from {} with a non-bearer Authorization header{}", client_address(req),
                             *more);
            return unauthorized("the Authorization header must be 'Bearer <token>'", true);
        }
        auto token = trim(value.substr(scheme.size()));
        auto principal = options.authenticate(token);
        if (!principal) {
            if (auto more = door_log.admit(std::string("token ") + std::string(client_address(req))))
                spdlog::warn("mcp: refused a request from {} with an unknown bearer token{}", client_address(req), *more);
            return unauthorized("the bearer token is not valid", true);
        }
        return std::move(*principal);
    }

    // ------------------------------------------------------------ sessions

    bool expired(session const& s, clock_type::time_point t) const {
        return s.in_flight.empty() && !s.get_stream && t - s.last_seen > options.session_idle_timeout;
    }

    // Sessions enter and leave the table only through these two (under the mutex), so `held`
    // always counts what each principal holds.
    void add_session_locked(std::shared_ptr<session> const& s) {
        sessions[s->id] = s;
        held[s->principal].insert(s->id);
    }

    std::map<std::string, std::shared_ptr<session>>::iterator drop_session_locked(
        std::map<std::string, std::shared_ptr<session>>::iterator it) {
        if (auto h = held.find(it->second->principal); h != held.end()) {
            h->second.erase(it->first);
            if (h->second.empty()) held.erase(h);
        }
        return sessions.erase(it);
    }

    std::size_t held_by_locked(std::string const& principal) const {
        auto h = held.find(principal);
        return h == held.end() ? 0 : h->second.size();
    }

    // Whole seconds until the first of the principal's sessions has idled out at the pace of `t`,
    // if its client does nothing: the soonest its next initialize can succeed without a DELETE. A
    // session with a request in flight or a GET stream open restarts its idle clock when that ends,
    // so it counts as a full idle timeout. Expiry is "idle for longer than the timeout", hence + 1.
    std::int64_t seconds_until_a_slot_frees_locked(std::string const& principal, clock_type::time_point t) const {
        auto soonest = options.session_idle_timeout;
        if (auto h = held.find(principal); h != held.end())
            for (auto const& id : h->second) {
                auto it = sessions.find(id);
                if (it == sessions.end() || !it->second->in_flight.empty() || it->second->get_stream) continue;
                auto left = options.session_idle_timeout - std::chrono::duration_cast<std::chrono::milliseconds>(t - it->second->last_seen);
                soonest = std::min(soonest, std::max(left, std::chrono::milliseconds(0)));
            }
        return std::chrono::duration_cast<std::chrono::seconds>(soonest).count() + 1;
    }

    // Takes the sessions expired at `t` out of the table (under the mutex); the caller finishes them.
    std::vector<std::shared_ptr<session>> reap_locked(clock_type::time_point t) {
        std::vector<std::shared_ptr<session>> ended;
        for (auto it = sessions.begin(); it != sessions.end();) {
            if (expired(*it->second, t)) {
                ended.push_back(it->second);
                it = drop_session_locked(it);
            } else {
                ++it;
            }
        }
        return ended;
    }

    // The same for one principal's sessions only: as cheap as its share is small.
    std::vector<std::shared_ptr<session>> reap_of_locked(std::string const& principal, clock_type::time_point t) {
        std::vector<std::shared_ptr<session>> ended;
        auto h = held.find(principal);
        if (h == held.end()) return ended;
        std::vector<std::string> ids(h->second.begin(), h->second.end());
        for (auto const& id : ids) {
            auto it = sessions.find(id);
            if (it == sessions.end() || !expired(*it->second, t)) continue;
            ended.push_back(it->second);
            drop_session_locked(it);
        }
        return ended;
    }

    // Ends sessions idle for longer than the timeout; at most once a second.
    void sweep() {
        std::vector<std::shared_ptr<session>> ended;
        {
            std::lock_guard lock(mutex);
            auto t = now();
            if (t - last_sweep < std::chrono::seconds(1) && last_sweep != clock_type::time_point{}) return;
            last_sweep = t;
            ended = reap_locked(t);
        }
        for (auto& s : ended) finish_session(s, "idle");
    }

    // The caller's live session with that id; a session of another principal is as good as unknown.
    std::shared_ptr<session> find_session(std::string_view id, std::string const& principal, bool touch) {
        std::shared_ptr<session> expired_one;
        {
            std::lock_guard lock(mutex);
            auto it = sessions.find(std::string(id));
            if (it == sessions.end() || it->second->principal != principal) return nullptr;
            auto t = now();
            if (!expired(*it->second, t)) {
                if (touch) it->second->last_seen = t;
                return it->second;
            }
            expired_one = it->second;
            drop_session_locked(it);
        }
        finish_session(expired_one, "idle");
        return nullptr;
    }

    // Releases what an ended session held: its requests are cancelled, its questions to the
    // client fail, its stream ends, and the backend hears of it.
    // `cut_off` (stage cut_off or deleted): the session's requests end by airlock's or the client's
    // decision while they run, and each gets an error saying so; `running`: they are only cancelled.
    void finish_session(std::shared_ptr<session> const& s, std::string_view why,
                        exchange::stage cut_off = exchange::stage::running) {
        std::vector<std::shared_ptr<exchange>> running;
        std::vector<std::shared_ptr<answer_channel>> waiting;
        std::shared_ptr<listen_stream> stream;
        {
            std::lock_guard lock(mutex);
            for (auto& [k, w] : s->in_flight)
                if (auto ex = w.lock()) running.push_back(ex);
            s->in_flight.clear();
            for (auto& [k, a] : s->asks) waiting.push_back(a.answer);
            s->asks.clear();
            stream = std::move(s->get_stream);
        }
        for (auto& ex : running) {
            auto expected = exchange::stage::running;
            // A request its client cancelled gets no answer, whatever ends its session.
            if (cut_off != exchange::stage::running && !ex->cancelled)
                ex->ended.compare_exchange_strong(expected, cut_off);
            cancel(ex);
        }
        for (auto& a : waiting) a->try_send(asio::error::operation_aborted, nullptr);
        if (stream) end_listen_stream(stream, std::nullopt);
        spdlog::info("mcp: session {}… of '{}' ended ({})", short_id(s->id), s->principal, why);
        backend->session_closed(s->id);
    }

    // ------------------------------------------------------------ request lifecycle

    // Emits the request's cancellation slot on its own strand, once, and fails its questions.
    void cancel(std::shared_ptr<exchange> const& ex) {
        ex->cancelled = true;
        fail_asks(ex, "the request was cancelled");
        asio::post(ex->exec, [ex] {
            if (ex->cancel_emitted) return;
            ex->cancel_emitted = true;
            ex->cancel.emit(asio::cancellation_type::terminal);
        });
    }

    void fail_asks(std::shared_ptr<exchange> const& ex, std::string_view why) {
        std::vector<std::shared_ptr<answer_channel>> waiting;
        if (auto s = ex->owner.lock()) {
            std::lock_guard lock(mutex);
            for (auto it = s->asks.begin(); it != s->asks.end();) {
                if (it->second.asker.lock() == ex) {
                    waiting.push_back(it->second.answer);
                    it = s->asks.erase(it);
                } else {
                    ++it;
                }
            }
        }
        {
            std::lock_guard lock(mutex);
            if (ex->input) {
                for (auto& [k, q] : ex->input->open) waiting.push_back(q.answer);
                ex->input->open.clear();
            }
        }
        for (auto& a : waiting) a->try_send(asio::error::operation_aborted, nullptr);
        if (!waiting.empty()) spdlog::debug("mcp: {} question(s) to the client failed: {}", waiting.size(), why);
    }

    // The client can no longer receive this request's messages. Modern: that is its cancellation.
    // Legacy: a disconnect is not a cancellation (the spec says so); the work goes on, its output is dropped.
    void client_gone(std::shared_ptr<exchange> const& ex) {
        if (ex->gone.exchange(true)) return;
        ex->events.close();  // a backend notifying a departed client must not wait for room
        if (ex->ctx.client_era == mcp::era::modern) {
            cancel(ex);
        } else {
            fail_asks(ex, "the client's stream closed");
        }
    }

    static asio::awaitable<void> async_notify(std::weak_ptr<exchange> w, mcp::notification n) {
        auto ex = w.lock();
        // A parked request has no reader until its retry: what it says meanwhile is dropped.
        if (!ex || ex->gone || ex->cancelled || ex->parked) co_return;
        outgoing o;
        o.json = mcp::serialize(n);
        co_await ex->events.async_send(error_code{}, std::move(o), as_tuple(use_awaitable));
    }

    static asio::awaitable<mcp::handler_result> async_ask(std::shared_ptr<impl> self, std::weak_ptr<exchange> w,
                                                          std::string method, json::object params) {
        auto refuse = [](std::string why) {
            return mcp::handler_result(mcp::error_object{mcp::rpc_code::internal_error, std::move(why), std::nullopt});
        };
        auto ex = w.lock();
        if (!ex) co_return refuse("the request has ended");
        if (ex->ctx.client_era == mcp::era::modern) {
            // A 2026-07-28 server must not rely on a capability the client did not declare, and
            // says so with -32021; a declared one is reached only through input requests (MRTR).
            if (auto cap = mcp_rules::client_capability_for(method); cap && !ex->ctx.client_capabilities.contains(*cap)) {
                {
                    std::lock_guard lock(self->mutex);
                    ex->missing_capability = std::string(*cap);
                }
                co_return mcp::handler_result(mcp_rules::missing_client_capability(*cap));
            }
            if (auto why = mcp::mrtr_rounds::cannot_ask(method, ex->method)) co_return refuse(std::move(*why));
            co_return co_await async_ask_modern(std::move(self), std::move(ex), std::move(method), std::move(params));
        }
        auto s = ex->owner.lock();
        if (!s) co_return refuse("the session has ended");
        if (auto cap = mcp_rules::client_capability_for(method); cap && !ex->ctx.client_capabilities.contains(*cap))
            co_return mcp::handler_result(mcp::error_object{
                mcp::rpc_code::method_not_found, "the client did not declare the '" + std::string(*cap) + "' capability",
                std::nullopt});
        if (ex->gone || ex->cancelled) co_return refuse("the client can no longer be asked (its stream closed)");

        auto answer = std::make_shared<answer_channel>(ex->exec, 1);
        std::int64_t id = 0;
        {
            std::lock_guard lock(self->mutex);
            id = s->next_ask++;
            s->asks[id] = pending_ask{answer, ex};
        }
        auto forget = [&] {
            std::lock_guard lock(self->mutex);
            s->asks.erase(id);
        };
        outgoing o;
        o.json = mcp::serialize(mcp::request{id, std::move(method), std::move(params)});
        auto [sec] = co_await ex->events.async_send(error_code{}, std::move(o), as_tuple(use_awaitable));
        if (sec) {
            forget();
            co_return refuse("the client can no longer be asked (its stream closed)");
        }
        auto [rec, result] = co_await answer->async_receive(as_tuple(use_awaitable));
        forget();
        if (rec || !result) co_return refuse("the client did not answer: the request was cancelled or its stream closed");
        co_return std::move(*result);
    }

    // A question during a modern request becomes an input request of the request's next
    // InputRequiredResult; the answer comes with the retry (or came ahead, in inputResponses).
    static asio::awaitable<mcp::handler_result> async_ask_modern(std::shared_ptr<impl> self, std::shared_ptr<exchange> ex,
                                                                 std::string method, json::object params) {
        auto refuse = [](std::string why) {
            return mcp::handler_result(mcp::error_object{mcp::rpc_code::internal_error, std::move(why), std::nullopt});
        };
        auto answer = std::make_shared<answer_channel>(ex->exec, 1);
        mcp::mrtr_rounds::filed f;
        {
            std::lock_guard lock(self->mutex);
            if (ex->gone || ex->cancelled) co_return refuse("the client can no longer be asked (the request ended)");
            if (!ex->input) {
                ex->input = std::make_unique<input_state>();
                ex->input->reply_id = ex->id;
                ex->input->prefill = std::move(ex->mrtr_prefill);
            }
            f = mcp::mrtr_rounds::file_question(*ex->input, method, std::move(params), answer, self->input_limits());
        }
        if (f.refused) co_return refuse(std::move(*f.refused));
        if (f.ahead) co_return mcp::handler_result(std::move(*f.ahead));
        auto const& key = f.key;
        spdlog::debug("mcp: {} {} asks the client {} as input request '{}'", ex->method, ex->key, method, key);
        if (f.schedule_round) {
            outgoing o;
            o.input_required = true;
            co_await ex->events.async_send(error_code{}, std::move(o), as_tuple(use_awaitable));
        }
        auto [rec, result] = co_await answer->async_receive(as_tuple(use_awaitable));
        {
            std::lock_guard lock(self->mutex);
            if (ex->input) mcp::mrtr_rounds::forget_question(*ex->input, key, answer);
        }
        if (rec || !result) co_return refuse("the client did not answer: the request was cancelled or its requestState lapsed");
        co_return std::move(*result);
    }

    // Routes a client's answer to the question that is waiting for it.
    void route_answer(std::shared_ptr<session> const& s, mcp::message const& m) {
        auto id = mcp::id_of(m);
        auto const* n = id ? std::get_if<std::int64_t>(&*id) : nullptr;
        std::shared_ptr<answer_channel> answer;
        if (n) {
            std::lock_guard lock(mutex);
            if (auto it = s->asks.find(*n); it != s->asks.end()) {
                answer = it->second.answer;
                s->asks.erase(it);
            }
        }
        if (!answer) {
            spdlog::debug("mcp: an answer from the client matches no open question");
            return;
        }
        std::shared_ptr<mcp::handler_result> r;
        if (auto const* ok = std::get_if<mcp::response>(&m))
            r = std::make_shared<mcp::handler_result>(ok->result);
        else
            r = std::make_shared<mcp::handler_result>(std::get<mcp::error_response>(m).error);
        answer->try_send(error_code{}, std::move(r));
    }

    // The response that ends a request, as its era writes it.
    static outgoing final_message(mcp::era e, std::string const& method, mcp::request_id const& id, mcp::handler_result result) {
        outgoing o;
        o.final = true;
        if (result) {
            auto obj = std::move(*result);
            if (e == mcp::era::modern) mcp_rules::decorate_modern_result(method, obj);
            o.json = mcp::serialize(mcp::response{id, std::move(obj)});
        } else {
            o.status = mcp::http_status_for(e, result.error().code);
            o.json = mcp::serialize(mcp::error_response{id, std::move(result.error())});
        }
        return o;
    }

    static asio::awaitable<void> run_backend(std::shared_ptr<impl> self, std::shared_ptr<exchange> ex, mcp::request r) {
        auto id = r.id;
        auto e = ex->ctx.client_era;
        mcp::handler_result result = mcp::error_object{mcp::rpc_code::internal_error, "Internal error", std::nullopt};
        try {
            result = co_await self->backend->async_handle(std::move(r), ex->ctx);
        } catch (std::exception const& x) {
            spdlog::error("mcp: {} failed with an internal error: {}", ex->method, x.what());
            result = mcp::error_object{mcp::rpc_code::internal_error, "Internal error", std::nullopt};
        }
        bool asked = false;
        if (e == mcp::era::modern) {
            std::optional<std::string> missing;
            {
                std::lock_guard lock(self->mutex);
                missing = ex->missing_capability;
                asked = ex->input != nullptr;
            }
            if (missing) {
                result = mcp_rules::missing_client_capability(*missing);
            } else if (!result) {
                auto err = result.error();
                mcp_rules::modernize_error(ex->method, err);
                result = std::move(err);
            }
        }
        if (asked) {
            // After a round of questions the reply carries the latest attempt's id; while parked
            // there is no reader, and the result waits for the retry.
            std::lock_guard lock(self->mutex);
            auto& in = *ex->input;
            in.final_sent = true;
            if (in.parked) {
                in.parked_final = std::move(result);
                co_return;
            }
            id = in.reply_id;
            if (!in.pending_id.empty()) self->pending_inputs.erase(in.pending_id);
        }
        auto expected = exchange::stage::running;
        bool cut_off = !ex->ended.compare_exchange_strong(expected, exchange::stage::answered) &&
                       (expected == exchange::stage::cut_off || expected == exchange::stage::deleted);
        // What the backend finished all the same (its call landed, and the journal says done) is
        // answered as it is: "cut off" is said only of what the cancellation ended, which returns an error.
        if (cut_off && !result)
            result = expected == exchange::stage::deleted ? mcp_rules::cut_off_by_delete() : mcp_rules::cut_off_by_stop();
        outgoing o = final_message(e, ex->method, id, std::move(result));
        o.suppress = ex->cancelled && !cut_off;
        if (auto s = ex->owner.lock()) {
            std::lock_guard lock(self->mutex);
            if (auto it = s->in_flight.find(ex->key); it != s->in_flight.end() && it->second.lock() == ex) s->in_flight.erase(it);
            s->last_seen = self->now();
        }
        // A departed client's channel is closed: the send fails at once, and the result is dropped.
        co_await ex->events.async_send(error_code{}, std::move(o), as_tuple(use_awaitable));
    }

    struct request_setup {
        std::string principal;
        mcp::era e = mcp::era::legacy;
        std::string version;
        json::object capabilities;
        std::shared_ptr<session> owner;  // legacy
        std::optional<json::object> prefill;  // modern: inputResponses on a first attempt
        std::optional<mcp::http_headers> param_headers;  // modern tools/call: its Mcp-Param-* headers
    };

    // Serves a request through the backend, answering with JSON when the backend finishes before
    // emitting anything, and with SSE from the first notification or question on.
    asio::awaitable<http_reply> serve_request(unsigned version, mcp::request r, request_setup setup) {
        auto exec = co_await asio::this_coro::executor;
        auto ex = std::make_shared<exchange>(exec);
        ex->method = r.method;
        ex->key = mcp::to_string(r.id);
        auto& ctx = ex->ctx;
        ctx.principal = setup.principal;
        ctx.session_id = setup.owner ? setup.owner->id : std::string();
        ctx.client_era = setup.e;
        ctx.protocol_version = std::move(setup.version);
        ctx.client_capabilities = std::move(setup.capabilities);
        ctx.progress = mcp_rules::progress_token_of(r.params);
        ctx.request_id_text = ex->key;
        ctx.param_headers = std::move(setup.param_headers);
        ctx.cancelled = ex->cancel.slot();
        std::weak_ptr<exchange> weak = ex;
        auto self = shared_from_this();
        ctx.notify = [weak](mcp::notification n) { return async_notify(weak, std::move(n)); };
        ctx.ask_client = [self, weak](std::string m, json::object p) {
            return async_ask(self, weak, std::move(m), std::move(p));
        };
        if (setup.owner) {
            ex->owner = setup.owner;
            std::lock_guard lock(mutex);
            setup.owner->in_flight[ex->key] = ex;
        }
        if (setup.e == mcp::era::modern && mcp::mrtr::allows_input_required(r.method)) {
            ex->id = r.id;
            ex->mrtr_params = r.params ? *r.params : json::object{};
            ex->mrtr_prefill = std::move(setup.prefill);
        }

        auto task = run_backend(self, ex, std::move(r));
        asio::co_spawn(exec, std::move(task), asio::detached);
        co_return co_await reply(version, std::move(ex));
    }

    // Answers the HTTP request that is the exchange's current reader: JSON when the first thing
    // it has to say is its final message, SSE otherwise.
    asio::awaitable<http_reply> reply(unsigned version, std::shared_ptr<exchange> ex) {
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
        auto pump_task = pump(self, ex, body, quiet, std::move(first));
        asio::co_spawn(exec, std::move(pump_task), asio::detached);
        auto ka = keep_alive_loop(quiet, body, options.keep_alive_interval);
        asio::co_spawn(exec, std::move(ka), asio::detached);
        co_return st;
    }

    // Moves a request's messages onto its SSE stream. Keep-alive comments come from a loop of their
    // own: racing the receive against a timer could lose a message that arrives as the timer fires.
    // The stream ends right after the response it exists for: the keep-alive loop stops, and the
    // end of the body waits for room behind what is buffered (a notification flood fills the
    // buffer; an end marker tried and dropped there left the body open for good).
    static asio::awaitable<void> pump(std::shared_ptr<impl> self, std::shared_ptr<exchange> ex,
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
                                                                         std::shared_ptr<exchange> ex) {
        for (;;) {
            auto [ec, o] = co_await ex->events.async_receive(as_tuple(use_awaitable));
            if (ec || !o.input_required) co_return std::make_tuple(ec, std::move(o));
            auto round = co_await self->async_end_round(ex);
            if (round) co_return std::make_tuple(error_code{}, std::move(*round));
        }
    }

    asio::awaitable<std::optional<outgoing>> async_end_round(std::shared_ptr<exchange> ex) {
        // Questions an upstream asks together (concurrent requests) belong in one round.
        asio::steady_timer gather(co_await asio::this_coro::executor, options.input_gather);
        co_await gather.async_wait(as_tuple(use_awaitable));
        std::optional<outgoing> out;
        bool full = false;
        {
            std::lock_guard lock(mutex);
            auto& in = *ex->input;
            in.round_due = false;
            if (in.final_sent || in.open.empty() || ex->cancelled || ex->gone) co_return std::nullopt;
            auto result = mcp::mrtr_rounds::issue_round(in, *sealer, ex->ctx.principal, ex->method,
                                                   ex->mrtr_params ? *ex->mrtr_params : json::object{}, pending_inputs.size(),
                                                   input_limits(), options.random);
            full = !result;
            if (result) {
                ex->mrtr_params.reset();
                ex->parked = true;
                pending_inputs[in.pending_id] = ex;
                in.expiry = std::make_shared<asio::steady_timer>(ex->exec, options.input_request_ttl);
                auto expire = async_expire(shared_from_this(), ex, in.expiry, in.round);
                asio::co_spawn(ex->exec, std::move(expire), asio::detached);
                out = final_message(mcp::era::modern, ex->method, in.reply_id, std::move(*result));
                spdlog::info("mcp: {} {} of '{}' waits for {} answer(s) from the client (round {})", ex->method, ex->key,
                             ex->ctx.principal, in.open.size(), in.round);
            }
        }
        if (full) {
            if (auto more = door_log.admit("inputs " + ex->ctx.principal))
                spdlog::warn("mcp: {} requests already wait for client input; {} {} refused{}", options.max_pending_inputs,
                             ex->method, ex->key, *more);
            mcp::error_object err{mcp::rpc_code::internal_error, "too many requests are waiting for client input; retry later",
                                  std::nullopt};
            mcp::request_id id;
            {
                std::lock_guard lock(mutex);
                id = ex->input->reply_id;
            }
            cancel(ex);
            out = final_message(mcp::era::modern, ex->method, id, std::move(err));
        }
        co_return out;
    }

    // A parked request whose requestState lapsed unanswered is cancelled (so is its upstream call).
    static asio::awaitable<void> async_expire(std::shared_ptr<impl> self, std::shared_ptr<exchange> ex,
                                              std::shared_ptr<asio::steady_timer> timer, std::uint64_t round) {
        auto [ec] = co_await timer->async_wait(as_tuple(use_awaitable));
        if (ec) co_return;
        {
            std::lock_guard lock(self->mutex);
            auto& in = *ex->input;
            if (!mcp::mrtr_rounds::lapse(in, round)) co_return;
            self->pending_inputs.erase(in.pending_id);
        }
        spdlog::info("mcp: {} {} of '{}': no retry came with the answers in time; cancelled", ex->method, ex->key,
                     ex->ctx.principal);
        self->cancel(ex);
    }

    // A retry carrying a requestState: the answers go to the waiting questions, and this HTTP
    // request becomes the pending request's reader.
    asio::awaitable<http_reply> resume(unsigned v, mcp::request const& r, std::string const& principal,
                                       std::optional<json::object> responses) {
        auto refuse = [&](std::string why) {
            return rpc_error(mcp::http_status_for(mcp::era::modern, mcp::rpc_code::invalid_params), r.id,
                             mcp::rpc_code::invalid_params, "Invalid params: " + std::move(why), v);
        };
        auto st = mcp::mrtr_rounds::open_retry(*sealer, r, principal);
        if (!st) co_return refuse(st.error().message);

        std::shared_ptr<exchange> ex;
        std::optional<mcp::mrtr_rounds::resumed> go;
        {
            std::lock_guard lock(mutex);
            auto it = pending_inputs.find(st->pending);
            if (it == pending_inputs.end())
                co_return refuse(std::string(mcp::mrtr_rounds::no_longer_pending));
            ex = it->second;
            auto step = mcp::mrtr_rounds::resume(*ex->input, st->round, responses, r.id);
            if (!step) co_return refuse(step.error().message);
            ex->parked = false;
            if (step->done) pending_inputs.erase(it);
            go = std::move(*step);
        }
        if (go->schedule_round) {
            outgoing o;
            o.input_required = true;
            ex->events.try_send(error_code{}, std::move(o));
        }
        mcp::mrtr_rounds::hand_over(*go);
        auto& done = go->done;
        if (done) {
            auto o = final_message(mcp::era::modern, ex->method, r.id, std::move(*done));
            co_return rpc_json(o.status, std::move(o.json), v);
        }
        co_return co_await reply(v, std::move(ex));
    }

    // Sends an SSE comment whenever a stream has been quiet for a while, until the timer is
    // cancelled or the server has closed the body.
    static asio::awaitable<void> keep_alive_loop(std::shared_ptr<asio::steady_timer> timer,
                                                 std::shared_ptr<http_body_channel> body, std::chrono::milliseconds every) {
        for (;;) {
            timer->expires_after(every);
            auto [ec] = co_await timer->async_wait(as_tuple(use_awaitable));
            if (ec || !body->is_open()) co_return;
            body->try_send(error_code{}, mcp::format_sse_comment());
        }
    }

    // ------------------------------------------------------------ notification streams

    // Opens a stream and its backend listener; `on_notification` formats what the sink receives.
    asio::awaitable<http_stream> open_listen_stream(unsigned version, std::string const& principal,
                                                    std::shared_ptr<listen_stream> ls, std::string opening,
                                                    std::function<std::optional<std::string>(mcp::notification const&)> format,
                                                    std::function<void()> on_close, std::string session_id = {}) {
        auto exec = co_await asio::this_coro::executor;
        ls->body = make_body_channel(exec, std::max<std::size_t>(options.stream_buffer, 2));
        ls->keep_alive = std::make_shared<asio::steady_timer>(exec);
        ls->body->try_send(error_code{}, std::move(opening));
        std::weak_ptr<listen_stream> weak = ls;
        auto on_notification = [weak, format = std::move(format), dropped = dropped_log](mcp::notification const& n) {
            auto l = weak.lock();
            if (!l || l->ended) return;
            auto text = format(n);
            if (!text) return;
            if (!l->body->try_send(error_code{}, std::move(*text)) && l->body->is_open())
                if (auto more = dropped->admit(n.method))
                    spdlog::warn("mcp: a notification stream is not keeping up; dropped {}{}", n.method, *more);
        };
        ls->listener = backend->add_session_listener(principal, session_id, std::move(on_notification));
        ls->listening = true;
        auto self = shared_from_this();
        http_stream st;
        st.head = sse_head(version);
        st.body = ls->body;
        st.long_lived = true;
        st.on_end = [self, ls, on_close = std::move(on_close)](bool) {
            ls->ended = true;
            ls->keep_alive->cancel();
            if (ls->listening) {
                ls->listening = false;
                self->backend->remove_listener(ls->listener);
            }
            if (on_close) on_close();
        };
        auto ka = keep_alive_loop(ls->keep_alive, ls->body, options.keep_alive_interval);
        asio::co_spawn(exec, std::move(ka), asio::detached);
        co_return st;
    }

    // Ends a notification stream from the server's side (session end, shutdown); a modern
    // subscription first gets the response that closes it gracefully.
    void end_listen_stream(std::shared_ptr<listen_stream> const& ls, std::optional<std::string> closing) {
        if (ls->ended.exchange(true)) return;
        if (closing) ls->body->try_send(error_code{}, std::move(*closing));
        if (!ls->body->try_send(asio::error::eof, std::string())) ls->body->close();
    }

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
        if (auto refused = check_host_origin(req)) co_return std::move(*refused);
        // An Origin that got past the check is allowed: a browser client there may read the reply.
        std::string const origin(req[http::field::origin]);
        if (req.method() == http::verb::options) co_return preflight(req, origin);
        auto reply = co_await handle_allowed(req);
        if (!origin.empty()) std::visit([&](auto& r) { allow_origin(head_of(r), origin); }, reply);
        co_return reply;
    }

    static http::response_header<>& head_of(http_response& r) { return r.base(); }
    static http::response_header<>& head_of(http_stream& s) { return s.head.base(); }

    static void allow_origin(http::response_header<>& h, std::string_view origin) {
        h.set(http::field::access_control_allow_origin, origin);
        h.set(http::field::access_control_expose_headers, "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate");
    }

    // A CORS preflight carries no credentials: it is answered before authentication, and says only
    // what a browser may send. Origins other than the allowed ones were refused above.
    static http_response preflight(http_request const& req, std::string_view origin) {
        http_response res{http::status::no_content, req.version()};
        res.set(http::field::allow, "POST, GET, DELETE, OPTIONS");
        // The headers allowed are the ones the browser asked for: the answer depends on those too.
        res.set(http::field::vary, "Origin, Access-Control-Request-Headers");
        if (!origin.empty()) {
            allow_origin(res.base(), origin);
            res.set(http::field::access_control_allow_methods, "POST, GET, DELETE");
            // The headers a request may carry include Mcp-Param-* ones named after a tool's arguments:
            // the browser's own list of what it will send is the one to allow.
            auto const asked_field = req[http::field::access_control_request_headers];
            std::string_view const asked(asked_field.data(), asked_field.size());
            res.set(http::field::access_control_allow_headers,
                    !asked.empty() ? asked
                                   : std::string_view("Authorization, Content-Type, Accept, Mcp-Session-Id, "
                                                      "MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID"));
            res.set(http::field::access_control_max_age, "600");
        }
        res.prepare_payload();
        return res;
    }

    asio::awaitable<http_reply> handle_allowed(http_request& req) {
        unsigned v = req.version();
        auto who = authenticate(req);
        if (auto* refused = std::get_if<http_response>(&who)) co_return std::move(*refused);
        auto principal = std::get<std::string>(std::move(who));
        note_principal(req, principal);
        sweep();
        switch (req.method()) {
        case http::verb::post: co_return co_await handle_post(req, principal);
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
    std::variant<std::shared_ptr<session>, http_response> bodiless_session(http_request const& req, std::string const& principal) {
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
        auto s = std::get<std::shared_ptr<session>>(std::move(found));

        auto ls = std::make_shared<listen_stream>();
        {
            std::lock_guard lock(mutex);
            if (s->get_stream && !s->get_stream->ended)
                co_return rpc_error(409, std::nullopt, mcp::rpc_code::invalid_request,
                                    "Conflict: this session already has a notification stream open", v);
            s->get_stream = ls;
        }
        std::weak_ptr<session> ws = s;
        auto priming = sse_event("", std::to_string(s->next_event++), static_cast<std::uint64_t>(options.sse_retry.count()));
        std::function<std::optional<std::string>(mcp::notification const&)> format =
            [ws](mcp::notification const& n) -> std::optional<std::string> {
            auto sp = ws.lock();
            if (!sp) return std::nullopt;
            return sse_event(mcp::serialize(n), std::to_string(sp->next_event++));
        };
        auto self = shared_from_this();
        std::function<void()> on_close = [self, ws, ls] {
            if (auto sp = ws.lock()) {
                std::lock_guard lock(self->mutex);
                if (sp->get_stream == ls) sp->get_stream.reset();
                sp->last_seen = self->now();
            }
        };
        co_return co_await open_listen_stream(v, principal, ls, std::move(priming), std::move(format), std::move(on_close), s->id);
    }

    http_response handle_delete(http_request& req, std::string const& principal) {
        auto found = bodiless_session(req, principal);
        if (auto* refused = std::get_if<http_response>(&found)) return std::move(*refused);
        auto s = std::get<std::shared_ptr<session>>(std::move(found));
        bool dropped = false;
        {
            std::lock_guard lock(mutex);
            if (auto it = sessions.find(s->id); it != sessions.end() && it->second == s) {
                drop_session_locked(it);
                dropped = true;
            }
        }
        // Otherwise it has just ended another way (idle, shutdown), and was finished there.
        // A request still running on it is answered, so its client does not wait for a reply that
        // can no longer come.
        if (dropped) finish_session(s, "deleted by the client", exchange::stage::deleted);
        http_response res{http::status::no_content, req.version()};
        return res;
    }

    asio::awaitable<http_reply> handle_post(http_request& req, std::string const& principal) {
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
        if (e == mcp::era::modern) co_return co_await modern_post(v, h, std::move(*parsed), principal);
        co_return co_await legacy_post(v, h, std::move(*parsed), principal);
    }

    asio::awaitable<http_reply> legacy_post(unsigned v, mcp::http_headers const& h, mcp::message msg, std::string const& principal) {
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

        std::shared_ptr<session> s;
        if (auto sid = h.get(mcp::header::session_id)) s = find_session(*sid, principal, true);
        if (!s)
            co_return rpc_error(404, mcp::id_of(msg), mcp::rpc_code::invalid_request,
                                "Invalid request: session not found; send initialize to start a new one", v);

        if (auto* r = std::get_if<mcp::request>(&msg)) {
            if (r->method == mcp::method::ping) co_return rpc_json(200, mcp::serialize(mcp::response{r->id, {}}), v);
            json::object caps;
            {
                std::lock_guard lock(mutex);
                caps = s->client_capabilities;
            }
            request_setup setup{principal, mcp::era::legacy, version, std::move(caps), s};
            co_return co_await serve_request(v, std::move(*r), std::move(setup));
        }
        if (auto* n = std::get_if<mcp::notification>(&msg)) {
            if (n->method == mcp::method::cancelled) {
                cancel_by_notification(s, *n);
            } else if (n->method != mcp::method::initialized) {
                auto ctx = detached_context(principal, s->id, mcp::era::legacy, version, s->client_capabilities);
                co_await backend->async_notification(std::move(*n), ctx);
            }
            co_return accepted(v);
        }
        route_answer(s, msg);
        co_return accepted(v);
    }

    void cancel_by_notification(std::shared_ptr<session> const& s, mcp::notification const& n) {
        auto p = mcp::parse_cancelled_params(n.params ? json::value(*n.params) : json::value(json::object{}));
        if (!p || !p->id) return;
        std::shared_ptr<exchange> ex;
        {
            std::lock_guard lock(mutex);
            if (auto it = s->in_flight.find(mcp::to_string(*p->id)); it != s->in_flight.end()) ex = it->second.lock();
        }
        if (!ex) return;  // already finished: the spec tells us to ignore it
        spdlog::info("mcp: the client cancelled {} {}", ex->method, ex->key);
        cancel(ex);
    }

    http_response initialize(unsigned v, mcp::request const& r, std::string const& principal, std::string const& version) {
        auto params = mcp::parse_initialize_params(r.params ? json::value(*r.params) : json::value(json::object{}));
        if (!params)
            return rpc_error(200, r.id, mcp::rpc_code::invalid_params, "Invalid params: " + params.error().message, v);
        auto s = std::make_shared<session>();
        s->principal = principal;
        s->protocol_version = version;
        s->client_capabilities = params->capabilities;
        s->last_seen = now();
        std::vector<std::shared_ptr<session>> idle;
        std::optional<http_response> refused;
        {
            std::lock_guard lock(mutex);
            // The sweep runs at most once a second; a principal at its share gets back a slot one
            // of its own sessions idled out of meanwhile rather than a 429 it cannot explain.
            if (held_by_locked(principal) >= options.max_sessions_per_principal)
                idle = reap_of_locked(principal, s->last_seen);
            if (auto holding = held_by_locked(principal); holding >= options.max_sessions_per_principal) {
                refused = session_limit_reached(v, r.id, principal, holding);
                refused->set(http::field::retry_after, std::to_string(seconds_until_a_slot_frees_locked(principal, s->last_seen)));
            } else if (sessions.size() >= options.max_sessions) {
                spdlog::warn("mcp: refused initialize from '{}': {} sessions are open", principal, sessions.size());
                refused = rpc_error(503, r.id, mcp::rpc_code::internal_error, "Too many sessions; retry later", v);
                // Any client's DELETE or the once-a-second sweep may free a slot, so a second is the
                // shortest wait worth asking for. Finding the table's next expiry would cost a scan of
                // every session on each refusal, just when refusals come in numbers.
                refused->set(http::field::retry_after, "1");
            } else {
                do s->id = mcp_rules::new_session_id(options.random);
                while (sessions.contains(s->id));
                add_session_locked(s);
            }
        }
        for (auto& ended : idle) finish_session(ended, "idle");
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

    asio::awaitable<http_reply> modern_post(unsigned v, mcp::http_headers const& h, mcp::message msg, std::string const& principal) {
        auto checked = mcp::validate_modern_post(h, msg, nullptr);
        if (!checked) co_return rpc_json(checked.error().status, mcp::serialize(checked.error().body), v);

        if (auto* n = std::get_if<mcp::notification>(&msg)) {
            // On HTTP a modern client cancels by closing the stream; a cancelled notification names
            // nothing we can find, so it is accepted and ignored.
            if (n->method != mcp::method::cancelled) {
                auto meta = mcp::parse_request_meta(n->params);
                auto ctx = detached_context(principal, "", mcp::era::modern, meta ? meta->protocol_version : std::string(mcp::version::modern),
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
        if (r.method == mcp::method::tools_call) {
            // The backend knows the called tool's x-mcp-header parameters; these are what it checks.
            mcp::http_headers params;
            constexpr std::string_view prefix = mcp::header::param_prefix;
            for (auto const& f : h)
                if (f.name.size() > prefix.size() && iequals(std::string_view(f.name).substr(0, prefix.size()), prefix))
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
        co_return co_await open_listen_stream(v, principal, ls, std::move(ack), std::move(format), std::move(on_close));
    }

    void close_streams() {
        std::vector<std::shared_ptr<listen_stream>> streams;
        {
            std::lock_guard lock(mutex);
            streams.assign(subscriptions.begin(), subscriptions.end());
            subscriptions.clear();
            for (auto& [id, s] : sessions)
                if (s->get_stream) streams.push_back(std::move(s->get_stream));
        }
        for (auto& ls : streams) {
            if (ls->subscription)
                end_listen_stream(ls, sse_event(mcp::serialize(mcp::response{*ls->subscription, mcp_rules::subscription_completed(*ls->subscription)})));
            else
                end_listen_stream(ls, std::nullopt);
        }
    }

    void shutdown() {
        close_streams();
        std::vector<std::shared_ptr<session>> all;
        {
            std::lock_guard lock(mutex);
            for (auto& [id, s] : sessions) all.push_back(s);
            sessions.clear();
            held.clear();
        }
        std::vector<std::shared_ptr<exchange>> parked;
        {
            std::lock_guard lock(mutex);
            for (auto& [id, ex] : pending_inputs) parked.push_back(ex);
            pending_inputs.clear();
        }
        for (auto& ex : parked) cancel(ex);
        for (auto& s : all) finish_session(s, "server shutting down", exchange::stage::cut_off);
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
    std::lock_guard lock(impl_->mutex);
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
