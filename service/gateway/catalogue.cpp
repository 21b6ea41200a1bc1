#include "service/gateway/catalogue.hpp"

#include "core/canonical_json.hpp"
#include "core/grant_hints.hpp"
#include "core/sha256.hpp"
#include "core/visible_text.hpp"
#include "mcp/client/spawn_logged.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// Catalogues are re-read after this long, and a failed read is retried after the backoff.
constexpr auto catalogue_ttl = std::chrono::seconds(30);
constexpr auto retry_backoff = std::chrono::seconds(5);
// Readiness probes ping an upstream that was up at most this often, and wait this long for it.
constexpr auto ping_interval = std::chrono::seconds(3);
constexpr auto ping_deadline = std::chrono::milliseconds(3000);

// The copy of a tool definition that callers see loses the characters no reviewer can see (see
// core/visible_text.hpp). The pin covers the definition as the upstream sent it.
core::hidden_characters remove_hidden_characters(mcp::tool& t) {
    core::hidden_characters removed;
    for (auto* text : {&t.title, &t.description})
        if (*text)
            if (auto cleaned = core::without_hidden_characters(**text, removed)) **text = std::move(*cleaned);
    if (t.annotations && t.annotations->title)
        if (auto cleaned = core::without_hidden_characters(*t.annotations->title, removed))
            t.annotations->title = std::move(*cleaned);
    json::value schema(std::move(t.input_schema));
    core::remove_hidden_characters(schema, removed);
    t.input_schema = std::move(schema.as_object());
    if (t.output_schema) {
        json::value out(std::move(*t.output_schema));
        core::remove_hidden_characters(out, removed);
        t.output_schema = std::move(out.as_object());
    }
    return removed;
}

// What a principal is shown of one upstream: its granted, served tools as they are listed.
std::vector<json::value> shown(gateway_principal const& p, std::vector<catalogue_entry> const& entries) {
    std::vector<json::value> out;
    for (auto const& e : entries) {
        if (!e.withheld.empty() || !p.grants.grant_for(e.id)) continue;
        auto t = json::value_from(e.spec);
        t.as_object()["name"] = e.exposed_name;
        out.push_back(std::move(t));
    }
    return out;
}

}  // namespace

std::string tool_definition_digest(mcp::tool const& t) {
    json::object def{{"name", t.name},
                     {"description", t.description ? json::value(*t.description) : json::value(nullptr)},
                     {"inputSchema", t.input_schema}};
    auto text = core::canonical(def);
    // A schema that cannot be canonicalized still needs a stable digest; its serialization is one.
    return core::sha256_hex(text ? *text : json::serialize(def));
}

std::string tool_definition_text(mcp::tool const& t) {
    auto def = json::value_from(t);
    auto text = core::canonical(def);
    return text ? *text : json::serialize(def);
}

catalogue::catalogue(catalogue_options options, std::shared_ptr<roster const> who, std::shared_ptr<session_runs> runs,
                     std::shared_ptr<relays> streams)
    : options_(std::move(options)), roster_(std::move(who)), runs_(std::move(runs)), streams_(std::move(streams)) {
    for (auto const& u : roster_->upstreams()) {
        if (!roster_->refused_by_egress(u.name)) continue;
        auto& c = states_[u.name];
        c.refused_by_egress = true;
        c.failed = true;
        c.retry_after = std::chrono::steady_clock::time_point::max();
    }
}

asio::any_io_executor catalogue::executor_or(asio::any_io_executor const& here) const {
    return options_.executor ? options_.executor : here;
}

bool catalogue::report_once(std::string key) {
    std::lock_guard lock(mutex_);
    return reported_.insert(std::move(key)).second;
}

void catalogue::report_ambiguous(std::string const& name, std::string const& first, std::string const& second) {
    if (!report_once("ambiguous " + name + " " + first + " " + second)) return;
    spdlog::error("tool name '{}' is exposed by both upstream {} and upstream {}; neither is listed or callable under it "
                  "(keep the default prefix on one of them)",
                  name, first, second);
}

bool catalogue::available(std::string const& server) const {
    std::lock_guard lock(mutex_);
    auto it = states_.find(server);
    return it == states_.end() || !it->second.failed;
}

bool catalogue::fresh(state const& c, gateway_upstream const& up, std::chrono::steady_clock::time_point now) const {
    // Fresh until its TTL (retry_after) passes; a failed read waits out its backoff the same way.
    // A reconnected upstream (a restarted child, a new HTTP session) is read again at once: its
    // tools are checked against their pins before any call is sent on the new connection.
    return now < c.retry_after && (c.failed || c.connection == up.client->connection());
}

void catalogue::start_read(gateway_upstream const& up, state& c, asio::any_io_executor const& exec) {
    if (c.reading || c.refused_by_egress) return;
    c.reading = true;
    c.read_started = std::chrono::steady_clock::now();
    c.late_reported = false;
    // Posted: mutex_ is held here, and co_spawn may start the read at once, which takes it.
    asio::post(exec, [exec, self = shared_from_this(), up = &up] {
        mcp::spawn_logged(exec, async_read(self, up), "gateway catalogue read");
    });
}

void catalogue::start_stale_reads(asio::any_io_executor const& exec) {
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    for (auto const& up : roster_->upstreams()) {
        auto& c = states_[up.name];
        if (!fresh(c, up, now)) start_read(up, c, exec);
    }
}

bool catalogue::passed_over(gateway_upstream const& up) const {
    std::lock_guard lock(mutex_);
    auto it = states_.find(up.name);
    if (it == states_.end()) return false;
    auto const& c = it->second;
    if (c.refused_by_egress) return true;
    // Connected: it answers requests, whatever its tools/list said (a server may serve only resources).
    if (up.client->connection() != 0) return false;
    return c.failed || (c.reading && std::chrono::steady_clock::now() >= c.read_started + options_.upstream_wait);
}

asio::awaitable<catalogue::snapshot> catalogue::async_entries(gateway_upstream const& up, wait how) {
    auto here = co_await asio::this_coro::executor;
    auto exec = executor_or(here);
    static auto const none = std::make_shared<std::vector<catalogue_entry> const>();
    // Bounded: a read outdated by a list_changed is followed by another, but not forever.
    for (int reads = 0;;) {
        auto now = std::chrono::steady_clock::now();
        auto until = std::chrono::steady_clock::time_point::max();
        auto woken = std::make_shared<waiter>(here);
        {
            std::lock_guard lock(mutex_);
            auto& c = states_[up.name];
            if (fresh(c, up, now) || c.refused_by_egress) co_return c.entries;
            if (!c.reading) {
                if (reads++ == 3) co_return c.entries;
                start_read(up, c, exec);
            }
            if (how == wait::merged) {
                // Down: its tools are out until a read succeeds, which this one may do meanwhile.
                if (c.failed) co_return c.entries;
                // Only due for its TTL re-read, on the connection it was read on and with no change
                // announced since: still what it serves.
                if (c.answered && c.listed_generation == c.generation && c.connection == up.client->connection())
                    co_return c.entries;
                until = c.read_started + options_.upstream_wait;
                if (now >= until) {
                    if (!std::exchange(c.late_reported, true))
                        spdlog::warn("upstream {}: its tools have not been read within {} ms; lists go on without "
                                     "them until it answers",
                                     up.name, options_.upstream_wait.count());
                    co_return none;
                }
            }
            c.waiting.push_back(woken);
        }
        // Woken when the read ends; a merged list gives up at upstream_wait (and looks once more).
        co_await woken->async_wait_until(until);
    }
}

asio::awaitable<void> catalogue::async_read(std::shared_ptr<catalogue> self, gateway_upstream const* up) {
    std::chrono::steady_clock::time_point started;
    std::uint64_t generation = 0;
    {
        std::lock_guard lock(self->mutex_);
        auto const& c = self->states_[up->name];
        started = c.read_started;
        generation = c.generation;
    }
    // Whichever way the read ends, the next caller may begin another, and those waiting look again.
    struct read_ends {
        catalogue& cat;
        std::string const& name;
        ~read_ends() {
            std::vector<std::shared_ptr<waiter>> waiting;
            {
                std::lock_guard lock(cat.mutex_);
                auto& c = cat.states_[name];
                c.reading = false;
                waiting = std::exchange(c.waiting, {});
            }
            for (auto const& w : waiting) w->wake();
        }
    } ends{*self, up->name};
    try {
        co_await self->async_read_tools(*up, started, generation);
    } catch (std::exception const& e) {
        spdlog::error("upstream {}: reading its tools failed: {}; retrying in {}s", up->name, e.what(), retry_backoff.count());
        std::lock_guard lock(self->mutex_);
        mark_down(self->states_[up->name], started + retry_backoff);
    }
}

void catalogue::mark_down(state& c, std::chrono::steady_clock::time_point retry_after) {
    c.entries = std::make_shared<std::vector<catalogue_entry> const>();
    c.failed = true;
    c.retry_after = retry_after;
}

asio::awaitable<void> catalogue::async_read_tools(gateway_upstream const& up, std::chrono::steady_clock::time_point now,
                                                  std::uint64_t generation) {
    auto listed = co_await up.client->async_list_tools();
    if (!listed) {
        // One upstream down must not break the others: its tools drop out until it answers again.
        spdlog::warn("upstream {}: tools unavailable ({}: {}); retrying in {}s", up.name, core::to_string(listed.error().kind),
                     listed.error().detail, retry_backoff.count());
        std::lock_guard lock(mutex_);
        mark_down(states_[up.name], now + retry_backoff);
        co_return;
    }
    std::vector<catalogue_entry> entries;
    std::size_t first_pins = 0;
    for (auto& t : *listed) entries.push_back(co_await async_entry_of(up, t, first_pins));
    report_unoffered_grants(up, *listed);
    // One line, not one per tool: `airlock pins list` shows each pin.
    if (first_pins)
        spdlog::info("upstream {}: {} tools listed, {} pinned for the first time (airlock pins list)", up.name,
                     entries.size(), first_pins);
    std::lock_guard lock(mutex_);
    take_read(up, states_[up.name], std::move(entries), now, generation);
}

void catalogue::report_unoffered_grants(gateway_upstream const& up, std::vector<mcp::upstream_tool> const& listed) {
    // A grant of a tool the upstream does not offer is silently useless: the tool is simply never
    // listed, and the operator sees nothing wrong. Each is logged once, when the list first shows it.
    std::vector<core::tool_id> offered;
    for (auto const& t : listed) offered.push_back(t.id);
    for (auto const& p : roster_->principals())
        for (auto const& hint : core::unoffered_grants(p.grants, up.name, offered))
            if (report_once("unoffered " + p.name + " " + hint)) spdlog::warn("principal {}: {}", p.name, hint);
}

asio::awaitable<catalogue_entry> catalogue::async_entry_of(gateway_upstream const& up, mcp::upstream_tool const& t,
                                                           std::size_t& first_pins) {
    catalogue_entry e{t.id, up.prefixed ? t.id.wire_name() : t.spec.name, t.spec, {}, false};
    // airlock does not run tool calls as tasks: it offers no `tasks` capability, and a tool that
    // can only be called as one could only fail.
    e.spec.execution.reset();
    if (mcp::requires_task(t.spec)) {
        e.withheld = "it can only be called as a task, which airlock does not offer";
        if (report_once("task " + up.name + "/" + t.upstream_name))
            spdlog::warn("upstream {}: {} can only be called as a task (execution.taskSupport \"required\"), "
                         "which airlock does not offer; the tool is withheld",
                         up.name, t.upstream_name);
    } else if (auto declared = mcp::param_headers_of(t.spec); !declared) {
        // A definition whose x-mcp-header annotations break the spec's rules is left out, as
        // the 2026-07-28 transport asks of clients; the other tools stay. Logged once per definition.
        e.withheld = "its x-mcp-header annotations break the 2026-07-28 rules";
        if (report_once("x-mcp-header " + up.name + "/" + t.upstream_name + " " + declared.error().message))
            spdlog::warn("upstream {}: {}; the tool is withheld", up.name, declared.error().message);
    } else if (!declared->empty()) {
        e.param_headers = true;
    }
    if (options_.pins) {
        auto digest = tool_definition_digest(t.spec);
        // Arguments are named before co_await throughout: GCC 12 mishandles temporaries there.
        auto pin_key = up.name + "/" + t.upstream_name;
        // The whole definition as the upstream sent it is kept with the pin, so that a change can
        // be reviewed (airlock pins show) before it is accepted.
        auto definition = tool_definition_text(t.spec);
        auto verdict = co_await options_.pins->async_check_pin(pin_key, digest, std::move(definition));
        if (!verdict) {
            spdlog::error("upstream {}: cannot check the pin of {}: {}; withheld", up.name, t.upstream_name,
                          verdict.error().message);
            e.withheld = "its pin could not be checked";
        } else if (*verdict == core::pin_verdict::changed) {
            // Rug-pull protection: a tool whose definition changed under the operator is withheld
            // until someone accepts the new definition (airlock pins accept).
            spdlog::warn("upstream {}: the definition of {} changed since it was pinned; withheld until accepted "
                         "(review it: airlock pins show {} {})",
                         up.name, t.upstream_name, up.name, t.upstream_name);
            e.withheld = "its definition changed since it was pinned (airlock pins accept)";
            if (report_once(pin_key + " " + digest)) co_await async_report_pin_change(up, t, digest);
        } else if (*verdict == core::pin_verdict::first_seen) {
            spdlog::debug("upstream {}: pinned {} ({})", up.name, t.upstream_name, digest.substr(0, 12));
            ++first_pins;
        }
    }
    if (auto removed = remove_hidden_characters(e.spec); !removed.empty()) {
        if (report_once("hidden " + up.name + "/" + t.upstream_name + " " + core::describe(removed)))
            spdlog::warn("upstream {}: the definition of {} holds characters a reader cannot see ({}); they are "
                         "removed from what callers are shown",
                         up.name, t.upstream_name, core::describe(removed));
    }
    co_return e;
}

asio::awaitable<void> catalogue::async_report_pin_change(gateway_upstream const& up, mcp::upstream_tool const& t,
                                                         std::string const& digest) {
    // Journaled once per new definition: an operator can see when a tool changed under them, and
    // what it changed to, before accepting it.
    auto version = options_.version;
    auto run = co_await runs_->async_gateway_run(std::move(version));
    if (!run) co_return;
    json::object note{{"event", "tool_definition_changed"},
                      {"server", up.name},
                      {"tool", t.upstream_name},
                      {"pending_digest", digest},
                      {"definition", json::value_from(t.spec)}};
    core::new_record rec{core::record_kind::note, std::move(note)};
    co_await runs_->async_journal(*run, std::move(rec));
}

void catalogue::take_read(gateway_upstream const& up, state& c, std::vector<catalogue_entry> entries,
                          std::chrono::steady_clock::time_point now, std::uint64_t generation) {
    c.entries = std::make_shared<std::vector<catalogue_entry> const>(std::move(entries));
    c.failed = false;
    c.answered = true;
    c.listed_generation = generation;
    if (!c.announced) c.announced = c.entries;
    c.connection = up.client->connection();
    // Re-read after the TTL even without list_changed: not every server sends it. A change
    // announced while this read was under way may not be in it: the next use reads again.
    c.retry_after = c.generation == generation ? now + catalogue_ttl : std::chrono::steady_clock::time_point{};
    // A change announced while the upstream could not be read is told now that it can be.
    // Posted: mutex_ is held here, and the re-read takes it.
    if (std::exchange(c.announce_pending, false) && options_.executor && !rereads_.contains(up.name)) {
        rereads_.try_emplace(up.name, false);
        auto exec = options_.executor;
        asio::post(exec, [exec, self = shared_from_this(), server = up.name] {
            mcp::spawn_logged(exec, async_reread(self, server), "gateway tools re-read");
        });
    }
}

asio::awaitable<std::vector<catalogue::tools_of_upstream>> catalogue::async_tools_by_upstream(gateway_principal const& p) {
    std::vector<tools_of_upstream> out;
    auto const label = label_of(p);
    // A name two upstreams expose (both `prefix: none`, or one unprefixed tool named like another
    // server's prefixed one) cannot be called unambiguously: neither is listed. Every granted tool
    // counts, listed or not, as it does when a call is resolved.
    std::map<std::string, std::string> first_server;
    std::set<std::string> ambiguous;
    // Every stale catalogue is read at once, and none is waited for past upstream_wait: one slow
    // or hung upstream leaves the list without its tools rather than holding up everyone's.
    auto here = co_await asio::this_coro::executor;
    start_stale_reads(executor_or(here));
    for (auto const& up : roster_->upstreams()) {
        auto entries = co_await async_entries(up, wait::merged);
        tools_of_upstream group{up.name, {}};
        for (auto const& e : *entries) {
            auto const* grant = p.grants.grant_for(e.id);
            if (!grant) continue;
            auto [it, first] = first_server.try_emplace(e.exposed_name, up.name);
            if (!first && it->second != up.name) {
                ambiguous.insert(e.exposed_name);
                report_ambiguous(e.exposed_name, it->second, up.name);
            }
            // A tool the gates refuse whatever its arguments is not offered: a call could only be refused.
            if (!e.withheld.empty() || !core::refused_whatever_the_arguments(*grant, label)) continue;
            auto t = json::value_from(e.spec).as_object();
            t["name"] = e.exposed_name;
            if (!grant->description.empty()) t["description"] = grant->description;
            group.second.push_back(std::move(t));
        }
        out.push_back(std::move(group));
    }
    if (!ambiguous.empty())
        for (auto& group : out)
            std::erase_if(group.second, [&](json::object const& t) {
                return ambiguous.contains(std::string(t.at("name").get_string()));
            });
    co_return out;
}

asio::awaitable<core::result<std::shared_ptr<catalogue_entry const>>> catalogue::async_resolve(gateway_principal const& p,
                                                                                              std::string const& name) {
    // Byte-for-byte among the principal's grants: no trimming, no case folding, no near misses.
    std::shared_ptr<catalogue_entry const> found;
    auto const& ups = roster_->upstreams();
    bool const any_unprefixed = std::ranges::any_of(ups, [](auto const& u) { return !u.prefixed; });
    // A prefixed name says which upstream serves it: only that one is waited for (as long as it
    // takes), and the unprefixed ones, which could expose the same name, no longer than a merged
    // list waits for them. Other upstreams are not asked at all.
    auto const named = core::tool_id::from_wire_name(name);
    for (auto const& up : ups) {
        bool const owner = up.prefixed && named && named->server() == up.name;
        if (up.prefixed && !owner) continue;
        auto entries = co_await async_entries(up, owner ? wait::own : wait::merged);
        for (auto const& e : *entries) {
            if (e.exposed_name != name || !p.grants.grant_for(e.id)) continue;
            if (found && found->id.server() != e.id.server()) {
                report_ambiguous(name, found->id.server(), e.id.server());
                co_return core::make_error("ambiguous", "tool name exposed by both upstream " + found->id.server() +
                                                            " and upstream " + e.id.server());
            }
            if (!found) found = std::shared_ptr<catalogue_entry const>(entries, &e);
        }
        // Prefixed names are unique among prefixed upstreams: only an unprefixed one can repeat them.
        if (found && !any_unprefixed) break;
    }
    co_return found;
}

void catalogue::list_changed(std::string const& server) {
    spdlog::debug("upstream {}: tool list changed", server);
    // With no stream to tell, the next read (by whoever needs the tools) is the new baseline:
    // reading now would only load an upstream that may be busy starting up or going away.
    bool const heard = streams_->heard(server);
    {
        std::lock_guard lock(mutex_);
        auto& c = states_[server];
        c.retry_after = {};  // re-read on next use
        ++c.generation;      // and a read under way may have missed the change
        if (!heard) {
            c.announced.reset();
            return;
        }
        // Servers send several in a row (one per tool they register): one more read answers them all.
        auto [it, first] = rereads_.try_emplace(server, false);
        if (!first) {
            it->second = true;
            return;
        }
    }
    if (!options_.executor) return;
    mcp::spawn_logged(options_.executor, async_reread(shared_from_this(), server), "gateway tools re-read");
}

// A list_changed passed on as it came would make every client list again for each notice, even
// when nothing it sees changed (a tool it is not granted, the same definitions re-announced).
asio::awaitable<void> catalogue::async_reread(std::shared_ptr<catalogue> self, std::string server) {
    auto const* up = self->roster_->upstream(server);
    for (;;) {
        snapshot now, was;
        if (up) now = co_await self->async_entries(*up);
        {
            std::lock_guard lock(self->mutex_);
            auto& c = self->states_[server];
            // A failed read says nothing about the list: the streams hear when it answers again.
            if (now && !c.failed) {
                was = std::exchange(c.announced, now);
            } else {
                c.announce_pending = true;
                now.reset();
            }
        }
        std::vector<relays::notification_sink> sinks;
        if (was) {
            auto changed = [&](gateway_principal const& p) { return shown(p, *was) != shown(p, *now); };
            sinks = self->streams_->sinks_where(server, changed);
        }
        if (!sinks.empty()) spdlog::info("upstream {}: tool list changed; telling {} notification stream(s)", server, sinks.size());
        mcp::notification n{"notifications/tools/list_changed", std::nullopt};
        for (auto const& s : sinks) s(n);
        std::lock_guard lock(self->mutex_);
        auto it = self->rereads_.find(server);
        if (it == self->rereads_.end() || !it->second) {
            if (it != self->rereads_.end()) self->rereads_.erase(it);
            co_return;
        }
        it->second = false;
        auto& c = self->states_[server];
        c.retry_after = {};
        ++c.generation;
    }
}

std::vector<std::pair<std::string, upstream_state>> catalogue::states() const {
    std::vector<std::pair<std::string, upstream_state>> out;
    std::lock_guard lock(mutex_);
    for (auto const& up : roster_->upstreams()) {
        auto it = states_.find(up.name);
        auto state = it == states_.end()              ? upstream_state::unknown
                     : it->second.refused_by_egress ? upstream_state::refused
                     : it->second.failed            ? upstream_state::down
                     : it->second.answered          ? upstream_state::up
                                                    : upstream_state::unknown;
        out.emplace_back(up.name, state);
    }
    return out;
}

asio::awaitable<void> catalogue::async_connect() {
    // All at once: an upstream that is slow to start (or never answers) delays none of the others.
    // Each read connects as it lists; a failure is logged there and retried on demand.
    auto here = co_await asio::this_coro::executor;
    start_stale_reads(executor_or(here));
    for (auto const& up : roster_->upstreams()) co_await async_entries(up, wait::merged);
}

asio::awaitable<void> catalogue::async_probe() {
    // Stale catalogues are read in the background, and every upstream is pinged at the same time:
    // one that hangs leaves the states of the others up to date.
    auto here = co_await asio::this_coro::executor;
    auto exec = executor_or(here);
    start_stale_reads(exec);
    auto const& ups = roster_->upstreams();
    if (ups.empty()) co_return;
    auto pending = std::make_shared<std::atomic<std::size_t>>(ups.size());
    auto all_done = std::make_shared<waiter>(here);
    for (auto const& up : ups)
        mcp::spawn_logged(exec, async_probe_one(shared_from_this(), &up, pending, all_done), "gateway readiness probe");
    co_await all_done->async_wait_until(std::chrono::steady_clock::time_point::max());
}

asio::awaitable<void> catalogue::async_probe_one(std::shared_ptr<catalogue> self, gateway_upstream const* upstream,
                                                 std::shared_ptr<std::atomic<std::size_t>> pending,
                                                 std::shared_ptr<waiter> all_done) {
    // The last probe to end, whichever way, wakes async_probe.
    struct counted {
        std::shared_ptr<std::atomic<std::size_t>> n;
        std::shared_ptr<waiter> w;
        ~counted() {
            if (--*n == 0) w->wake();
        }
    } done{std::move(pending), std::move(all_done)};
    auto const& up = *upstream;
    auto now = std::chrono::steady_clock::now();
    // A fresh snapshot says nothing of an upstream that has gone away since (an HTTP server is
    // not watched between requests): one that was up is pinged, at most every few seconds.
    bool ping = false;
    {
        std::lock_guard lock(self->mutex_);
        auto& c = self->states_[up.name];
        if (!c.failed && c.answered && now >= c.next_ping) {
            c.next_ping = now + ping_interval;
            ping = true;
        }
    }
    if (!ping) co_return;
    auto alive = co_await up.client->async_ping(ping_deadline);
    {
        // A busy server may miss one ping's deadline: only a second miss in a row counts, while
        // a server that cannot be reached at all counts at once.
        std::lock_guard lock(self->mutex_);
        auto& c = self->states_[up.name];
        if (alive) {
            c.missed_pings = 0;
            co_return;
        }
        if (alive.error().kind == core::tool_error_kind::timed_out && ++c.missed_pings < 2) co_return;
        c.missed_pings = 0;
    }
    spdlog::warn("upstream {}: does not answer a ping ({}: {}); its tools are unavailable, retrying in {}s", up.name,
                 core::to_string(alive.error().kind), alive.error().detail, retry_backoff.count());
    std::lock_guard lock(self->mutex_);
    mark_down(self->states_[up.name], std::chrono::steady_clock::now() + retry_backoff);
}

}  // namespace airlock::service
