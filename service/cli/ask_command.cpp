#include "service/cli/ask_command.hpp"

#include "core/secrets.hpp"
#include "service/config/config.hpp"
#include "service/agents/providers/factory.hpp"
#include "service/cli/support.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

#include <charconv>
#include <iostream>

namespace airlock::service {

namespace {

constexpr char const* ask_usage =
    "usage: airlock ask --config FILE --provider NAME [--model MODEL] [--system TEXT] [--max-tokens N] TEXT\n"
    "  Sends TEXT as one user message to provider NAME of the configuration (its egress checked as\n"
    "  for any run) and prints the completion as JSON. A failed call prints its kind and whether it\n"
    "  happened, and exits 1; a bad command line or configuration exits 2.\n";

struct ask_args {
    std::string config;
    std::string provider;
    core::completion_request request;
    std::string text;
};

// 0: parsed; otherwise the exit code (help printed: 0 via `done`).
int parse(std::vector<std::string> const& args, ask_args& out, bool& done) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        std::string const* v = nullptr;
        if (a == "--help" || a == "-h") {
            std::cout << ask_usage;
            done = true;
            return 0;
        }
        if (a == "--config" || a == "--provider" || a == "--model" || a == "--system" || a == "--max-tokens") {
            if (!(v = cli::flag_value(args, i, "ask"))) return 2;
        }
        if (a == "--config") out.config = *v;
        else if (a == "--provider") out.provider = *v;
        else if (a == "--model") out.request.model = *v;
        else if (a == "--system") out.request.system = *v;
        else if (a == "--max-tokens") {
            std::uint64_t n = 0;
            auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
            if (ec != std::errc{} || p != v->data() + v->size() || n == 0) {
                std::cerr << "airlock ask: --max-tokens: '" << *v << "' is not a positive whole number\n";
                return 2;
            }
            out.request.max_tokens = n;
        } else if (a.starts_with("--")) {
            std::cerr << "airlock ask: unknown option " << a << "\n" << ask_usage;
            return 2;
        } else if (out.text.empty()) {
            out.text = a;
        } else {
            std::cerr << "airlock ask: expected one TEXT, got another: '" << a << "'\n" << ask_usage;
            return 2;
        }
    }
    if (out.config.empty() || out.provider.empty() || out.text.empty()) {
        std::cerr << "airlock ask: --config, --provider and TEXT are required\n" << ask_usage;
        return 2;
    }
    return 0;
}

std::string_view to_string(core::stop_reason s) {
    switch (s) {
        case core::stop_reason::end_turn: return "end_turn";
        case core::stop_reason::tool_use: return "tool_use";
        case core::stop_reason::max_tokens: return "max_tokens";
        case core::stop_reason::other: return "other";
    }
    return "other";
}

boost::json::object to_json(core::completion const& c) {
    boost::json::array calls;
    for (auto const& call : c.tool_calls)
        calls.push_back(boost::json::object{{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}});
    return boost::json::object{
        {"text", c.text},
        {"tool_calls", std::move(calls)},
        {"stop", to_string(c.stop)},
        {"usage", {{"input_tokens", c.usage.input_tokens}, {"output_tokens", c.usage.output_tokens}}},
        {"model", c.model},
    };
}

}  // namespace

int run_ask(std::vector<std::string> const& args) {
    ask_args a;
    bool done = false;
    if (int rc = parse(args, a, done); rc != 0 || done) return rc;
    auto c = load_config(a.config);
    if (!c) {
        std::cerr << "airlock ask: " << a.config << ": " << c.error().message << "\n";
        return 2;
    }
    // The reply is printed as the model wrote it, less any configured secret it echoes.
    register_secrets(*c);
    provider_config const* pc = nullptr;
    std::string names;
    for (auto const& p : c->providers) {
        if (p.name == a.provider) pc = &p;
        names += (names.empty() ? "" : ", ") + p.name;
    }
    if (!pc) {
        std::cerr << "airlock ask: the configuration has no provider '" << a.provider << "'"
                  << (names.empty() ? std::string(" (it configures none)") : " (it has: " + names + ")") << "\n";
        return 2;
    }
    boost::asio::io_context ioc;
    auto provider = providers::make_provider(ioc.get_executor(), *pc, c->egress);
    if (!provider) {
        std::cerr << "airlock ask: " << provider.error().message << "\n";
        return 2;
    }
    a.request.messages.push_back(core::model_message{core::message_role::user, a.text, {}, {}, false});
    auto r = cli::run_sync(ioc, (*provider)->async_complete(std::move(a.request)));
    if (!r) {
        std::cerr << "error: " << core::to_string(r.error().kind) << " ("
                  << core::to_string(core::disposition_of(r.error().kind)) << "): " << r.error().tool << ": "
                  << r.error().detail << "\n";
        return 1;
    }
    boost::json::value out = to_json(*r);
    core::secrets::redact(out);
    std::cout << boost::json::serialize(out) << "\n";
    return 0;
}

}  // namespace airlock::service
