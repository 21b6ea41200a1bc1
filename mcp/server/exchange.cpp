#include "mcp/server/exchange.hpp"

#include "mcp/client/spawn_logged.hpp"
#include "mcp/server/rules.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <exception>
#include <vector>

namespace airlock::mcp {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::as_tuple;
using asio::use_awaitable;
using error_code = boost::system::error_code;

namespace {

handler_result refuse(std::string why) { return handler_result(error_object{rpc_code::internal_error, std::move(why), std::nullopt}); }

}  // namespace

exchange::exchange(options o) : options_(std::move(o)), sealer_(mrtr_rounds::fresh_sealer(options_.random)) {}

void exchange::bind(std::shared_ptr<served_request> const& rq, request const& r, caller who) {
    rq->method = r.method;
    rq->key = to_string(r.id);
    if (who.client_era == era::modern && mrtr::allows_input_required(r.method)) {
        rq->id = r.id;
        rq->mrtr_params = r.params ? *r.params : json::object{};
        rq->mrtr_prefill = std::move(who.prefill);
    }
    auto& ctx = rq->ctx;
    ctx.principal = std::move(who.principal);
    ctx.authentication = std::move(who.authentication);
    ctx.session_id = std::move(who.session_id);
    ctx.client_era = who.client_era;
    ctx.protocol_version = std::move(who.version);
    ctx.client_capabilities = std::move(who.capabilities);
    ctx.progress = rules::progress_token_of(r.params);
    ctx.request_id_text = rq->key;
    ctx.cancelled = rq->cancel.slot();
    std::weak_ptr<served_request> weak = rq;
    auto self = shared_from_this();
    ctx.notify = [weak](notification n) { return async_notify(weak, std::move(n)); };
    ctx.ask_client = [self, weak](std::string m, json::object p) { return async_ask(self, weak, std::move(m), std::move(p)); };
}

asio::awaitable<std::optional<exchange::reply>> exchange::async_run(server_backend& backend, std::shared_ptr<served_request> rq,
                                                                    request r) {
    auto id = r.id;
    handler_result result = error_object{rpc_code::internal_error, "Internal error", std::nullopt};
    try {
        result = co_await backend.async_handle(std::move(r), rq->ctx);
    } catch (std::exception const& x) {
        spdlog::error("{}: {} failed with an internal error: {}", options_.log_name, rq->method, x.what());
        result = error_object{rpc_code::internal_error, "Internal error", std::nullopt};
    }
    if (rq->ctx.client_era == era::modern) {
        std::optional<std::string> missing;
        {
            std::lock_guard lock(mutex_);
            missing = rq->missing_capability;
        }
        if (missing) {
            result = rules::missing_client_capability(*missing);
        } else if (!result) {
            auto err = result.error();
            rules::modernize_error(rq->method, err);
            result = std::move(err);
        }
    }
    std::lock_guard lock(mutex_);
    if (rq->input) {
        // After a round of questions the reply carries the latest attempt's id; while parked there
        // is nobody to answer, and the result waits for the retry.
        auto& in = *rq->input;
        in.final_sent = true;
        if (in.parked) {
            in.parked_final = std::move(result);
            co_return std::nullopt;
        }
        id = in.reply_id;
        if (!in.pending_id.empty()) pending_.erase(in.pending_id);
    }
    co_return reply{std::move(id), std::move(result)};
}

// ---------------------------------------------------------------- cancellation and answers

void exchange::cancel(std::shared_ptr<served_request> const& rq) {
    rq->cancelled = true;
    fail_asks(rq, "the request was cancelled");
    asio::post(rq->exec, [rq] {
        if (rq->cancel_emitted) return;
        rq->cancel_emitted = true;
        rq->cancel.emit(asio::cancellation_type::terminal);
    });
}

void exchange::fail_asks(std::shared_ptr<served_request> const& rq, std::string_view why) {
    std::vector<std::shared_ptr<mrtr_rounds::answer_channel>> waiting;
    auto table = rq->asks.lock();
    {
        std::lock_guard lock(mutex_);
        if (table)
            for (auto it = table->asks.begin(); it != table->asks.end();) {
                if (it->second.asker.lock() == rq) {
                    waiting.push_back(it->second.answer);
                    it = table->asks.erase(it);
                } else {
                    ++it;
                }
            }
        if (rq->input) {
            for (auto& [k, q] : rq->input->open) waiting.push_back(q.answer);
            rq->input->open.clear();
        }
    }
    for (auto& a : waiting) a->try_send(asio::error::operation_aborted, nullptr);
    if (!waiting.empty()) spdlog::debug("{}: {} question(s) to the client failed: {}", options_.log_name, waiting.size(), why);
}

void exchange::fail_all(ask_table& t) {
    std::vector<std::shared_ptr<mrtr_rounds::answer_channel>> waiting;
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, a] : t.asks) waiting.push_back(a.answer);
        t.asks.clear();
    }
    for (auto& a : waiting) a->try_send(asio::error::operation_aborted, nullptr);
}

bool exchange::route_answer(ask_table& t, message const& m) {
    auto id = id_of(m);
    auto const* n = id ? std::get_if<std::int64_t>(&*id) : nullptr;
    std::shared_ptr<mrtr_rounds::answer_channel> answer;
    if (n) {
        std::lock_guard lock(mutex_);
        if (auto it = t.asks.find(*n); it != t.asks.end()) {
            answer = it->second.answer;
            t.asks.erase(it);
        }
    }
    if (!answer) {
        spdlog::debug("{}: an answer from the client matches no open question", options_.log_name);
        return false;
    }
    std::shared_ptr<handler_result> r;
    if (auto const* ok = std::get_if<response>(&m))
        r = std::make_shared<handler_result>(ok->result);
    else
        r = std::make_shared<handler_result>(std::get<error_response>(m).error);
    answer->try_send(error_code{}, std::move(r));
    return true;
}

bool exchange::asking(ask_table const& t, std::int64_t id) const {
    std::lock_guard lock(mutex_);
    return t.asks.contains(id);
}

// ---------------------------------------------------------------- the backend's hooks

asio::awaitable<void> exchange::async_notify(std::weak_ptr<served_request> w, notification n) {
    auto rq = w.lock();
    // A parked request has nobody to tell until its retry: what it says meanwhile is dropped.
    if (!rq || rq->gone || rq->cancelled || rq->parked) co_return;
    message m = std::move(n);
    co_await rq->async_send(std::move(m));
}

asio::awaitable<handler_result> exchange::async_ask(std::shared_ptr<exchange> self, std::weak_ptr<served_request> w,
                                                     std::string method, json::object params) {
    auto rq = w.lock();
    if (!rq) co_return refuse("the request has ended");
    if (auto why = rq->cannot_ask()) co_return refuse(std::move(*why));
    if (rq->ctx.client_era == era::modern) {
        // A 2026-07-28 server must not rely on a capability the client did not declare, and says
        // so with -32021; a declared one is reached only through input requests (MRTR).
        if (auto cap = rules::client_capability_for(method); cap && !rq->ctx.client_capabilities.contains(*cap)) {
            {
                std::lock_guard lock(self->mutex_);
                rq->missing_capability = std::string(*cap);
            }
            co_return handler_result(rules::missing_client_capability(*cap));
        }
        if (auto why = mrtr_rounds::cannot_ask(method, rq->method)) co_return refuse(std::move(*why));
        co_return co_await self->async_ask_modern(std::move(rq), std::move(method), std::move(params));
    }
    co_return co_await self->async_ask_legacy(std::move(rq), std::move(method), std::move(params));
}

asio::awaitable<handler_result> exchange::async_ask_legacy(std::shared_ptr<served_request> rq, std::string method,
                                                            json::object params) {
    auto table = rq->asks.lock();
    if (!table) co_return refuse("the session has ended");
    if (auto cap = rules::client_capability_for(method); cap && !rq->ctx.client_capabilities.contains(*cap))
        co_return handler_result(error_object{
            rpc_code::method_not_found, "the client did not declare the '" + std::string(*cap) + "' capability", std::nullopt});
    if (rq->gone || rq->cancelled) co_return refuse("the client can no longer be asked (its stream closed)");

    auto answer = std::make_shared<mrtr_rounds::answer_channel>(rq->exec, 1);
    std::int64_t id = 0;
    {
        std::lock_guard lock(mutex_);
        id = table->next++;
        table->asks[id] = ask_table::pending{answer, rq};
    }
    auto forget = [&] {
        std::lock_guard lock(mutex_);
        table->asks.erase(id);
    };
    // Named, not a temporary in the co_await's full-expression: GCC 12 mishandles those.
    message question = request{id, std::move(method), std::move(params)};
    bool sent = co_await rq->async_send(std::move(question));
    if (!sent) {
        forget();
        co_return refuse("the client can no longer be asked (its stream closed)");
    }
    auto [ec, result] = co_await answer->async_receive(as_tuple(use_awaitable));
    forget();
    if (ec || !result) co_return refuse(rq->unanswered());
    co_return std::move(*result);
}

// A question during a modern request becomes an input request of the request's next
// InputRequiredResult; the answer comes with the retry (or came ahead, in inputResponses).
asio::awaitable<handler_result> exchange::async_ask_modern(std::shared_ptr<served_request> rq, std::string method,
                                                            json::object params) {
    auto answer = std::make_shared<mrtr_rounds::answer_channel>(rq->exec, 1);
    mrtr_rounds::filed f;
    {
        std::lock_guard lock(mutex_);
        if (rq->gone || rq->cancelled) co_return refuse("the client can no longer be asked (the request ended)");
        if (!rq->input) {
            rq->input = std::make_unique<mrtr_rounds::input_state>();
            rq->input->reply_id = rq->id;
            rq->input->prefill = std::move(rq->mrtr_prefill);
        }
        f = mrtr_rounds::file_question(*rq->input, method, std::move(params), answer, options_.limits);
    }
    if (f.refused) co_return refuse(std::move(*f.refused));
    if (f.ahead) co_return handler_result(std::move(*f.ahead));
    spdlog::debug("{}: {} {} asks the client {} as input request '{}'", options_.log_name, rq->method, rq->key, method, f.key);
    if (f.schedule_round) co_await rq->async_round_due();
    auto [ec, result] = co_await answer->async_receive(as_tuple(use_awaitable));
    {
        std::lock_guard lock(mutex_);
        if (rq->input) mrtr_rounds::forget_question(*rq->input, f.key, answer);
    }
    if (ec || !result) co_return refuse("the client did not answer: the request was cancelled or its requestState lapsed");
    co_return std::move(*result);
}

// ---------------------------------------------------------------- rounds

asio::awaitable<exchange::round> exchange::async_end_round(std::shared_ptr<served_request> rq) {
    // Questions an upstream asks together (concurrent requests) belong in one round.
    asio::steady_timer gather(co_await asio::this_coro::executor, options_.gather);
    co_await gather.async_wait(as_tuple(use_awaitable));
    round out;
    {
        std::lock_guard lock(mutex_);
        auto& in = *rq->input;
        in.round_due = false;
        if (in.final_sent || in.open.empty() || rq->cancelled || rq->gone || closing_) co_return out;
        auto result = mrtr_rounds::issue_round(in, sealer_, rq->ctx.principal, rq->method,
                                               rq->mrtr_params ? *rq->mrtr_params : json::object{}, pending_.size(),
                                               options_.limits, options_.random);
        out.reply_id = in.reply_id;
        if (result) {
            out.what = round::outcome::issued;
            out.result = std::move(*result);
            rq->mrtr_params.reset();
            rq->parked = true;
            pending_[in.pending_id] = rq;
            in.expiry = std::make_shared<asio::steady_timer>(rq->exec, options_.limits.ttl);
            spawn_logged(rq->exec, async_expire(shared_from_this(), rq, in.expiry, in.round), "input request expiry");
            spdlog::info("{}: {} {} of '{}' waits for {} answer(s) from the client (round {})", options_.log_name, rq->method,
                         rq->key, rq->ctx.principal, in.open.size(), in.round);
        } else {
            out.what = round::outcome::refused;
        }
    }
    if (out.what == round::outcome::refused) cancel(rq);
    co_return out;
}

// A parked request whose requestState lapsed unanswered is cancelled (so is its upstream call).
asio::awaitable<void> exchange::async_expire(std::shared_ptr<exchange> self, std::shared_ptr<served_request> rq,
                                             std::shared_ptr<asio::steady_timer> timer, std::uint64_t round) {
    auto [ec] = co_await timer->async_wait(as_tuple(use_awaitable));
    if (ec) co_return;
    {
        std::lock_guard lock(self->mutex_);
        auto& in = *rq->input;
        if (!mrtr_rounds::lapse(in, round)) co_return;
        self->pending_.erase(in.pending_id);
    }
    spdlog::info("{}: {} {} of '{}': no retry came with the answers in time; cancelled", self->options_.log_name, rq->method,
                 rq->key, rq->ctx.principal);
    self->cancel(rq);
}

exchange::resumption exchange::resume(request const& r, std::string_view principal,
                                      std::optional<json::object> const& responses) {
    resumption out;
    auto st = mrtr_rounds::open_retry(sealer_, r, principal);
    if (!st) {
        out.refused = st.error().message;
        return out;
    }
    std::lock_guard lock(mutex_);
    auto it = pending_.find(st->pending);
    if (it == pending_.end()) {
        out.refused = std::string(mrtr_rounds::no_longer_pending);
        return out;
    }
    auto step = mrtr_rounds::resume(*it->second->input, st->round, responses, r.id);
    if (!step) {
        out.refused = step.error().message;
        return out;
    }
    out.rq = it->second;
    out.rq->parked = false;
    if (step->done) pending_.erase(it);
    out.step = std::move(*step);
    return out;
}

void exchange::end_parked() {
    std::vector<std::shared_ptr<served_request>> parked;
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, rq] : pending_) {
            if (rq->input && rq->input->expiry) rq->input->expiry->cancel();
            parked.push_back(rq);
        }
        pending_.clear();
    }
    for (auto& rq : parked) cancel(rq);
}

// ---------------------------------------------------------------- helpers

message exchange::reply_of(era e, std::string const& method, request_id const& id, handler_result result) {
    if (!result) return error_response{id, std::move(result.error())};
    auto obj = std::move(*result);
    if (e == era::modern) rules::decorate_modern_result(method, obj);
    return response{id, std::move(obj)};
}

request_context exchange::notification_context(std::string principal, std::string session_id, era e, std::string version,
                                               json::object caps) {
    request_context ctx;
    ctx.principal = std::move(principal);
    ctx.session_id = std::move(session_id);
    ctx.client_era = e;
    ctx.protocol_version = std::move(version);
    ctx.client_capabilities = std::move(caps);
    ctx.notify = [](notification) -> asio::awaitable<void> { co_return; };
    ctx.ask_client = [](std::string, json::object) -> asio::awaitable<handler_result> {
        co_return error_object{rpc_code::internal_error, "a notification cannot ask the client anything", std::nullopt};
    };
    return ctx;
}

}  // namespace airlock::mcp
