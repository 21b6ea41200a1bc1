#include "service/gateway/gateway.hpp"

#include <algorithm>

#include "core/visible_text.hpp"
#include "service/gateway/call.hpp"
#include "service/gateway/passthrough.hpp"
#include "service/gateway/relays.hpp"
#include "service/gateway/replies.hpp"
#include "service/gateway/session_runs.hpp"

#include <boost/asio/this_coro.hpp>

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <array>
#include <stdexcept>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

void csprng(std::uint8_t* out, std::size_t n) {
    if (RAND_bytes(out, static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
}

gateway_options with_defaults(gateway_options o) {
    if (!o.random) o.random = csprng;
    if (o.list_page_size == 0) o.list_page_size = 1;
    return o;
}

// An upstream's instructions as callers see them: they are model-facing, like tool descriptions, so
// the characters nobody can read are removed, and they are bounded, since they land in every
// client's context.
std::string shown_instructions(std::string text) {
    core::hidden_characters removed;
    if (auto cleaned = core::without_hidden_characters(text, removed)) text = std::move(*cleaned);
    constexpr std::size_t limit = 16 * 1024;
    if (text.size() > limit) {
        auto cut = limit;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
        text.resize(cut);
        text += " [cut at 16 KiB by airlock]";
    }
    return text;
}

}  // namespace

core::result<std::shared_ptr<gateway>> gateway::make(gateway_options options) {
    if (!options.journal) return core::make_error("invalid_gateway", "the gateway needs a journal");
    std::map<std::string, int> seen;
    for (auto const& u : options.upstreams) {
        if (!u.client) return core::make_error("invalid_gateway", "upstream '" + u.name + "' has no client");
        if (seen[u.name]++) return core::make_error("invalid_gateway", "upstream '" + u.name + "' is configured twice");
    }
    std::map<std::string, int> names;
    for (auto const& p : options.principals)
        if (names[p.name]++) return core::make_error("invalid_gateway", "principal '" + p.name + "' is configured twice");
    auto g = std::shared_ptr<gateway>(new gateway(std::move(options)));
    std::weak_ptr<gateway> weak = g;
    std::weak_ptr<relays> streams = g->relays_;
    for (auto const& u : g->roster_->upstreams()) {
        auto server = u.name;
        u.client->set_notification_handler([weak, server](mcp::notification const& n) {
            if (auto self = weak.lock()) self->upstream_notification(server, n);
        });
        u.client->set_server_request_handler(
            [streams, server](mcp::request r) { return relays::async_upstream_request(streams, server, std::move(r)); });
    }
    return g;
}

gateway::gateway(gateway_options options) : options_(with_defaults(std::move(options))) {
    roster_ = std::make_shared<roster>(std::move(options_.upstreams), std::move(options_.principals),
                                       std::move(options_.egress), std::move(options_.upstream_scopes));
    // A fresh key per process: a cursor from before a restart is refused, and the client lists anew.
    std::array<std::uint8_t, 32> key{};
    options_.random(key.data(), key.size());
    cursors_ = std::make_shared<mcp::list_cursor_sealer>(key);
    runs_ = session_runs::make(
        {options_.executor, options_.journal, options_.instance, options_.clock, options_.random, options_.run_limits});
    relays_ = std::make_shared<relays>(roster_);
    catalogue_ = std::make_shared<catalogue>(
        catalogue_options{options_.executor, options_.pins, options_.upstream_wait, options_.server_info.version}, roster_,
        runs_, relays_);
    passthrough_ = std::make_unique<passthrough>(passthrough_options{options_.list_page_size, options_.call_deadline},
                                                 roster_, catalogue_, runs_, relays_, cursors_);
    call_ = std::make_unique<call>(call_options{options_.signer, options_.provenance_lifetime, options_.call_deadline,
                                                options_.clock, options_.random, options_.metrics},
                                   roster_, catalogue_, runs_, relays_);
}

gateway::~gateway() = default;

mcp::implementation gateway::server_info() const { return options_.server_info; }

json::object gateway::server_capabilities(std::string const& principal_name) const {
    json::object caps{{"tools", {{"listChanged", true}}}};
    auto const* p = roster_->principal(principal_name);
    if (!p) return caps;
    bool resources = false, subscribe = false, prompts = false, logging = false, completions = false;
    for (auto const* up : roster_->visible_upstreams(*p)) {
        auto known = up->client->server_capabilities();
        if (!known) {
            // Not connected yet: promise what airlock can relay; an upstream without it answers
            // lists with nothing and other requests with its own error.
            resources = subscribe = prompts = logging = completions = true;
            continue;
        }
        if (auto const* r = known->if_contains("resources"); r && r->is_object()) {
            resources = true;
            if (auto const* sub = r->as_object().if_contains("subscribe"); sub && sub->is_bool() && sub->get_bool())
                subscribe = true;
        }
        prompts = prompts || known->contains("prompts");
        logging = logging || known->contains("logging");
        completions = completions || known->contains("completions");
    }
    // listChanged is ours to promise: airlock relays the upstreams' and re-lists on demand.
    if (resources) caps["resources"] = {{"subscribe", subscribe}, {"listChanged", true}};
    if (prompts) caps["prompts"] = {{"listChanged", true}};
    if (logging) caps["logging"] = json::object{};
    if (completions) caps["completions"] = json::object{};
    return caps;
}

std::optional<std::string> gateway::instructions(std::string const& principal_name) const {
    // What each upstream the principal sees says of how to use it, with the characters nobody can
    // read removed (they are model-facing, like tool descriptions). A lone unprefixed upstream's
    // text goes as it is; otherwise each is headed by its server, whose tools carry its prefix.
    auto const* p = roster_->principal(principal_name);
    if (!p) return std::nullopt;
    std::vector<std::pair<gateway_upstream const*, std::string>> said;
    for (auto const* up : roster_->visible_upstreams(*p)) {
        auto text = up->client->instructions();
        if (!text) continue;
        std::optional<std::string> cached;
        {
            std::lock_guard lock(instructions_mutex_);
            if (auto it = shown_instructions_.find(up->name); it != shown_instructions_.end() && it->second.first == *text)
                cached = it->second.second;
        }
        if (!cached) {
            // Cleaned outside the lock: a long text must not hold up other threads' discovers.
            cached = shown_instructions(*text);
            std::lock_guard lock(instructions_mutex_);
            shown_instructions_[up->name] = {std::move(*text), *cached};
        }
        text = std::move(cached);
        if (text->find_first_not_of(" \t\r\n") == std::string::npos) continue;
        said.emplace_back(up, std::move(*text));
    }
    if (said.empty()) return std::nullopt;
    if (said.size() == 1 && !said.front().first->prefixed) return std::move(said.front().second);
    std::string out;
    for (auto& [up, text] : said) {
        if (!out.empty()) out += "\n\n";
        out += "From the upstream server '" + up->name + "'" +
               (up->prefixed ? " (its tools are named " + up->name + "__TOOL here):\n" : ":\n") + text;
    }
    return out;
}

asio::awaitable<mcp::handler_result> gateway::async_handle(mcp::request req, mcp::request_context& ctx) {
    if (req.method == "tools/list") co_return co_await async_list(req, ctx);
    if (req.method == "tools/call") co_return co_await call_->async_run(req, ctx);
    co_return co_await passthrough_->async_handle(req, ctx);
}

asio::awaitable<void> gateway::async_notification(mcp::notification, mcp::request_context&) { co_return; }

asio::awaitable<std::vector<gateway::tools_of_upstream>> gateway::async_tools_by_upstream(std::string principal_name) {
    auto const* p = roster_->principal(principal_name);
    if (!p) co_return std::vector<tools_of_upstream>{};
    co_return co_await catalogue_->async_tools_by_upstream(*p);
}

asio::awaitable<std::vector<json::object>> gateway::async_tools_for(std::string principal_name) {
    std::vector<json::object> out;
    auto groups = co_await async_tools_by_upstream(std::move(principal_name));
    for (auto& g : groups)
        for (auto& t : g.second) out.push_back(std::move(t));
    co_return out;
}

asio::awaitable<mcp::handler_result> gateway::async_list(mcp::request const& req, mcp::request_context& ctx) {
    // Pages follow the upstreams in configuration order; a cursor names the upstream and how many
    // of its tools were shown, so a page boundary does not move when another upstream's list changes.
    auto start = cursor_of(*cursors_, req, "tools/list", ctx.principal);
    if (!start) co_return invalid_params(start.error().message);
    auto const caller = roster_->caller(ctx);
    std::vector<tools_of_upstream> groups;
    if (caller) groups = co_await catalogue_->async_tools_by_upstream(*caller);
    std::size_t g = 0, skip = 0;
    if (*start) {
        while (g < groups.size() && groups[g].first != (*start)->upstream) ++g;
        if (g == groups.size()) co_return invalid_params("invalid cursor: it points into an upstream this caller no longer sees");
        skip = static_cast<std::size_t>((*start)->skip);
    }
    auto const page = options_.list_page_size;
    json::array list;
    for (; g < groups.size(); ++g, skip = 0) {
        auto& tools = groups[g].second;
        for (std::size_t i = skip; i < tools.size(); ++i) {
            if (list.size() == page) {
                json::object result{{"tools", std::move(list)}};
                mcp::list_position next{groups[g].first, std::nullopt, i};
                result["nextCursor"] = cursors_->seal("tools/list", ctx.principal, next);
                co_return result;
            }
            list.push_back(std::move(tools[i]));
        }
    }
    co_return json::object{{"tools", std::move(list)}};
}

void gateway::pins_changed(std::string const& server) {
    if (roster_->upstream(server)) catalogue_->list_changed(server);
}

void gateway::upstream_notification(std::string const& server, mcp::notification const& n) {
    if (n.method == "notifications/tools/list_changed") {
        catalogue_->list_changed(server);
        return;
    }
    if (n.method == "notifications/resources/updated") {
        auto const* uri = n.params ? n.params->if_contains("uri") : nullptr;
        if (!uri || !uri->is_string()) return;
        // Only to the streams of the sessions subscribed to it: another session of the same
        // principal did not ask, and may not be the same client at all.
        auto keys = passthrough_->subscribers_of(std::string(uri->get_string()));
        if (!keys.empty()) relays_->to_sessions(server, n, keys);
        return;
    }
    relays_->upstream_notification(server, n);
}

std::uint64_t gateway::add_listener(std::string const& principal, notification_sink sink) {
    return add_session_listener(principal, "", std::move(sink));
}

std::uint64_t gateway::add_session_listener(std::string const& principal, std::string const& session_id,
                                            notification_sink sink) {
    return relays_->add_listener(principal, session_id, std::move(sink));
}

void gateway::remove_listener(std::uint64_t id) { relays_->remove_listener(id); }

std::optional<std::string> gateway::run_of(std::string const& session_id, std::string const& principal) const {
    return runs_->run_of(session_id, principal);
}

void gateway::session_closed(std::string const& session_id) {
    // Its subscriptions and its run end with it; both run on their own: the endpoint is not waiting.
    passthrough_->session_closed(session_id, options_.executor);
    runs_->session_closed(session_id);
}

void gateway::close_all_runs(std::string reason, std::string refusal) {
    runs_->close_all(std::move(reason), std::move(refusal));
}

bool gateway::runs_settled() const { return runs_->settled(); }

void gateway::start_run_upkeep() {
    // Often enough that a run is sealed within a quarter of its limit past it; at most once a second.
    auto const& limits = options_.run_limits;
    auto every = std::clamp(std::min(limits.idle, limits.max_age) / 4, std::chrono::milliseconds(1000),
                            std::chrono::milliseconds(60'000));
    runs_->start_upkeep(every);
}

asio::awaitable<void> gateway::async_runs_closed(std::chrono::milliseconds limit) { co_await runs_->async_closed(limit); }

asio::awaitable<void> gateway::async_connect_upstreams() { co_await catalogue_->async_connect(); }

std::vector<std::pair<std::string, gateway::upstream_state>> gateway::upstream_states() const {
    return catalogue_->states();
}

asio::awaitable<void> gateway::async_probe_upstreams() { co_await catalogue_->async_probe(); }

}  // namespace airlock::service
