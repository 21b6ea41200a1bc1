#include "service/agents/providers/http_client.hpp"

#include "core/ascii.hpp"
#include "core/canonical_json.hpp"
#include "core/secrets.hpp"
#include "mcp/client/http_pool.hpp"
#include "mcp/client/on_strand.hpp"
#include "mcp/client/router.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <ctime>

namespace airlock::service::providers {

namespace asio = boost::asio;
namespace json = boost::json;
namespace http = boost::beast::http;
using asio::as_tuple;
using asio::use_awaitable;
using clock_type = std::chrono::steady_clock;
using core::tool_error_kind;
using std::chrono::milliseconds;

namespace {

// Error bodies are read to quote the provider's message; more than this is not a message.
constexpr std::size_t max_error_body_bytes = 64 * 1024;
// How much of the provider's error message an error detail quotes.
constexpr std::size_t max_quoted_message = 500;

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The message a provider put in an error body: `error.message` (OpenAI, Anthropic, vLLM),
// `error` as a string (Ollama, llama.cpp), `message`, or the start of a body that is not JSON.
std::string error_message_of(std::string_view body) {
    std::string out;
    boost::system::error_code ec;
    auto v = json::parse(body, ec);
    if (!ec && v.is_object()) {
        auto const& o = v.get_object();
        if (auto const* e = o.if_contains("error")) {
            if (e->is_string()) out = std::string(e->get_string());
            else if (e->is_object()) {
                if (auto const* m = e->get_object().if_contains("message"); m && m->is_string())
                    out = std::string(m->get_string());
                if (auto const* t = e->get_object().if_contains("type"); t && t->is_string())
                    out = std::string(t->get_string()) + (out.empty() ? "" : ": " + out);
            }
        } else if (auto const* m = o.if_contains("message"); m && m->is_string()) {
            out = std::string(m->get_string());
        }
    } else {
        out = std::string(core::trim_ows(body.substr(0, max_quoted_message)));
    }
    for (auto& c : out)
        if (c == '\r' || c == '\n') c = ' ';
    if (out.size() > max_quoted_message) out = out.substr(0, max_quoted_message) + "...";
    return out;
}

}  // namespace

std::optional<std::chrono::seconds> parse_retry_after(std::string_view value, std::chrono::system_clock::time_point now) {
    value = core::trim_ows(value);
    if (all_digits(value)) {
        // More than ten digits is centuries; clamp instead of overflowing.
        if (value.size() > 10) return std::chrono::seconds(9'999'999'999);
        std::int64_t n = 0;
        std::from_chars(value.data(), value.data() + value.size(), n);
        return std::chrono::seconds(n);
    }
    // RFC 9110 §5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must accept.
    static constexpr char const* formats[] = {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
                                              "%a %b %e %H:%M:%S %Y"};
    std::string text(value);
    for (auto const* f : formats) {
        std::tm tm{};
        char const* end = ::strptime(text.c_str(), f, &tm);
        if (!end || *end != '\0') continue;
        auto when = std::chrono::system_clock::from_time_t(::timegm(&tm));
        if (when <= now) return std::chrono::seconds(0);
        return std::chrono::ceil<std::chrono::seconds>(when - now);
    }
    return std::nullopt;
}

std::string scrub(std::string text, std::vector<std::string> const& secrets) {
    core::secret_set set;
    for (auto const& s : secrets) set.add(s);
    set.redact(text);
    return text;
}

struct http_client::state : std::enable_shared_from_this<state> {
    asio::strand<asio::any_io_executor> strand;
    http_client_options opts;
    mcp::http_pool pool;
    core::secret_set secrets;  // this provider's key and header values, also escaped (an echo is JSON)
    core::destination dest;
    std::string base_target;  // the base URL's path without a trailing '/'
    // Requests holding one of opts.max_connections, and those waiting for one, oldest first. Only
    // touched on the strand.
    struct turn {
        explicit turn(asio::strand<asio::any_io_executor> const& s, clock_type::time_point until) : timer(s, until) {}
        asio::steady_timer timer;
        bool granted = false;
    };
    std::size_t in_flight = 0;
    std::deque<std::shared_ptr<turn>> waiting;

    static mcp::http_pool_options pool_options(http_client_options const& o) {
        mcp::http_pool_options p;
        p.log_name = "provider " + o.provider;
        p.url = o.base_url;
        p.headers = o.headers;
        p.verify_peer = o.verify_peer;
        p.ca_file = o.ca_file;
        p.connect_timeout = o.connect_timeout;
        p.pool_size = o.pool_size;
        return p;
    }

    state(asio::any_io_executor exec, http_client_options o)
        : strand(asio::make_strand(exec)), opts(std::move(o)), pool(strand, with_egress(pool_options(opts), opts)),
          secrets() {
        // Shorter than secret_set::min_bytes: not hidden (docs/configuration.md says so).
        for (auto const& s : opts.secrets) secrets.add(s);
        if (!pool.has_endpoint()) {
            dest = core::remote_destination{};
            return;
        }
        auto const& e = pool.endpoint();
        std::string host = e.host;
        std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
        dest = core::remote_destination{e.scheme, host, e.port};
        base_target = e.target.substr(0, e.target.find('?'));
        while (!base_target.empty() && base_target.back() == '/') base_target.pop_back();
    }

    // Resolved addresses pass the same check as an HTTP upstream's: restricted ones only when named.
    static mcp::http_pool_options with_egress(mcp::http_pool_options p, http_client_options const& o) {
        auto parsed = mcp::parse_http_url(o.base_url);
        if (parsed) {
            p.allow_address = [egress = o.egress, scheme = parsed->scheme,
                               port = parsed->port](boost::asio::ip::address const& a) {
                return mcp::address_permitted(egress, scheme, port, a);
            };
        }
        return p;
    }

    core::model_error fail(tool_error_kind k, std::string detail) const {
        secrets.redact(detail);
        return core::model_error{k, opts.provider, std::move(detail)};
    }

    std::string where() const { return pool.where(); }

    // The wait before the next attempt, or nullopt when the provider asked for longer than we wait.
    std::optional<milliseconds> retry_wait(mcp::http_wire::exchange const& ex, unsigned attempt) const {
        auto header = ex.field("Retry-After");
        if (!header.empty()) {
            auto secs = parse_retry_after(header, std::chrono::system_clock::now());
            if (secs) {
                if (milliseconds(*secs) > opts.max_retry_wait) return std::nullopt;
                return milliseconds(*secs);
            }
        }
        milliseconds wait = opts.retry_backoff * (milliseconds::rep{1} << std::min(attempt, 20u));
        return std::min(wait, opts.max_retry_wait);
    }

    // A place among max_connections by `until`; false when none came free in time.
    asio::awaitable<bool> take_turn(clock_type::time_point until) {
        if (in_flight < std::max<std::size_t>(opts.max_connections, 1) && waiting.empty()) {
            ++in_flight;
            co_return true;
        }
        auto t = std::make_shared<turn>(strand, until);
        waiting.push_back(t);
        co_await t->timer.async_wait(as_tuple(use_awaitable));
        if (t->granted) co_return true;
        std::erase(waiting, t);
        co_return false;
    }

    // Hands the place to the oldest waiter, if any.
    void end_turn() {
        if (waiting.empty()) {
            --in_flight;
            return;
        }
        auto next = std::move(waiting.front());
        waiting.pop_front();
        next->granted = true;
        next->timer.cancel();
    }

    struct turn_guard {
        std::shared_ptr<state> s;  // a frame destroyed at shutdown may outlive every other owner
        ~turn_guard() { s->end_turn(); }
    };

    asio::awaitable<core::model_result<json::value>> post_op(std::string path, std::string body) {
        if (auto const& p = pool.setup_problem()) co_return fail(tool_error_kind::unreachable, *p);
        // The gate every tool call passes, so a model endpoint is granted exactly like an upstream.
        if (auto gate = core::destination_gate(opts.egress, dest); !gate)
            co_return fail(tool_error_kind::refused, gate.refusal()->detail + "; nothing was sent");
        if (!co_await take_turn(clock_type::now() + opts.deadline))
            co_return fail(tool_error_kind::unreachable,
                           "no connection to " + where() + " came free within the deadline (" +
                               std::to_string(opts.max_connections) + " requests in flight); nothing was sent");
        turn_guard holding{shared_from_this()};
        std::string target = base_target + path;
        unsigned attempts = opts.max_retries + 1;
        for (unsigned attempt = 0;; ++attempt) {
            auto deadline = clock_type::now() + opts.deadline;
            mcp::http_headers headers{{"Content-Type", "application/json"}, {"Accept", "application/json"}};
            mcp::http_wire::outgoing out{http::verb::post, target, body, std::move(headers)};
            auto ex = co_await pool.async_send(std::move(out), deadline);
            if (!ex) {
                using tk = mcp::transport_error::kind;
                auto k = ex.error().what == tk::not_sent ? tool_error_kind::unreachable : tool_error_kind::timed_out;
                co_return fail(k, ex.error().detail);
            }
            unsigned status = ex->status();
            if (status >= 200 && status < 300) co_return co_await read_answer(*ex, deadline);

            auto err = co_await mcp::http_wire::read_body(*ex, max_error_body_bytes, deadline);
            if (err.ec || err.too_large) ex->conn->close();
            else pool.release(*ex);
            std::string message = err.ec ? std::string() : error_message_of(err.text);
            std::string detail = "HTTP " + std::to_string(status) + " from " + where() + target;
            if (!message.empty()) detail += ": " + message;

            bool retryable = status == 429 || (status >= 500 && status < 600);
            if (retryable && attempt + 1 < attempts) {
                if (auto wait = retry_wait(*ex, attempt)) {
                    spdlog::warn("provider {}: HTTP {} from {}; attempt {} of {} in {} ms", opts.provider, status,
                                 where(), attempt + 2, attempts, wait->count());
                    asio::steady_timer timer(strand, *wait);
                    co_await timer.async_wait(as_tuple(use_awaitable));
                    continue;
                }
                detail += " (Retry-After " + std::string(ex->field("Retry-After")) + " is longer than max_retry_wait " +
                          std::to_string(opts.max_retry_wait.count()) + " ms; not retried)";
            } else if (retryable && attempt > 0) {
                detail += " (after " + std::to_string(attempt + 1) + " attempts)";
            }
            if (status >= 300 && status < 400) detail += " (redirects are not followed)";
            // 5xx: the provider took the request and failed on it. 429 and other 4xx: it declined
            // it as such, so nothing was billed or done.
            co_return fail(status >= 500 ? tool_error_kind::tool_failed : tool_error_kind::refused, std::move(detail));
        }
    }

    asio::awaitable<core::model_result<json::value>> read_answer(mcp::http_wire::exchange& ex,
                                                                 mcp::http_wire::time_point deadline) {
        auto got = co_await mcp::http_wire::read_body(ex, opts.max_body_bytes, deadline);
        if (got.too_large) {
            ex.conn->close();
            co_return fail(tool_error_kind::malformed, "the answer from " + where() + " is larger than " +
                                                           std::to_string(opts.max_body_bytes) + " bytes");
        }
        if (got.ec) {
            ex.conn->close();
            co_return fail(tool_error_kind::timed_out,
                           "the answer from " + where() + " broke off: " + mcp::http_wire::describe(got.ec));
        }
        pool.release(ex);
        // Exactly (numbers to the bit, duplicate names refused): a reply's tool arguments are journaled
        // and signed as the model wrote them.
        auto v = core::parse_ijson(got.text);
        if (!v) co_return fail(tool_error_kind::malformed, "the answer from " + where() + " is not JSON: " + v.error().message);
        co_return std::move(*v);
    }
};

http_client::http_client(asio::any_io_executor exec, http_client_options opts)
    : state_(std::make_shared<state>(std::move(exec), std::move(opts))) {}

http_client::~http_client() = default;

asio::awaitable<core::model_result<json::value>> http_client::async_post_json(std::string path, json::value body) {
    auto s = state_;
    auto text = json::serialize(body);
    auto task = s->post_op(std::move(path), std::move(text));
    co_return co_await mcp::co_await_on(s->strand, std::move(task));
}

core::destination http_client::destination() const { return state_->dest; }

std::optional<std::string> http_client::setup_problem() const { return state_->pool.setup_problem(); }

}  // namespace airlock::service::providers
