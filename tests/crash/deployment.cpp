#include "tests/crash/deployment.hpp"

#include "tests/support/http_get.hpp"
#include "tests/support/peers.hpp"

#include <sys/stat.h>

#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace airlock::crash {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// The key an add counts comes from the model, out of the run's input (started over REST by the
// gateway principal) or an earlier result, so the protected key names those sources; a gateway
// caller is trusted and passes every gate.
std::string agent_manifest(std::string const& name, std::string const& model, std::string const& add_extra) {
    return "apiVersion: airlock/v1\nkind: Agent\nmetadata: { name: " + name + ", version: \"1.0.0\" }\n"
           "spec:\n  capabilities: { provides: [" + name + "] }\n"
           "  models: { privileged: { provider: scripted, model: " + model + " } }\n"
           "  tools:\n    - ref: tool://counter/add\n      mutates: true\n" + add_extra +
           "      description: Add an amount to a counter.\n      protected_fields:\n"
           "        - { path: /key, allowed_sources: [input, \"principal:gateway\", \"model://scripted/" + model +
           "\", \"tool://counter/add\", \"tool://counter/peek\"] }\n"
           "    - { ref: tool://counter/peek, mutates: false, description: Read a counter. }\n"
           "  execution: { kind: tool-calling, max_turns: 6 }\n  budgets: {}\n";
}

constexpr char reviewed_script[] = R"(model: reviewed-1
turns:
  - call: { tool: counter__add, arguments: { key: r, amount: 5 } }
  - say: reviewed
)";

constexpr char gateway_grants[] = R"(apiVersion: airlock/v1
kind: Agent
metadata: { name: crash-desk, version: "1" }
spec:
  tools:
    - { ref: tool://counter/add, mutates: true }
    - { ref: tool://everything/echo, mutates: false }
  budgets: {}
)";

void write(fs::path const& p, std::string const& text) { std::ofstream(p, std::ios::binary) << text; }

void write_secret(fs::path const& p, std::string const& text) {
    write(p, text + "\n");
    ::chmod(p.c_str(), 0600);
}

}  // namespace

deployment::deployment(std::string const& name, deployment_options options) : dir_("airlock-crash-" + name) {
    write_files(options);
}

deployment::~deployment() {
    if (airlock_) kill9();
}

void deployment::write_files(deployment_options const& o) {
    auto const& d = dir_.path();
    auto const node = testing::peers::node();
    auto const counter = std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/agents/counting_server.mjs";
    write(d / "counter.yaml", agent_manifest("counter", "counter-1", ""));
    write(d / "reviewed.yaml", agent_manifest("reviewed", "reviewed-1", "      requires_approval: true\n"));
    write(d / "reviewed.script.yaml", reviewed_script);
    write(d / "desk.yaml", gateway_grants);
    write_secret(d / "gateway.token", gateway_token);
    write_secret(d / "operator.token", operator_token);
    std::ostringstream c;
    c << "journal: { dir: journal, durability: durable, map_size: " << o.map_size << " }\n"
      << "upstreams:\n  - name: counter\n    deadline: " << o.counter_deadline << "\n    stdio:\n"
      << "      argv: [" << node << ", " << counter << "]\n"
      << "      env: { COUNTER_LOG: " << counter_log().string() << ", COUNTER_DELAY_MS: \"" << o.counter_delay_ms
      << "\" }\n"
      << "  - name: everything\n    stdio: { argv: [" << node << ", " << testing::peers::everything() << ", stdio] }\n"
      << "egress:\n  - process: " << node << "\n  - local\n"
      << "principals:\n"
      << "  - { name: gateway, token_file: gateway.token, trusted: true, manifest: desk.yaml }\n"
      << "  - { name: ops, token_file: operator.token, operator: true, manifest: desk.yaml }\n"
      << "agents:\n  - { manifest: counter.yaml, script: " << AIRLOCK_SOURCE_DIR << "/tests/fixtures/agents/counter.script.yaml }\n"
      << "  - { manifest: reviewed.yaml, script: reviewed.script.yaml }\n"
      << "logging: { level: info, format: text }\n";
    write(config(), c.str());
}

std::optional<std::string> deployment::start(std::vector<std::string> const& prefix) {
    std::vector<std::string> argv = prefix;
    for (std::string a : {std::string(AIRLOCK_BINARY), std::string("serve"), std::string("--config"), config().string(),
                          std::string("--listen"), std::string("127.0.0.1:0")})
        argv.push_back(a);
    try {
        airlock_ = std::make_unique<testing::child_process>(argv);
    } catch (std::runtime_error const& e) {
        return std::string(e.what());
    }
    auto line = airlock_->wait_for_stderr_line("listening on http://", 60s);
    std::smatch m;
    if (!line || !std::regex_search(*line, m, std::regex(R"(127\.0\.0\.1:(\d+))"))) {
        auto text = airlock_->stderr_text();
        kill9();
        return text.empty() ? std::string("airlock printed nothing") : text;
    }
    port_ = static_cast<std::uint16_t>(std::stoi(m[1]));
    // Ready once its upstreams have answered: load before that would only meet a starting airlock.
    for (int i = 0; i < 300; ++i) {
        if (testing::http_get(port_, "/readyz").status == 200) return std::nullopt;
        std::this_thread::sleep_for(100ms);
    }
    return "airlock listens but is not ready after 30 s: " + testing::http_get(port_, "/readyz").body;
}

void deployment::kill9() {
    if (!airlock_) return;
    airlock_->signal(SIGKILL);
    airlock_->wait(10s);
    airlock_.reset();
}

int deployment::stop() {
    if (!airlock_) return -1;
    airlock_->signal(SIGTERM);
    int code = airlock_->wait(30s);
    airlock_.reset();
    return code;
}

int deployment::wait_exit(std::chrono::milliseconds deadline, std::string& output) {
    if (!airlock_) return -1;
    int code = airlock_->wait(deadline);
    output = airlock_->stderr_text();
    airlock_.reset();
    return code;
}

int deployment::pid() const { return airlock_ ? airlock_->pid() : -1; }

std::string deployment::stderr_text() const { return airlock_ ? airlock_->stderr_text() : std::string(); }

int child_pid(int parent, std::string const& needle) {
    // Any of airlock's threads may have started the child, so every process's parent is read.
    for (auto const& entry : fs::directory_iterator("/proc")) {
        auto name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream stat(entry.path() / "stat");
        std::string line;
        std::getline(stat, line);
        auto close = line.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(line.substr(close + 2));
        char state = 0;
        int ppid = 0;
        rest >> state >> ppid;
        if (ppid != parent) continue;
        std::ifstream cmdline(entry.path() / "cmdline", std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
        if (text.find(needle) != std::string::npos) return std::stoi(name);
    }
    return -1;
}

testing::command_result airlock_command(std::vector<std::string> args) {
    args.insert(args.begin(), AIRLOCK_BINARY);
    return testing::run_command(std::move(args), 120s);
}

}  // namespace airlock::crash
