#include "service/ops/hints.hpp"

#include <filesystem>
#include <sstream>

namespace airlock::service {

namespace {

namespace fs = std::filesystem;

// A path as a shell word: relative to the working directory when that is shorter, single-quoted
// when it holds anything a shell would read.
std::string shell_path(fs::path const& p) {
    std::error_code ec;
    auto rel = fs::proximate(p, ec);
    std::string s = (ec || rel.empty()) ? p.string() : rel.string();
    if (s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") == std::string::npos)
        return s;
    std::string q = "'";
    for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return q + "'";
}

// The curl arguments that present a principal's token, read where the configuration reads it.
std::string auth_of(principal_config const& p) {
    if (p.anonymous) return "";
    if (p.token_file) return " -H \"Authorization: Bearer $(cat " + shell_path(*p.token_file) + ")\"";
    if (p.token_env) return " -H \"Authorization: Bearer $" + *p.token_env + "\"";
    return "";
}

}  // namespace

std::string start_hints(config const& c, std::string const& base_url) {
    std::ostringstream out;
    bool unix_socket = base_url.starts_with("unix:");
    // curl reaches a unix socket with --unix-socket and any host name in the URL.
    std::string url = unix_socket ? "http://localhost" : base_url;
    std::string curl = unix_socket ? "curl -s --unix-socket " + shell_path(base_url.substr(5)) + " " : "curl -s ";

    out << "\nairlock is serving on " << base_url << "\n";
    out << "  MCP gateway  " << url << "/mcp   (" << c.upstreams.size() << " upstream"
        << (c.upstreams.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < c.upstreams.size(); ++i) out << (i ? ", " : ": ") << c.upstreams[i].name;
    out << ")\n";
    out << "  REST API     " << url << "/v1    (" << c.agents.size() << " agent" << (c.agents.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < c.agents.size(); ++i) out << (i ? ", " : ": ") << c.agents[i].name;
    out << "; OpenAPI at /v1/openapi.json)\n";
    out << "  operations   /healthz /readyz" << (c.metrics.enabled ? " /metrics" : "") << "\n";
    out << "  journal      " << (c.journal_postgres ? journal_location(c) : shell_path(c.journal.directory)) << "\n";
    if (c.signing) out << "  signing key  " << shell_path(c.signing->key_file) << "\n";

    principal_config const* who = c.principals.empty() ? nullptr : &c.principals.front();
    if (!who) {
        out << "\nNo principal is configured, so nobody may call a tool or start a run yet: add one under\n"
               "`principals:` (docs/configuration.md). Until then: "
            << curl << url << "/healthz\n";
        return out.str();
    }
    auto auth = auth_of(*who);
    out << "\nThree things to try, from this directory in another terminal:\n\n";
    out << "# 1. The tools principal '" << who->name << "' may call, through the gateway (MCP 2026-07-28, one request):\n"
        << curl << url << "/mcp" << auth << " \\\n"
        << "    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n"
        << "    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \\\n"
        << "    -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
           "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}'\n\n";
    if (c.agents.empty()) {
        out << "# 2. No agent is configured (`agents:` in docs/configuration.md), so there is no run to start.\n"
            << "# 3. The runs the journal holds (gateway sessions are runs too):\n"
            << curl << url << "/v1/runs" << auth << "\n";
        return out.str();
    }
    auto const& agent = c.agents.front().name;
    out << "# 2. Start a run of the agent '" << agent << "' and wait up to 10 s for its answer:\n"
        << curl << "-X POST '" << url << "/v1/runs?wait=10'" << auth << " \\\n"
        << "    -H 'Content-Type: application/json' -d '{\"agent\":\"" << agent
        << "\",\"input\":{\"question\":\"What can you do?\"}}'\n\n";
    out << "# 3. That run's journal, one hash-chained record per line (RUN_ID: the run_id 2 printed):\n"
        << curl << url << "/v1/runs/RUN_ID/journal" << auth << "\n";
    return out.str();
}

}  // namespace airlock::service
