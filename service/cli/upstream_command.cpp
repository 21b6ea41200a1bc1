#include "service/cli/upstream_command.hpp"

#include "core/canonical_json.hpp"
#include "mcp/client/client.hpp"
#include "mcp/client/http_transport.hpp"
#include "mcp/client/stdio_transport.hpp"
#include "service/cli/grants_skeleton.hpp"
#include "service/cli/support.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

#include <charconv>
#include <iostream>

namespace airlock::service {

namespace asio = boost::asio;

bool split_command_line(std::string const& text, std::vector<std::string>& out, std::string& problem) {
    std::string cur;
    bool in_word = false;
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (quote) {
            if (c == quote) quote = 0;
            else if (c == '\\' && quote == '"' && i + 1 < text.size()) cur.push_back(text[++i]);
            else cur.push_back(c);
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = true;
        } else if (c == '\\' && i + 1 < text.size()) {
            cur.push_back(text[++i]);
            in_word = true;
        } else if (c == ' ' || c == '\t' || c == '\n') {
            if (in_word) out.push_back(std::move(cur));
            cur.clear();
            in_word = false;
        } else {
            cur.push_back(c);
            in_word = true;
        }
    }
    if (quote) {
        problem = std::string("unterminated ") + quote + " quote";
        return false;
    }
    if (in_word) out.push_back(std::move(cur));
    if (out.empty()) {
        problem = "no command";
        return false;
    }
    return true;
}

namespace {

constexpr char tools_usage[] =
    "usage: airlock tools --server SPEC [--name NAME] [--env K=V]... [--header 'N: V']... [--timeout SECONDS] [--insecure]\n"
    "       airlock call  --server SPEC [same options] TOOL [JSON]\n"
    "       airlock grants --server SPEC [same options] [--read-only]\n"
    "  SPEC  'stdio:COMMAND ARGS...' (started without a shell; only PATH and --env variables reach it)\n"
    "        or http(s)://host:port/path (Streamable HTTP; --header adds a request header such as\n"
    "        'Authorization: Bearer ...'; --insecure skips TLS verification)\n"
    "  TOOL  the tool's name as the server lists it, or its airlock wire name NAME__tool\n"
    "  NAME  (--name) the upstream's name in the configuration, the SERVER of tool://SERVER/TOOL\n"
    "  tools prints each tool's name, wire name, whether it mutates, its ref: line and description;\n"
    "  grants prints a principal's manifest granting them all (--read-only: only the read-only ones)\n";

struct upstream_args {
    std::string spec;
    std::string name = "upstream";
    std::map<std::string, std::string> env;
    std::chrono::milliseconds timeout{60'000};
    bool insecure = false;
    std::vector<std::pair<std::string, std::string>> headers;  // HTTP only; values may be secrets
    std::vector<std::string> positional;
};

int parse_args(std::string const& cmd, std::vector<std::string> const& args, upstream_args& out) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << tools_usage;
            return 0;
        } else if (a == "--server") {
            auto v = cli::flag_value(args, i, cmd);
            if (!v) return 2;
            out.spec = *v;
        } else if (a == "--name") {
            auto v = cli::flag_value(args, i, cmd);
            if (!v) return 2;
            out.name = *v;
        } else if (a == "--env") {
            auto v = cli::flag_value(args, i, cmd);
            if (!v) return 2;
            auto eq = v->find('=');
            if (eq == std::string::npos || eq == 0) {
                std::cerr << "airlock " << cmd << ": --env: '" << *v << "' is not NAME=VALUE\n";
                return 2;
            }
            out.env[v->substr(0, eq)] = v->substr(eq + 1);
        } else if (a == "--timeout") {
            auto v = cli::flag_value(args, i, cmd);
            if (!v) return 2;
            unsigned secs = 0;
            auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), secs);
            if (ec != std::errc{} || p != v->data() + v->size() || secs == 0 || secs > 3600) {
                std::cerr << "airlock " << cmd << ": --timeout: '" << *v << "' is not a number of seconds (1-3600)\n";
                return 2;
            }
            out.timeout = std::chrono::seconds(secs);
        } else if (a == "--header") {
            auto v = cli::flag_value(args, i, cmd);
            if (!v) return 2;
            auto colon = v->find(':');
            if (colon == std::string::npos || colon == 0) {
                // The value may be a credential: name the option, never echo it.
                std::cerr << "airlock " << cmd << ": --header must be 'Name: value'\n";
                return 2;
            }
            auto value = v->substr(colon + 1);
            value.erase(0, value.find_first_not_of(' '));
            out.headers.emplace_back(v->substr(0, colon), value);
        } else if (a == "--insecure") {
            out.insecure = true;
        } else if (a.rfind("--", 0) == 0) {
            std::cerr << "airlock " << cmd << ": unknown option '" << a << "'\n" << tools_usage;
            return 2;
        } else {
            out.positional.push_back(a);
        }
    }
    if (out.spec.empty()) {
        std::cerr << "airlock " << cmd << ": --server is required\n" << tools_usage;
        return 2;
    }
    if (auto p = core::tool_id_component_problem(out.name, "--name"); !p.empty()) {
        std::cerr << "airlock " << cmd << ": " << p << "\n";
        return 2;
    }
    return -1;
}

std::unique_ptr<mcp::mcp_client> make_client(asio::io_context& ioc, upstream_args const& a, std::string const& cmd) {
    mcp::client_options copts;
    copts.server_name = a.name;
    copts.call_deadline = a.timeout;
    copts.connect_deadline = std::min(a.timeout, std::chrono::milliseconds(30'000));
    copts.client_info = {"airlock", AIRLOCK_VERSION, std::nullopt, std::nullopt};
    if (a.spec.rfind("stdio:", 0) == 0) {
        mcp::stdio_options so;
        so.server_name = a.name;
        std::string problem;
        if (!split_command_line(a.spec.substr(6), so.argv, problem)) {
            std::cerr << "airlock " << cmd << ": --server: " << problem << "\n";
            return nullptr;
        }
        so.env = a.env;
        copts.kind = mcp::transport_kind::stdio;
        return std::make_unique<mcp::mcp_client>(std::make_unique<mcp::stdio_transport>(ioc.get_executor(), so), copts);
    }
    if (a.spec.rfind("http://", 0) == 0 || a.spec.rfind("https://", 0) == 0) {
        mcp::http_transport_options ho;
        ho.server_name = a.name;
        ho.url = a.spec;
        ho.verify_peer = !a.insecure;
        ho.headers = a.headers;
        copts.kind = mcp::transport_kind::http;
        return std::make_unique<mcp::mcp_client>(std::make_unique<mcp::http_transport>(ioc.get_executor(), ho), copts);
    }
    std::cerr << "airlock " << cmd << ": --server: '" << a.spec << "' is neither stdio:COMMAND nor an http(s) URL\n";
    return nullptr;
}

std::string first_line(std::string const& s) {
    auto nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace

// The upstream's tools, handed to `show` (its exit code is the command's); a refused listing is
// printed as "airlock COMMAND: kind: detail" with exit 1.
template <class Show>
int with_listed_tools(char const* command, std::vector<std::string> const& args, Show show) {
    upstream_args a;
    if (int rc = parse_args(command, args, a); rc >= 0) return rc;
    if (!a.positional.empty()) {
        std::cerr << "airlock " << command << ": unexpected argument '" << a.positional[0] << "'\n";
        return 2;
    }
    asio::io_context ioc;
    auto client = make_client(ioc, a, command);
    if (!client) return 2;
    auto task = [&]() -> asio::awaitable<int> {
        auto listed = co_await client->async_list_tools();
        int rc = 1;
        if (!listed)
            std::cerr << "airlock " << command << ": " << core::to_string(listed.error().kind) << ": "
                      << listed.error().detail << "\n";
        else
            rc = show(a, *client, *listed);
        co_await client->async_close();
        co_return rc;
    };
    return cli::run_sync(ioc, task());
}

int run_tools(std::vector<std::string> const& args) {
    return with_listed_tools("tools", args, [](upstream_args const&, auto& client, auto const& listed) {
        for (auto const& t : listed) {
            std::cout << t.spec.name << "\t" << t.id.wire_name() << "\t" << (mcp::may_mutate(t.spec) ? "mutates" : "read-only")
                      << "\t" << ref_line(t) << "\t" << first_line(t.spec.description.value_or("")) << "\n";
        }
        std::cerr << listed.size() << " tools; era " << mcp::to_string(client.current_era()) << " " << client.protocol_version()
                  << "\n";
        return 0;
    });
}

int run_call(std::vector<std::string> const& args) {
    upstream_args a;
    if (int rc = parse_args("call", args, a); rc >= 0) return rc;
    if (a.positional.empty() || a.positional.size() > 2) {
        std::cerr << "airlock call: expected TOOL and optionally a JSON object of arguments\n" << tools_usage;
        return 2;
    }
    boost::json::value arguments = boost::json::object{};
    if (a.positional.size() == 2) {
        auto parsed = core::parse_ijson(a.positional[1]);
        if (!parsed || !parsed->is_object()) {
            std::cerr << "airlock call: arguments: " << (parsed ? "must be a JSON object" : parsed.error().message) << "\n";
            return 2;
        }
        arguments = std::move(*parsed);
    }
    asio::io_context ioc;
    auto client = make_client(ioc, a, "call");
    if (!client) return 2;
    auto const wanted = a.positional[0];
    auto task = [&]() -> asio::awaitable<int> {
        int rc = 1;
        auto listed = co_await client->async_list_tools();
        if (!listed) {
            std::cerr << "airlock call: " << core::to_string(listed.error().kind) << ": " << listed.error().detail << "\n";
            co_await client->async_close();
            co_return 1;
        }
        std::optional<core::tool_id> id;
        for (auto const& t : *listed)
            if (t.spec.name == wanted || t.id.wire_name() == wanted) id = t.id;
        if (!id) {
            std::cerr << "airlock call: the server lists no tool '" << wanted << "'\n";
        } else {
            auto on_progress = [](mcp::progress_params const& p) {
                std::cerr << "progress " << p.progress;
                if (p.total) std::cerr << "/" << *p.total;
                if (p.message) std::cerr << " " << *p.message;
                std::cerr << "\n";
            };
            auto r = co_await client->async_call_tool(*id, arguments, std::nullopt, on_progress);
            if (!r) {
                std::cerr << "error: " << core::to_string(r.error().kind) << " ("
                          << core::to_string(core::disposition_of(r.error().kind)) << "): " << r.error().detail << "\n";
            } else {
                boost::json::object out{{"content", r->content}};
                if (r->structured_content) out["structuredContent"] = *r->structured_content;
                if (r->is_error) out["isError"] = *r->is_error;
                std::cout << boost::json::serialize(out) << "\n";
                rc = r->is_error.value_or(false) ? 1 : 0;
                if (rc) std::cerr << "error: tool_failed (landed): the tool reported an error\n";
            }
        }
        std::cerr << "era " << mcp::to_string(client->current_era()) << " " << client->protocol_version() << "\n";
        co_await client->async_close();
        co_return rc;
    };
    return cli::run_sync(ioc, task());
}

int run_grants(std::vector<std::string> const& args) {
    bool read_only = false;
    std::vector<std::string> rest;
    for (auto const& a : args) {
        if (a == "--read-only") read_only = true;
        else rest.push_back(a);
    }
    return with_listed_tools("grants", rest, [&](upstream_args const& a, auto&, auto const& listed) {
        std::cout << grants_skeleton(a.name, listed, read_only);
        if (a.name == "upstream")
            std::cerr << "the refs name the server 'upstream'; pass --name with the upstream's name in your "
                         "configuration\n";
        return 0;
    });
}

}  // namespace airlock::service
