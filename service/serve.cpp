#include "service/serve.hpp"

#include "service/http_server.hpp"

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <spdlog/spdlog.h>

#include <charconv>
#include <functional>
#include <iostream>
#include <thread>

namespace airlock::service {

namespace asio = boost::asio;

namespace {

void serve_usage(std::ostream& out) {
    out << "usage: airlock serve [--listen HOST:PORT] [--threads N]\n"
           "  --listen HOST:PORT   address to listen on (default 127.0.0.1:8787; port 0 picks a free one)\n"
           "  --threads N          I/O threads (default: hardware concurrency)\n";
}

bool parse_listen(std::string const& text, http_server_options& opts) {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) return false;
    std::string host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    unsigned port = 0;
    auto ptext = std::string_view(text).substr(colon + 1);
    auto [p, ec] = std::from_chars(ptext.data(), ptext.data() + ptext.size(), port);
    if (ec != std::errc{} || p != ptext.data() + ptext.size() || port > 65535 || host.empty()) return false;
    opts.host = host;
    opts.port = static_cast<std::uint16_t>(port);
    return true;
}

asio::awaitable<http_response> route(http_request& req) {
    auto target = req.target();
    auto path = target.substr(0, target.find('?'));
    if (path == "/healthz") {
        if (req.method() != http::verb::get && req.method() != http::verb::head)
            co_return json_error(http::status::method_not_allowed, "method_not_allowed", "use GET");
        co_return json_response(http::status::ok, R"({"status":"ok"})", req.version());
    }
    co_return json_error(http::status::not_found, "not_found", "no route for " + std::string(path), req.version());
}

}  // namespace

int run_serve(std::vector<std::string> const& args) {
    http_server_options opts;
    unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        auto value = [&](char const* name) -> std::string const* {
            if (i + 1 >= args.size()) {
                std::cerr << "airlock serve: " << name << " needs a value\n";
                return nullptr;
            }
            return &args[++i];
        };
        if (a == "--help" || a == "-h") {
            serve_usage(std::cout);
            return 0;
        } else if (a == "--listen") {
            auto v = value("--listen");
            if (!v) return 2;
            if (!parse_listen(*v, opts)) {
                std::cerr << "airlock serve: --listen: '" << *v << "' is not HOST:PORT\n";
                return 2;
            }
        } else if (a == "--threads") {
            auto v = value("--threads");
            if (!v) return 2;
            auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), threads);
            if (ec != std::errc{} || p != v->data() + v->size() || threads == 0 || threads > 256) {
                std::cerr << "airlock serve: --threads: '" << *v << "' is not a number from 1 to 256\n";
                return 2;
            }
        } else {
            std::cerr << "airlock serve: unknown option '" << a << "'\n";
            serve_usage(std::cerr);
            return 2;
        }
    }

    asio::io_context ioc(static_cast<int>(threads));
    http_server server(ioc, opts, route);
    try {
        server.listen();
    } catch (boost::system::system_error const& e) {
        spdlog::error("cannot listen on {}:{}: {}", opts.host, opts.port, e.code().message());
        return 1;
    }
    auto ep = server.local_endpoint();
    server.start();
    // The line tests and scripts wait for; it names the port actually bound (port 0 → a free one).
    spdlog::info("airlock {} listening on http://{}:{}", AIRLOCK_VERSION, ep.address().to_string(), ep.port());

    asio::signal_set signals(ioc, SIGINT, SIGTERM);
    signals.async_wait([&](boost::system::error_code const& ec, int sig) {
        if (ec) return;
        spdlog::info("signal {} received: draining", sig);
        server.stop();
        // In-flight requests get a grace period; the loop ends as soon as the last connection is
        // gone, or when the grace period runs out, whichever comes first.
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        auto timer = std::make_shared<asio::steady_timer>(ioc);
        auto check = std::make_shared<std::function<void()>>();
        *check = [&ioc, &server, timer, deadline, check] {
            if (server.active_connections() == 0 || std::chrono::steady_clock::now() >= deadline) {
                ioc.stop();
                *check = nullptr;  // break the self-reference
                return;
            }
            timer->expires_after(std::chrono::milliseconds(20));
            timer->async_wait([check](boost::system::error_code const&) { if (*check) (*check)(); });
        };
        (*check)();
    });

    std::vector<std::thread> pool;
    for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&] { ioc.run(); });
    ioc.run();
    for (auto& t : pool) t.join();
    spdlog::info("airlock stopped");
    return 0;
}

}  // namespace airlock::service
