#include "service/mcp/stdio_endpoint.hpp"

#include "mcp/protocol/era.hpp"
#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/line_framer.hpp"
#include "mcp/protocol/log_throttle.hpp"
#include "mcp/protocol/messages.hpp"
#include "mcp/client/on_strand.hpp"
#include "mcp/server/mrtr_rounds.hpp"
#include "mcp/server/rules.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
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
using answer_channel = mcp::mrtr_rounds::answer_channel;

// One client request being served.
struct stdio_request {
    mcp::request_context ctx;
    asio::cancellation_signal cancel;
    std::string method;
    std::string key;  // its entry in in_flight: the latest attempt's id text
    bool cancelled = false;
    bool cut_off = false;  // cancelled because airlock is stopping: answered with an error saying so
    std::vector<std::int64_t> asks;  // questions it has put to the client and is waiting on
    // Modern: a capability the request turned out to need that the client did not declare; the
    // request then ends with -32021 whatever the backend makes of the refusal.
    std::optional<std::string> missing_capability;
    // Modern requests that may end in an InputRequiredResult: the request's params (the
    // requestState is bound to them), answers sent ahead, and the MRTR state once the backend asks.
    mcp::request_id id;
    std::optional<json::object> mrtr_params;
    std::optional<json::object> mrtr_prefill;
    std::unique_ptr<mcp::mrtr_rounds::input_state> input;
    bool parked() const { return input && input->parked; }
};

// Everything below is touched only on `exec` (a strand), except `outbox`, which backend
// listeners may feed from any thread.
struct stdio_state : std::enable_shared_from_this<stdio_state> {
    stdio_state(std::shared_ptr<mcp::server_backend> b, stdio_endpoint_options o, asio::any_io_executor ex)
        : backend(std::move(b)),
          options(std::move(o)),
          exec(ex),
          outbox(ex, 256),
          sealer(mcp::mrtr_rounds::fresh_sealer(options.random)),
          idle(ex) {}

    std::shared_ptr<mcp::server_backend> backend;
    stdio_endpoint_options options;
    asio::any_io_executor exec;
    line_channel outbox;  // serialized messages for the one writer

    // The legacy session, once initialize has been answered.
    bool initialized = false;
    std::string session_id;
    std::string version;
    json::object client_capabilities;
    std::optional<std::uint64_t> legacy_listener;

    std::map<std::string, std::shared_ptr<stdio_request>> in_flight;  // by request id text
    std::map<std::int64_t, std::shared_ptr<answer_channel>> asks;
    std::int64_t next_ask = 1;
    std::map<std::string, std::uint64_t> subscriptions;  // listen request id text → listener
    mcp::mrtr::state_sealer sealer;  // a fresh key per process: a requestState is good only here
    std::map<std::string, std::shared_ptr<stdio_request>> pending_inputs;  // parked MRTR requests by pending id
    std::size_t running = 0;
    asio::steady_timer idle;  // cancelled when the last running request finishes
    bool closing = false;
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

    void fail_asks(stdio_request& rq) {
        for (auto id : rq.asks)
            if (auto it = asks.find(id); it != asks.end()) {
                it->second->try_send(asio::error::operation_aborted, nullptr);
                asks.erase(it);
            }
        rq.asks.clear();
        if (rq.input) {
            for (auto& [key, q] : rq.input->open) q.answer->try_send(asio::error::operation_aborted, nullptr);
            rq.input->open.clear();
        }
    }

    void cancel(stdio_request& rq) {
        if (rq.cancelled) return;
        rq.cancelled = true;
        fail_asks(rq);
        rq.cancel.emit(asio::cancellation_type::terminal);
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

    static asio::awaitable<void> async_notify(std::weak_ptr<stdio_state> w, std::weak_ptr<stdio_request> wr,
                                              mcp::notification n) {
        auto self = w.lock();
        auto rq = wr.lock();
        // A parked request has no caller until its retry: what it says meanwhile is dropped.
        if (!self || !rq || rq->cancelled || rq->parked()) co_return;
        mcp::message m = std::move(n);
        co_await self->send_line(m);
    }

    static asio::awaitable<mcp::handler_result> async_ask(std::weak_ptr<stdio_state> w, std::weak_ptr<stdio_request> wr,
                                                          std::string method, json::object params) {
        auto refuse = [](std::string why) {
            return mcp::handler_result(mcp::error_object{mcp::rpc_code::internal_error, std::move(why), std::nullopt});
        };
        auto self = w.lock();
        auto rq = wr.lock();
        if (!self || !rq || rq->cancelled || self->closing) co_return refuse("the request has ended");
        if (rq->ctx.client_era == mcp::era::modern) {
            // A 2026-07-28 server must not rely on a capability the client did not declare, and
            // says so with -32021; a declared one is reached only through input requests (MRTR).
            if (auto cap = mcp::rules::client_capability_for(method); cap && !rq->ctx.client_capabilities.contains(*cap)) {
                rq->missing_capability = std::string(*cap);
                co_return mcp::handler_result(mcp::rules::missing_client_capability(*cap));
            }
            if (auto why = mcp::mrtr_rounds::cannot_ask(method, rq->method)) co_return refuse(std::move(*why));
            co_return co_await async_ask_modern(std::move(self), std::move(rq), std::move(method), std::move(params));
        }
        if (auto cap = mcp::rules::client_capability_for(method); cap && !rq->ctx.client_capabilities.contains(*cap))
            co_return mcp::handler_result(mcp::error_object{
                mcp::rpc_code::method_not_found, "the client did not declare the '" + std::string(*cap) + "' capability",
                std::nullopt});
        auto answer = std::make_shared<answer_channel>(self->exec, 1);
        auto id = self->next_ask++;
        self->asks[id] = answer;
        rq->asks.push_back(id);
        mcp::message question = mcp::request{id, std::move(method), std::move(params)};
        co_await self->send_line(question);
        auto [ec, result] = co_await answer->async_receive(as_tuple(use_awaitable));
        self->asks.erase(id);
        std::erase(rq->asks, id);
        if (ec || !result) co_return refuse("the client did not answer: the request was cancelled or the client left");
        co_return std::move(*result);
    }

    mcp::mrtr_rounds::limits input_limits() const {
        return {options.input_request_ttl, options.max_pending_inputs, options.max_questions};
    }

    // A question during a modern request becomes an input request of the request's next
    // InputRequiredResult; the answer comes with the retry (or came ahead, in inputResponses).
    static asio::awaitable<mcp::handler_result> async_ask_modern(std::shared_ptr<stdio_state> self,
                                                                 std::shared_ptr<stdio_request> rq, std::string method,
                                                                 json::object params) {
        if (!rq->input) {
            rq->input = std::make_unique<mcp::mrtr_rounds::input_state>();
            rq->input->reply_id = rq->id;
            rq->input->prefill = std::move(rq->mrtr_prefill);
        }
        auto answer = std::make_shared<answer_channel>(self->exec, 1);
        auto f = mcp::mrtr_rounds::file_question(*rq->input, method, std::move(params), answer, self->input_limits());
        if (f.refused) co_return mcp::handler_result(mcp::error_object{mcp::rpc_code::internal_error, *f.refused, std::nullopt});
        if (f.ahead) co_return mcp::handler_result(std::move(*f.ahead));
        spdlog::debug("stdio: {} {} asks the client {} as input request '{}'", rq->method, rq->key, method, f.key);
        if (f.schedule_round) self->schedule_round(rq);
        auto [ec, result] = co_await answer->async_receive(as_tuple(use_awaitable));
        mcp::mrtr_rounds::forget_question(*rq->input, f.key, answer);
        if (ec || !result)
            co_return mcp::handler_result(mcp::error_object{
                mcp::rpc_code::internal_error, "the client did not answer: the request was cancelled or its requestState lapsed",
                std::nullopt});
        co_return std::move(*result);
    }

    void schedule_round(std::shared_ptr<stdio_request> const& rq) {
        auto task = end_round(shared_from_this(), rq);
        asio::co_spawn(exec, std::move(task), asio::detached);
    }

    // Answers the request with an InputRequiredResult carrying what it has asked, unless it
    // finished or ended meanwhile; it is parked until the retry.
    static asio::awaitable<void> end_round(std::shared_ptr<stdio_state> self, std::shared_ptr<stdio_request> rq) {
        // Questions an upstream asks together (concurrent requests) belong in one round.
        asio::steady_timer gather(self->exec, self->options.input_gather);
        co_await gather.async_wait(as_tuple(use_awaitable));
        auto& in = *rq->input;
        in.round_due = false;
        if (in.final_sent || in.open.empty() || rq->cancelled || self->closing) co_return;
        auto result = mcp::mrtr_rounds::issue_round(in, self->sealer, rq->ctx.principal, rq->method,
                                               rq->mrtr_params ? *rq->mrtr_params : json::object{},
                                               self->pending_inputs.size(), self->input_limits(), self->options.random);
        if (!result) {
            if (auto more = self->repeated_log.admit("inputs"))
                spdlog::warn("stdio: {} requests already wait for client input; {} {} refused{}",
                             self->options.max_pending_inputs, rq->method, rq->key, *more);
            mcp::message refused = mcp::make_error_response(in.reply_id, mcp::rpc_code::internal_error,
                                                            "too many requests are waiting for client input; retry later");
            self->cancel(*rq);
            co_await self->send_line(refused);
            co_return;
        }
        rq->mrtr_params.reset();
        self->pending_inputs[in.pending_id] = rq;
        // The attempt is answered: its id is free again, and only the retry's id names the request.
        if (auto it = self->in_flight.find(rq->key); it != self->in_flight.end() && it->second == rq) self->in_flight.erase(it);
        in.expiry = std::make_shared<asio::steady_timer>(self->exec, self->options.input_request_ttl);
        auto expire = async_expire(self, rq, in.expiry, in.round);
        asio::co_spawn(self->exec, std::move(expire), asio::detached);
        spdlog::info("stdio: {} {} of '{}' waits for {} answer(s) from the client (round {})", rq->method, rq->key,
                     rq->ctx.principal, in.open.size(), in.round);
        auto reply = reply_of(mcp::era::modern, rq->method, in.reply_id, std::move(*result));
        co_await self->send_line(reply);
    }

    // A parked request whose requestState lapsed unanswered is cancelled (so is its upstream call).
    static asio::awaitable<void> async_expire(std::shared_ptr<stdio_state> self, std::shared_ptr<stdio_request> rq,
                                              std::shared_ptr<asio::steady_timer> timer, std::uint64_t round) {
        auto [ec] = co_await timer->async_wait(as_tuple(use_awaitable));
        if (ec || !mcp::mrtr_rounds::lapse(*rq->input, round)) co_return;
        self->pending_inputs.erase(rq->input->pending_id);
        spdlog::info("stdio: {} {} of '{}': no retry came with the answers in time; cancelled", rq->method, rq->key,
                     rq->ctx.principal);
        self->cancel(*rq);
    }

    // A retry carrying a requestState: the answers go to the waiting questions, and the parked
    // request goes on under the retry's id.
    void resume(mcp::request const& r, std::optional<json::object> const& responses) {
        auto refuse = [&](std::string const& why) {
            post_line(mcp::make_error_response(r.id, mcp::rpc_code::invalid_params, "Invalid params: " + why));
        };
        auto st = mcp::mrtr_rounds::open_retry(sealer, r, options.principal);
        if (!st) return refuse(st.error().message);
        auto it = pending_inputs.find(st->pending);
        if (it == pending_inputs.end()) return refuse(std::string(mcp::mrtr_rounds::no_longer_pending));
        auto rq = it->second;
        auto step = mcp::mrtr_rounds::resume(*rq->input, st->round, responses, r.id);
        if (!step) return refuse(step.error().message);
        if (step->done) {
            pending_inputs.erase(it);
        } else {
            rq->key = mcp::to_string(r.id);
            in_flight[rq->key] = rq;
        }
        if (step->schedule_round) schedule_round(rq);
        mcp::mrtr_rounds::hand_over(*step);
        if (!step->done) return;
        // It finished while parked: this retry gets its result.
        post_line(reply_of(mcp::era::modern, rq->method, r.id, std::move(*step->done)));
    }

    static asio::awaitable<void> run_request(std::shared_ptr<stdio_state> self, std::shared_ptr<stdio_request> rq,
                                             mcp::request r) {
        auto id = r.id;
        mcp::handler_result result = mcp::error_object{mcp::rpc_code::internal_error, "Internal error", std::nullopt};
        try {
            result = co_await self->backend->async_handle(std::move(r), rq->ctx);
        } catch (std::exception const& x) {
            spdlog::error("stdio: {} failed with an internal error: {}", rq->method, x.what());
        }
        if (rq->ctx.client_era == mcp::era::modern) {
            if (rq->missing_capability) {
                result = mcp::rules::missing_client_capability(*rq->missing_capability);
            } else if (!result) {
                auto err = result.error();
                mcp::rules::modernize_error(rq->method, err);
                result = std::move(err);
            }
        }
        if (auto it = self->in_flight.find(rq->key); it != self->in_flight.end() && it->second == rq) self->in_flight.erase(it);
        bool parked = false;
        if (rq->input) {
            // After a round of questions the reply carries the latest attempt's id; while parked
            // the result waits for the retry.
            auto& in = *rq->input;
            in.final_sent = true;
            parked = in.parked;
            if (parked) {
                in.parked_final = std::move(result);
            } else {
                id = in.reply_id;
                if (!in.pending_id.empty()) self->pending_inputs.erase(in.pending_id);
            }
        }
        // A cancelled request gets no response (the cancellation rules of both eras), unless
        // airlock cut it off: then its client, which may still be reading, learns why. A request
        // the backend finished all the same (its call landed, and the journal says done) gets its
        // answer: "cut off" is said only of what the cancellation did end, which returns an error.
        if (!parked && rq->cut_off && !result) result = mcp::rules::cut_off_by_stop();
        if (!parked && (rq->cut_off || !rq->cancelled)) {
            auto reply = reply_of(rq->ctx.client_era, rq->method, id, std::move(result));
            co_await self->send_line(reply);
        }
        if (--self->running == 0) self->idle.cancel();
    }

    // The response that ends a request, as its era writes it.
    static mcp::message reply_of(mcp::era e, std::string const& method, mcp::request_id const& id, mcp::handler_result result) {
        if (!result) return mcp::error_response{id, std::move(result.error())};
        auto obj = std::move(*result);
        if (e == mcp::era::modern) mcp::rules::decorate_modern_result(method, obj);
        return mcp::response{id, std::move(obj)};
    }

    void start_request(mcp::request r, mcp::era e, std::string version, json::object caps,
                       std::optional<json::object> prefill = std::nullopt) {
        auto rq = std::make_shared<stdio_request>();
        rq->method = r.method;
        rq->key = mcp::to_string(r.id);
        if (e == mcp::era::modern && mcp::mrtr::allows_input_required(r.method)) {
            rq->id = r.id;
            rq->mrtr_params = r.params ? *r.params : json::object{};
            rq->mrtr_prefill = std::move(prefill);
        }
        auto& ctx = rq->ctx;
        ctx.principal = options.principal;
        ctx.session_id = e == mcp::era::legacy ? session_id : std::string();
        ctx.client_era = e;
        ctx.protocol_version = std::move(version);
        ctx.client_capabilities = std::move(caps);
        ctx.progress = mcp::rules::progress_token_of(r.params);
        ctx.request_id_text = mcp::to_string(r.id);
        ctx.cancelled = rq->cancel.slot();
        std::weak_ptr<stdio_state> ws = shared_from_this();
        std::weak_ptr<stdio_request> wr = rq;
        ctx.notify = [ws, wr](mcp::notification n) { return async_notify(ws, wr, std::move(n)); };
        ctx.ask_client = [ws, wr](std::string m, json::object p) { return async_ask(ws, wr, std::move(m), std::move(p)); };
        in_flight[rq->key] = rq;
        ++running;
        auto task = run_request(shared_from_this(), rq, std::move(r));
        asio::co_spawn(exec, std::move(task), asio::detached);
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
        mcp::request_context ctx;
        ctx.principal = self->options.principal;
        ctx.client_era = modern ? mcp::era::modern : mcp::era::legacy;
        ctx.session_id = modern ? std::string() : self->session_id;
        ctx.protocol_version = self->version;
        ctx.client_capabilities = self->client_capabilities;
        ctx.notify = [](mcp::notification) -> asio::awaitable<void> { co_return; };
        ctx.ask_client = [](std::string, json::object) -> asio::awaitable<mcp::handler_result> {
            co_return mcp::error_object{mcp::rpc_code::internal_error, "a notification cannot ask the client anything", std::nullopt};
        };
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
                cancel(*it->second);
            } else if (auto sub = subscriptions.find(key); sub != subscriptions.end()) {
                backend->remove_listener(sub->second);
                subscriptions.erase(sub);
            }
            return;
        }
        auto task = deliver_notification(shared_from_this(), std::move(n));
        asio::co_spawn(exec, std::move(task), asio::detached);
    }

    void on_answer(mcp::message const& m) {
        auto id = mcp::id_of(m);
        auto const* n = id ? std::get_if<std::int64_t>(&*id) : nullptr;
        auto it = n ? asks.find(*n) : asks.end();
        if (it == asks.end()) {
            spdlog::debug("stdio: an answer from the client matches no open question");
            return;
        }
        std::shared_ptr<mcp::handler_result> r;
        if (auto const* ok = std::get_if<mcp::response>(&m))
            r = std::make_shared<mcp::handler_result>(ok->result);
        else
            r = std::make_shared<mcp::handler_result>(std::get<mcp::error_response>(m).error);
        it->second->try_send(error_code{}, std::move(r));
        asks.erase(it);
    }

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
            asks.contains(std::get<std::int64_t>(*id))) {
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
        closing = true;
        // Nothing more can come from the client: questions to it cannot be answered, and parked
        // requests cannot be retried. Their expiry timers would otherwise keep the process up.
        for (auto& [key, rq] : pending_inputs) {
            if (rq->input->expiry) rq->input->expiry->cancel();
            cancel(*rq);
        }
        pending_inputs.clear();
        for (auto& [id, a] : asks) a->try_send(asio::error::operation_aborted, nullptr);
        asks.clear();
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
                cancel(*rq);
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
