#include "mcp/client/http_transport.hpp"

#include "core/ascii.hpp"
#include "mcp/protocol/era.hpp"
#include "mcp/client/http_pool.hpp"
#include "mcp/protocol/log_throttle.hpp"
#include "mcp/protocol/messages.hpp"
#include "mcp/client/on_strand.hpp"
#include "mcp/client/spawn_logged.hpp"
#include "mcp/protocol/sse.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/url/parse.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <mutex>

namespace airlock::mcp {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using asio::as_tuple;
using asio::use_awaitable;
using clock_type = std::chrono::steady_clock;
using time_point = clock_type::time_point;
using namespace asio::experimental::awaitable_operators;

namespace {

using kind = transport_error::kind;


// Error bodies are read only to find a JSON-RPC error in them; a server that sends more is not
// telling us anything a person needs.
constexpr std::size_t max_error_body_bytes = 64 * 1024;
// A server that names no `retry:` before dropping a stream is asked again after this long.
constexpr std::chrono::milliseconds default_resume_delay{250};
constexpr std::chrono::milliseconds max_resume_delay{30'000};

bool blank(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

}  // namespace

bool is_header_name(std::string_view name) noexcept {
    auto token_char = [](char c) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
        return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    };
    return !name.empty() && std::all_of(name.begin(), name.end(), token_char);
}

// A configured header may not override what the protocol says.
bool is_transport_header(std::string_view name) noexcept {
    static constexpr std::string_view reserved[] = {"host", "accept", "content-type", "content-length",
                                                    "transfer-encoding", "connection", "last-event-id"};
    for (auto r : reserved)
        if (core::iequals(name, r)) return true;
    return name.size() >= 4 && core::iequals(name.substr(0, 4), "mcp-");
}

core::result<http_endpoint> parse_http_url(std::string_view text) {
    auto parsed = boost::urls::parse_uri(text);
    if (!parsed) return core::make_error("invalid_url", "url '" + std::string(text) + "' is not a URL: " + parsed.error().message());
    auto const& u = *parsed;
    http_endpoint e;
    e.scheme = std::string(u.scheme());
    for (auto& c : e.scheme) c = core::ascii_lower(c);
    if (e.scheme != "http" && e.scheme != "https")
        return core::make_error("invalid_url", "url '" + std::string(text) + "': scheme must be http or https");
    if (u.has_userinfo())
        return core::make_error("invalid_url", "url of an upstream must not carry user information; configure credentials as headers");
    e.host = std::string(u.host_address());
    if (e.host.empty()) return core::make_error("invalid_url", "url '" + std::string(text) + "' has no host");
    if (u.host_type() == boost::urls::host_type::ipvfuture)
        return core::make_error("invalid_url", "url '" + std::string(text) + "': IPvFuture hosts are not supported");
    if (u.has_port()) {
        if (u.port().empty() || u.port_number() == 0)
            return core::make_error("invalid_url", "url '" + std::string(text) + "': port must be 1-65535");
        e.port = u.port_number();
    } else {
        e.port = e.scheme == "https" ? 443 : 80;
    }
    e.target = std::string(u.encoded_path());
    if (e.target.empty()) e.target = "/";
    if (u.has_query()) e.target += "?" + std::string(u.encoded_query());
    e.host_header = std::string(u.encoded_host_and_port());
    // What is connected to, and checked against egress, must be what the URL says. Boost.URL 1.81
    // misreads some authorities: "127.0.0.1.:8080" comes back as the address 127.0.0.1 with no port
    // at all (so port 80). The authority as written must be the host and port that were read.
    auto const slashes = text.find("://");
    auto authority = slashes == std::string_view::npos ? std::string_view() : text.substr(slashes + 3);
    authority = authority.substr(0, authority.find_first_of("/?#"));
    if (authority != e.host_header)
        return core::make_error("invalid_url", "url '" + std::string(text) + "': its host and port '" + std::string(authority) +
                                                   "' cannot be read exactly; write the host without a trailing '.' and "
                                                   "an IPv6 host in brackets");
    // A name with a trailing '.' is absolute in DNS, one without may be completed by the resolver's
    // search list: they need not be the same host, and egress compares hosts exactly.
    if (e.host.ends_with('.'))
        return core::make_error("invalid_url", "url '" + std::string(text) + "': the host '" + e.host +
                                                   "' ends with '.'; write it without the trailing '.'");
    return e;
}

// ---------------------------------------------------------------- state

using http_wire::exchange;
using http_wire::outgoing;
using http_wire::read_body;
using http_wire::read_body_some;
using http_wire::describe;

struct http_transport::state : std::enable_shared_from_this<state> {
    asio::strand<asio::any_io_executor> strand;
    http_transport_options opts;
    http_pool pool;
    std::optional<std::string> setup_problem;  // why the transport cannot send at all

    // Settings: written by the synchronous setters from any thread, read on the strand.
    mutable std::mutex mutex;
    std::optional<era> chosen_era;
    std::string version;
    legacy_session session;
    std::function<void(notification const&)> notification_handler;
    server_request_handler request_handler;

    // Strand only.
    bool closed = false;
    // The server can make these happen once per message: logged once per interval with a count.
    log_throttle repeated_log;

    static http_pool_options pool_options(http_transport_options const& o) {
        return http_pool_options{"mcp http " + o.server_name, o.url,           o.headers,   o.verify_peer,
                                 o.ca_file,                   o.connect_timeout, o.pool_size, o.allow_address};
    }

    state(asio::any_io_executor exec, http_transport_options o)
        : strand(asio::make_strand(exec)), opts(std::move(o)), pool(strand, pool_options(opts)) {
        setup_problem = pool.setup_problem();
        if (setup_problem) return;
        for (auto const& [name, value] : opts.headers) {
            if (is_transport_header(name)) {
                setup_problem = "configured header '" + name + "' is set by the MCP transport itself";
                return;
            }
        }
    }

    std::string const& name() const { return opts.server_name; }
    http_endpoint const& ep() const { return pool.endpoint(); }
    std::string where() const { return pool.where(); }

    std::optional<transport_error> unusable() const {
        if (setup_problem) return transport_fault(kind::not_sent, *setup_problem);
        if (closed) return transport_fault(kind::not_sent, "the HTTP transport to " + where() + " is closed");
        return std::nullopt;
    }

    legacy_session session_snapshot() const {
        std::lock_guard lock(mutex);
        return session;
    }

    // ---- connections

    void release(exchange& ex) { pool.release(ex); }

    asio::awaitable<transport_result<exchange>> async_send(outgoing out, time_point deadline) {
        co_return co_await pool.async_send(std::move(out), deadline);
    }

    asio::awaitable<void> discard_body(exchange& ex, time_point deadline) {
        co_await pool.async_discard_body(ex, deadline);
    }

    // A stream whose response already arrived: let it end in the background, then pool it.
    static asio::awaitable<void> drain(std::shared_ptr<state> self, exchange ex) {
        auto deadline = clock_type::now() + self->opts.drain_deadline;
        std::array<char, 4096> buf;
        while (!ex.parser->is_done()) {
            auto [ec, n] = co_await read_body_some(ex, buf.data(), buf.size(), deadline);
            if (ec) {
                ex.conn->close();
                co_return;
            }
        }
        self->release(ex);
    }

    void finish_stream(exchange& ex) {
        if (!ex.conn) return;
        if (ex.parser->is_done()) return release(ex);
        auto task = drain(shared_from_this(), std::move(ex));
        mcp::spawn_logged(strand, std::move(task), "http transport: drain a response");
    }

    // ---- protocol

    // Headers of a POST carrying a message that is not a request, in the era in force.
    http_headers message_headers(std::string_view method_name) const {
        std::lock_guard lock(mutex);
        if (chosen_era == era::modern) {
            http_headers h{{header::accept, header::accept_both}, {header::content_type, "application/json"}};
            if (!version.empty()) h.add(header::protocol_version, version);
            if (!method_name.empty()) h.add(header::method, method_name);
            return h;
        }
        return legacy_post_headers(session);
    }

    // Session bookkeeping after a 404 to a request that carried `sent_id`.
    void expire_session(std::string const& sent_id) {
        std::lock_guard lock(mutex);
        if (session.session_id == sent_id) {
            session.session_id.reset();
            session.protocol_version.clear();
        }
    }

    // The status line and body of a failed exchange as the caller sees it: a JSON-RPC error body is
    // the answer; anything else is an HTTP status. Redirects land here too and are not followed: the
    // new location never passed the egress check.
    asio::awaitable<boost::system::result<message, transport_error>> error_status(exchange& ex, time_point deadline) {
        unsigned status = ex.status();
        std::string reason(ex.parser->get().reason());
        auto kind_of_body = classify_content_type(ex.content_type());
        if (kind_of_body == body_kind::json) {
            auto body = co_await read_body(ex, max_error_body_bytes, deadline);
            if (!body.ec && !body.too_large) {
                release(ex);
                auto m = parse_message(body.text);
                if (m && std::holds_alternative<error_response>(*m)) co_return std::move(*m);
            } else {
                ex.conn->close();
            }
        } else if (kind_of_body == body_kind::event_stream) {
            ex.conn->close();
        } else {
            co_await discard_body(ex, deadline);
        }
        co_return transport_fault(kind::http_status, "HTTP " + std::to_string(status) + (reason.empty() ? "" : " " + reason) +
                                              " from " + where(), status);
    }

    // POSTs a message that expects no answer (notification, or a reply to a server request).
    asio::awaitable<transport_result<void>> post_message(message m, std::string_view method_name, time_point deadline) {
        outgoing out{http::verb::post, {}, serialize(m), message_headers(method_name)};
        auto sent_session = out.headers.get(header::session_id);
        std::string sent_id = sent_session ? std::string(*sent_session) : std::string();
        auto ex = co_await async_send(std::move(out), deadline);
        if (!ex) co_return ex.error();
        unsigned status = ex->status();
        if (status == 404 && !sent_id.empty()) {
            co_await discard_body(*ex, deadline);
            expire_session(sent_id);
            co_return transport_fault(kind::session_expired, "the server no longer knows our session (HTTP 404)", 404);
        }
        if (status >= 200 && status < 300) {
            co_await discard_body(*ex, deadline);
            co_return transport_result<void>{};
        }
        auto r = co_await error_status(*ex, deadline);
        if (r) {
            auto const& err = std::get<error_response>(*r).error;
            co_return transport_fault(kind::http_status, "HTTP " + std::to_string(status) + " from " + where() + ": " + err.message,
                           status);
        }
        co_return r.error();
    }

    // Legacy deadline: say so to the server, on its own connection, and do not wait long.
    asio::awaitable<void> send_cancelled(request_id const& id) {
        json::object params{{"requestId", to_json(id)}, {"reason", "airlock: the request's deadline passed"}};
        notification n{std::string(method::cancelled), std::move(params)};
        auto deadline = clock_type::now() + opts.message_deadline;
        auto r = co_await post_message(std::move(n), method::cancelled, deadline);
        if (!r) spdlog::debug("mcp http {}: notifications/cancelled was not delivered: {}", name(), r.error().detail);
    }

    asio::awaitable<transport_error> deadline_passed(era e, request const& req) {
        // Modern: the stream is already closed (the read that timed out closed the connection),
        // which is the cancellation. Legacy: closing means nothing to the server; tell it.
        if (e == era::legacy && req.method != method::initialize) co_await send_cancelled(req.id);
        co_return transport_fault(kind::deadline, req.method + " got no response from " + where() + " within the deadline");
    }

    void deliver(notification const& n, request_options const& o) {
        if (o.on_notification) return o.on_notification(n);
        std::function<void(notification const&)> h;
        {
            std::lock_guard lock(mutex);
            h = notification_handler;
        }
        if (h) h(n);
    }

    // A request the server sent on a legacy stream: answer it with a POST of its own. Returns false
    // when the deadline passed meanwhile.
    asio::awaitable<bool> answer_server_request(request sreq, time_point deadline, server_request_handler const& own = {}) {
        server_request_handler h = own;
        if (!h) {
            std::lock_guard lock(mutex);
            h = request_handler;
        }
        boost::system::result<json::object, error_object> answer = json::object{};
        if (h) {
            asio::steady_timer timer(strand, deadline);
            auto task = h(sreq);
            auto raced = co_await (std::move(task) || timer.async_wait(as_tuple(use_awaitable)));
            if (raced.index() == 1) co_return false;
            answer = std::move(std::get<0>(raced));
        } else if (sreq.method != method::ping) {
            answer = error_object{rpc_code::method_not_found, "Method not found: " + sreq.method, std::nullopt};
        }
        message reply = answer ? message(response{sreq.id, std::move(*answer)})
                               : message(error_response{sreq.id, std::move(answer.error())});
        auto r = co_await post_message(std::move(reply), std::string_view(), deadline);
        if (!r)
            if (auto more = repeated_log.admit("reply not delivered"))
                spdlog::warn("mcp http {}: the reply to the server's {} request was not delivered: {}{}", name(), sreq.method,
                             r.error().detail, *more);
        co_return true;
    }

    // GET with Last-Event-ID: a legacy server may replay what a dropped stream had not delivered.
    asio::awaitable<boost::system::result<exchange, transport_error>> resume(std::string const& last_id, time_point deadline) {
        auto s = session_snapshot();
        auto h = legacy_delete_headers(s);
        h.add(header::accept, "text/event-stream");
        h.add(header::last_event_id, last_id);
        outgoing out{http::verb::get, {}, {}, std::move(h)};
        auto ex = co_await async_send(std::move(out), deadline);
        if (!ex) co_return ex.error();
        if (ex->status() != 200 || classify_content_type(ex->content_type()) != body_kind::event_stream) {
            auto status = ex->status();
            ex->conn->close();
            co_return transport_fault(kind::no_reply, "resuming the event stream failed (HTTP " + std::to_string(status) + ")", status);
        }
        co_return std::move(*ex);
    }

    // One event of the response stream of `req`: a notification is delivered, a legacy server's
    // request answered, our response ends the stream. Empty while the stream goes on.
    asio::awaitable<std::optional<transport_result<message>>> on_stream_event(exchange& ex, sse_event& ev,
                                                                              request const& req,
                                                                              request_options const& o, era e,
                                                                              time_point deadline) {
        if (blank(ev.data)) co_return std::nullopt;  // priming events carry only an id
        auto m = parse_message(ev.data);
        if (!m) {
            ex.conn->close();
            co_return transport_fault(kind::protocol, "an event from " + where() + " is not a JSON-RPC message: " +
                                               m.error().reply.error.message);
        }
        if (auto* n = std::get_if<notification>(&*m)) {
            deliver(*n, o);
            co_return std::nullopt;
        }
        if (auto* sreq = std::get_if<request>(&*m)) {
            if (e == era::modern) {
                if (auto more = repeated_log.admit("request on a modern stream"))
                    spdlog::warn("mcp http {}: ignored a {} request on a modern response stream{}", name(),
                                 sreq->method, *more);
                co_return std::nullopt;
            }
            request asked = std::move(*sreq);
            // It came on this request's stream: it belongs to this request's caller.
            bool in_time = co_await answer_server_request(std::move(asked), deadline, o.on_server_request);
            if (in_time) co_return std::nullopt;
            ex.conn->close();
            co_return co_await deadline_passed(e, req);
        }
        auto id = id_of(*m);
        // An error without an id on our own stream can only be about our request.
        if (id && *id != req.id) {
            spdlog::debug("mcp http {}: ignored a response to {} on the stream of {}", name(), to_string(*id),
                          to_string(req.id));
            co_return std::nullopt;
        }
        finish_stream(ex);
        co_return std::move(*m);
    }

    // Reads an SSE response stream until the response to `req` arrives.
    asio::awaitable<transport_result<message>> read_stream(exchange ex, request const& req, request_options const& o,
                                                           era e, time_point deadline) {
        std::string last_id;
        std::optional<std::uint64_t> retry_ms;
        std::size_t resumptions = 0;
        std::array<char, 16 * 1024> buf;
        for (;;) {
            sse_parser parser(opts.max_event_bytes);
            std::vector<sse_event> events;
            beast::error_code ec;
            while (!ex.parser->is_done()) {
                auto [rec, n] = co_await read_body_some(ex, buf.data(), buf.size(), deadline);
                events.clear();
                if (auto fed = parser.feed(std::string_view(buf.data(), n), events); !fed) {
                    ex.conn->close();
                    co_return transport_fault(kind::protocol, "the event stream from " + where() + ": " + fed.error().message);
                }
                for (auto& ev : events) {
                    if (auto done = co_await on_stream_event(ex, ev, req, o, e, deadline)) co_return std::move(*done);
                }
                if (rec) {
                    ec = rec;
                    break;
                }
            }
            if (!parser.last_event_id().empty()) last_id = parser.last_event_id();
            if (parser.reconnection_time_ms()) retry_ms = parser.reconnection_time_ms();
            if (ec == beast::error::timeout) {
                ex.conn->close();
                co_return co_await deadline_passed(e, req);
            }
            if (ec) {
                ex.conn->close();
            } else {
                release(ex);
            }
            // The stream ended without our response. A legacy server that numbered its events may
            // still hold it: the spec's resumption (modern streams are not resumable).
            if (e != era::legacy || last_id.empty() || resumptions >= opts.max_resumptions)
                co_return transport_fault(kind::no_reply, "the event stream from " + where() + " ended before the response to " +
                                                   req.method + (ec ? ": " + describe(ec) : std::string()));
            ++resumptions;
            auto delay = retry_ms ? std::chrono::milliseconds(std::min<std::uint64_t>(*retry_ms, max_resume_delay.count()))
                                  : default_resume_delay;
            if (clock_type::now() + delay >= deadline) {
                // Said as what happened (the stream broke), not as a deadline that has not passed yet.
                if (req.method != method::initialize) co_await send_cancelled(req.id);
                co_return transport_fault(kind::no_reply, "the event stream from " + where() + " ended before the response to " +
                                                   req.method + (ec ? ": " + describe(ec) : std::string()) +
                                                   ", and the server's retry delay leaves no time to resume it");
            }
            asio::steady_timer wait(strand, delay);
            co_await wait.async_wait(as_tuple(use_awaitable));
            auto resumed = co_await resume(last_id, deadline);
            if (!resumed) {
                if (resumed.error().what == kind::deadline) co_return co_await deadline_passed(e, req);
                auto err = resumed.error();
                err.what = kind::no_reply;  // the request itself went out long ago
                co_return err;
            }
            spdlog::debug("mcp http {}: resumed the event stream of {} ({} of {})", name(), req.method, resumptions,
                          opts.max_resumptions);
            ex = std::move(*resumed);
        }
    }

    // A response with an application/json body: exactly one JSON-RPC response to `req`.
    asio::awaitable<transport_result<message>> read_json_reply(exchange& ex, request const& req, era e,
                                                               time_point deadline) {
        auto body = co_await read_body(ex, opts.max_body_bytes, deadline);
        if (body.too_large) {
            ex.conn->close();
            co_return transport_fault(kind::protocol, "the response from " + where() + " is larger than " +
                                               std::to_string(opts.max_body_bytes) + " bytes");
        }
        if (body.ec) {
            ex.conn->close();
            if (body.ec == beast::error::timeout) co_return co_await deadline_passed(e, req);
            co_return transport_fault(kind::no_reply, "the response from " + where() + " broke off: " + describe(body.ec));
        }
        release(ex);
        auto m = parse_message(body.text);
        if (!m) co_return transport_fault(kind::protocol, "the response is not JSON-RPC: " + m.error().reply.error.message);
        if (!std::holds_alternative<response>(*m) && !std::holds_alternative<error_response>(*m))
            co_return transport_fault(kind::protocol, "the response body to " + req.method + " is not a JSON-RPC response");
        if (auto id = id_of(*m); id && *id != req.id)
            co_return transport_fault(kind::protocol, "the response carries id " + to_string(*id) + ", not " + to_string(req.id));
        co_return std::move(*m);
    }

    asio::awaitable<transport_result<message>> request_op(request req, request_options o) {
        if (auto u = unusable()) co_return *u;
        auto deadline = clock_type::now() + o.deadline;
        bool initialize = req.method == method::initialize;

        era e = era::legacy;
        legacy_session s;
        {
            std::lock_guard lock(mutex);
            if (!initialize) {
                s = session;
                if (chosen_era) e = *chosen_era;
                // Before the era is known only era detection talks: its probe carries modern _meta.
                else if (parse_request_meta(req.params)) e = era::modern;
            }
        }
        http_headers headers;
        if (e == era::modern) {
            auto h = modern_post_headers(req, o.called);
            if (!h) co_return transport_fault(kind::not_sent, h.error().message);
            headers = std::move(*h);
        } else {
            // initialize starts a new session: no id and no version until it is answered.
            headers = legacy_post_headers(s);
        }
        std::string sent_id = (e == era::legacy && s.session_id) ? *s.session_id : std::string();

        outgoing out{http::verb::post, {}, serialize(req), std::move(headers)};
        auto ex = co_await async_send(std::move(out), deadline);
        if (!ex) {
            if (ex.error().what == kind::deadline) co_return co_await deadline_passed(e, req);
            co_return ex.error();
        }
        unsigned status = ex->status();

        if (status == 404 && !sent_id.empty()) {
            co_await discard_body(*ex, deadline);
            expire_session(sent_id);
            co_return transport_fault(kind::session_expired, "the server no longer knows our session (HTTP 404); initialize again", 404);
        }
        if (status < 200 || status >= 300) co_return co_await error_status(*ex, deadline);
        if (status == 202 || status == 204) {
            co_await discard_body(*ex, deadline);
            co_return transport_fault(kind::protocol, "the server accepted " + req.method + " (HTTP " + std::to_string(status) +
                                               ") without answering it", status);
        }

        if (initialize) {
            auto id = session_id_from_response(ex->headers());
            if (!id) {
                ex->conn->close();
                co_return transport_fault(kind::protocol, id.error().message);
            }
            std::lock_guard lock(mutex);
            session.session_id = std::move(*id);
        }

        switch (classify_content_type(ex->content_type())) {
            case body_kind::json: co_return co_await read_json_reply(*ex, req, e, deadline);
            case body_kind::event_stream: co_return co_await read_stream(std::move(*ex), req, o, e, deadline);
            case body_kind::other: break;
        }
        std::string ct(ex->content_type());
        ex->conn->close();
        co_return transport_fault(kind::protocol, "the response to " + req.method + " has Content-Type '" + ct +
                                           "', neither application/json nor text/event-stream");
    }

    asio::awaitable<transport_result<void>> notify_op(notification n) {
        if (auto u = unusable()) co_return *u;
        auto method_name = n.method;
        auto deadline = clock_type::now() + opts.message_deadline;
        co_return co_await post_message(std::move(n), method_name, deadline);
    }

    asio::awaitable<void> open_op() {
        closed = false;
        pool.reopen();
        co_return;
    }

    asio::awaitable<void> close_op() {
        if (closed || setup_problem) co_return;
        auto s = session_snapshot();
        if (s.session_id) {
            auto deadline = clock_type::now() + opts.message_deadline;
            outgoing out{http::verb::delete_, {}, {}, legacy_delete_headers(s)};
            auto ex = co_await async_send(std::move(out), deadline);
            if (!ex) {
                spdlog::debug("mcp http {}: DELETE of the session failed: {}", name(), ex.error().detail);
            } else {
                auto status = ex->status();
                // 405: the server does not let clients end sessions; that is its right.
                if (status >= 300 && status != 405)
                    spdlog::debug("mcp http {}: DELETE of the session answered HTTP {}", name(), status);
                co_await discard_body(*ex, deadline);
            }
            std::lock_guard lock(mutex);
            session.session_id.reset();
        }
        closed = true;
        pool.close();
    }
};

// ---------------------------------------------------------------- http_transport

http_transport::http_transport(asio::any_io_executor exec, http_transport_options opts)
    : state_(std::make_shared<state>(std::move(exec), std::move(opts))) {}

http_transport::~http_transport() = default;

asio::awaitable<transport_result<void>> http_transport::async_open() {
    auto s = state_;
    if (s->setup_problem) co_return transport_fault(kind::not_sent, *s->setup_problem);
    auto task = s->open_op();
    co_await co_await_on(s->strand, std::move(task));
    co_return transport_result<void>{};
}

asio::awaitable<transport_result<message>> http_transport::async_request(request req, request_options opts) {
    auto s = state_;
    auto task = s->request_op(std::move(req), std::move(opts));
    co_return co_await co_await_on(s->strand, std::move(task));
}

asio::awaitable<transport_result<void>> http_transport::async_notify(notification n) {
    auto s = state_;
    auto task = s->notify_op(std::move(n));
    co_return co_await co_await_on(s->strand, std::move(task));
}

asio::awaitable<void> http_transport::async_close() {
    auto s = state_;
    auto task = s->close_op();
    co_await co_await_on(s->strand, std::move(task));
}

void http_transport::set_protocol_version(std::string v) {
    std::lock_guard lock(state_->mutex);
    auto e = era_of(v);
    if (!e) spdlog::warn("mcp http {}: protocol version '{}' is unknown; treating it as legacy", state_->name(), v);
    state_->chosen_era = e.value_or(era::legacy);
    if (state_->chosen_era == era::legacy) state_->session.protocol_version = v;
    state_->version = std::move(v);
}

void http_transport::set_notification_handler(std::function<void(notification const&)> handler) {
    std::lock_guard lock(state_->mutex);
    state_->notification_handler = std::move(handler);
}

void http_transport::set_server_request_handler(server_request_handler handler) {
    std::lock_guard lock(state_->mutex);
    state_->request_handler = std::move(handler);
}

core::destination http_transport::destination() const {
    if (!state_->pool.has_endpoint()) return core::remote_destination{};
    auto const& e = state_->ep();
    return core::remote_destination{e.scheme, e.host, e.port};
}

std::optional<std::string> http_transport::session_id() const {
    std::lock_guard lock(state_->mutex);
    return state_->session.session_id;
}

std::size_t http_transport::idle_connections() const { return state_->pool.idle_connections(); }

}  // namespace airlock::mcp
