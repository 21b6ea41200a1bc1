#include "service/app/replay_command.hpp"

#include "service/app/wiring.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/serialize.hpp>

#include <iostream>

namespace airlock::service {

namespace asio = boost::asio;

namespace {

constexpr char replay_usage[] =
    "usage: airlock replay --config FILE RUN\n"
    "  re-runs RUN from the journal alone (no model or tool calls) with the configured agents, and\n"
    "  prints its status and output; exit 1 when the current manifest or code would act differently\n";

}  // namespace

int run_replay(std::vector<std::string> const& args) {
    std::optional<std::string> config_file, run;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << replay_usage;
            return 0;
        }
        if (a == "--config" && i + 1 < args.size()) config_file = args[++i];
        else if (!a.starts_with("-") && !run) run = a;
        else {
            std::cerr << "airlock replay: unknown or incomplete option '" << a << "'\n" << replay_usage;
            return 2;
        }
    }
    if (!config_file || !run) {
        std::cerr << "airlock replay: --config and RUN are required\n" << replay_usage;
        return 2;
    }
    // Not load_serving_config(): a replay creates no key or token that is missing.
    auto c = load_config(*config_file, process_environment());
    if (!c) {
        std::cerr << "airlock replay: " << *config_file << ": " << c.error().message << "\n";
        return 1;
    }
    apply_logging(*c, log_flags{});
    asio::io_context ioc;
    auto sc = build_core(*c, ioc.get_executor());
    if (!sc) {
        std::cerr << "airlock replay: " << sc.error().message << "\n";
        return 1;
    }
    auto done = asio::co_spawn(ioc, sc->runs->async_replay(*run), asio::use_future);
    ioc.run();
    sc->journal->close();
    auto r = done.get();
    if (!r) {
        std::cerr << "airlock replay: " << r.error().code << ": " << r.error().message << "\n";
        return 1;
    }
    std::cout << "run " << *run << ": replayed " << r->records << " records from the journal alone (" << r->model_calls
              << " model calls, " << r->tool_calls << " tool calls)\n"
              << "status: " << core::to_string(r->status) << "\n";
    if (!r->reason.empty()) std::cout << "reason: " << r->reason << "\n";
    std::cout << "output: " << boost::json::serialize(r->output) << "\n";
    return 0;
}

}  // namespace airlock::service
