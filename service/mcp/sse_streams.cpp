#include "service/mcp/sse_streams.hpp"

#include "mcp/client/spawn_logged.hpp"
#include "mcp/protocol/sse.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace airlock::service {

namespace asio = boost::asio;
using asio::as_tuple;
using asio::use_awaitable;
using error_code = boost::system::error_code;

http::response<http::empty_body> sse_head(unsigned version) {
    http::response<http::empty_body> head{http::status::ok, version};
    head.set(http::field::content_type, "text/event-stream");
    head.set(http::field::cache_control, "no-cache, no-store");
    // nginx and friends would otherwise hold events back until a buffer fills.
    head.set("X-Accel-Buffering", "no");
    return head;
}

std::string sse_event(std::string data, std::optional<std::string> id, std::optional<std::uint64_t> retry) {
    mcp::sse_frame f;
    f.data = std::move(data);
    f.id = std::move(id);
    f.retry = retry;
    // The data is serialized JSON (no raw line breaks) and ids are decimal: formatting cannot fail.
    return mcp::format_sse_event(f).value();
}

asio::awaitable<void> async_keep_alive(std::shared_ptr<asio::steady_timer> timer, std::shared_ptr<http_body_channel> body,
                                       std::chrono::milliseconds every) {
    for (;;) {
        timer->expires_after(every);
        auto [ec] = co_await timer->async_wait(as_tuple(use_awaitable));
        if (ec || !body->is_open()) co_return;
        body->try_send(error_code{}, mcp::format_sse_comment());
    }
}

asio::awaitable<http_stream> async_open_listen_stream(
    std::shared_ptr<mcp::server_backend> backend, listen_options const& options, unsigned version,
    std::string const& principal, std::shared_ptr<listen_stream> ls, std::string opening,
    std::function<std::optional<std::string>(mcp::notification const&)> format, std::function<void()> on_close,
    std::string session_id) {
    auto exec = co_await asio::this_coro::executor;
    ls->body = make_body_channel(exec, std::max<std::size_t>(options.buffer, 2));
    ls->keep_alive = std::make_shared<asio::steady_timer>(exec);
    ls->body->try_send(error_code{}, std::move(opening));
    std::weak_ptr<listen_stream> weak = ls;
    auto on_notification = [weak, format = std::move(format), dropped = options.dropped](mcp::notification const& n) {
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
    http_stream st;
    st.head = sse_head(version);
    st.body = ls->body;
    st.long_lived = true;
    st.on_end = [backend, ls, on_close = std::move(on_close)](bool) {
        ls->ended = true;
        ls->keep_alive->cancel();
        if (ls->listening) {
            ls->listening = false;
            backend->remove_listener(ls->listener);
        }
        if (on_close) on_close();
    };
    mcp::spawn_logged(exec, async_keep_alive(ls->keep_alive, ls->body, options.keep_alive), "mcp keep-alive");
    co_return st;
}

void end_listen_stream(std::shared_ptr<listen_stream> const& ls, std::optional<std::string> closing) {
    if (ls->ended.exchange(true)) return;
    if (closing) ls->body->try_send(error_code{}, std::move(*closing));
    if (!ls->body->try_send(asio::error::eof, std::string())) ls->body->close();
}

}  // namespace airlock::service
