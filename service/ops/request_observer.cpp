#include "service/ops/request_observer.hpp"

#include "service/ops/log.hpp"
#include "service/ops/metrics.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/this_coro.hpp>

#include <chrono>
#include <cstdio>
#include <random>

namespace airlock::service {

namespace asio = boost::asio;

namespace {

constexpr std::string_view request_id_header = "X-Request-Id";
constexpr std::string_view principal_note = "Airlock-Internal-Principal";
constexpr std::string_view route_note = "Airlock-Internal-Route";

// Request ids are correlation handles, not secrets: a per-thread generator seeded once is enough.
std::string new_request_id() {
    thread_local std::mt19937_64 gen{std::random_device{}()};
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(gen()),
                  static_cast<unsigned long long>(gen()));
    return buf;
}

std::string_view method_label(http::verb v) {
    switch (v) {
        case http::verb::get: return "GET";
        case http::verb::post: return "POST";
        case http::verb::delete_: return "DELETE";
        case http::verb::head: return "HEAD";
        case http::verb::put: return "PUT";
        case http::verb::patch: return "PATCH";
        case http::verb::options: return "OPTIONS";
        default: return "other";
    }
}

struct observed {
    std::string id;
    std::string method;
    std::string route;
    std::string principal;
    std::chrono::steady_clock::time_point started;
    std::string client;  // the effective client address (forwarding believed only from trusted proxies)
};

struct observer_state {
    http_handler inner;
    request_observer_options options;

    void record(observed const& o, unsigned status, bool observe_latency) const {
        auto took = std::chrono::steady_clock::now() - o.started;
        auto status_text = std::to_string(status);
        if (options.metrics) {
            options.metrics->http_requests.with({o.route, o.method, status_text}).inc();
            if (observe_latency) options.metrics->http_duration.with({o.route}).observe(seconds(took));
        }
        if (!options.log_requests) return;
        char ms[32];
        std::snprintf(ms, sizeof ms, "%.3f", std::chrono::duration<double, std::milli>(took).count());
        std::vector<log::field> fields{{"method", o.method},
                                       {"route", o.route},
                                       {"status", status_text, true},
                                       {"duration_ms", ms, true},
                                       {"client", o.client.empty() ? "-" : o.client},
                                       {"principal", o.principal.empty() ? "-" : o.principal},
                                       {"request_id", o.id}};
        log::info("http request", fields);
    }

    std::string route_of(http_request const& req, std::string_view path) const {
        if (auto noted = req.find(route_note); noted != req.end()) return std::string(noted->value());
        for (auto const& r : options.routes)
            if (r == path) return r;
        return "other";
    }
};

asio::awaitable<http_reply> observe(std::shared_ptr<observer_state> s, http_request& req) {
    observed o;
    o.started = std::chrono::steady_clock::now();
    req.erase(principal_note);
    req.erase(route_note);
    auto incoming = req.find(request_id_header);
    if (incoming != req.end() && acceptable_request_id(incoming->value())) o.id = std::string(incoming->value());
    else o.id = new_request_id();
    req.set(request_id_header, o.id);
    o.method = std::string(method_label(req.method()));
    o.client = std::string(client_address(req));
    auto target = req.target();
    auto path = std::string(target.substr(0, target.find('?')));

    std::optional<http_reply> reply;
    try {
        reply.emplace(co_await s->inner(req));
    } catch (boost::system::system_error const& e) {
        o.route = s->route_of(req, path);
        if (auto p = req.find(principal_note); p != req.end()) o.principal = std::string(p->value());
        // 499: the client went away before the answer (nginx's convention); else the server failed.
        s->record(o, e.code() == asio::error::operation_aborted ? 499 : 500, true);
        throw;
    } catch (...) {
        o.route = s->route_of(req, path);
        s->record(o, 500, true);
        throw;
    }
    o.route = s->route_of(req, path);
    if (auto p = req.find(principal_note); p != req.end()) o.principal = std::string(p->value());
    // The server cancels a handler only when its answer can no longer be sent (its client has
    // gone): whatever the handler makes of that, an error response or a stream nobody will read,
    // is a 499, not the status it happens to carry.
    bool gone = (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;

    if (auto* res = std::get_if<http_response>(&*reply)) {
        res->set(request_id_header, o.id);
        s->record(o, gone ? 499 : res->result_int(), true);
        co_return std::move(*reply);
    }
    // A stream is logged when it ends, with its whole duration; a notification stream has no
    // natural length, so it stays out of the latency histogram.
    auto& st = std::get<http_stream>(*reply);
    st.head.set(request_id_header, o.id);
    unsigned status = gone ? 499 : st.head.result_int();
    auto long_lived = st.long_lived;
    auto previous = std::move(st.on_end);
    st.on_end = [s, o = std::move(o), status, long_lived, previous = std::move(previous)](bool completed) {
        s->record(o, status, !long_lived);
        if (previous) previous(completed);
    };
    co_return std::move(*reply);
}

}  // namespace

http_handler observe_requests(http_handler inner, request_observer_options options) {
    auto s = std::make_shared<observer_state>(observer_state{std::move(inner), std::move(options)});
    return [s](http_request& req) { return observe(s, req); };
}

std::function<void(unsigned status)> observe_refusals(request_observer_options options) {
    auto s = std::make_shared<observer_state>(observer_state{nullptr, std::move(options)});
    return [s](unsigned status) {
        observed o{new_request_id(), "other", "none", "", std::chrono::steady_clock::now(), ""};
        s->record(o, status, false);
    };
}

void note_principal(http_request& req, std::string_view principal) { req.set(principal_note, principal); }

void note_route(http_request& req, std::string_view route) { req.set(route_note, route); }

std::string request_id_of(http_request const& req) {
    auto it = req.find(request_id_header);
    return it == req.end() ? std::string() : std::string(it->value());
}

bool acceptable_request_id(std::string_view id) noexcept {
    if (id.empty() || id.size() > 128) return false;
    for (char c : id) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                  c == ':' || c == '/' || c == '+' || c == '=' || c == '@' || c == '-';
        if (!ok) return false;
    }
    return true;
}

}  // namespace airlock::service
