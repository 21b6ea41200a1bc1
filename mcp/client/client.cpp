#include "mcp/client/client.hpp"

#include "core/provenance.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

namespace airlock::mcp {

namespace asio = boost::asio;
using core::tool_error;
using core::tool_error_kind;

namespace {

// Whether whoever awaits this coroutine has cancelled it (its client left). A request that failed
// for that reason says nothing of the server: the session it went out on stays in use, and the
// next caller does not start a new handshake with a healthy server.
asio::awaitable<bool> async_caller_gave_up() {
    auto state = co_await asio::this_coro::cancellation_state;
    co_return state.cancelled() != asio::cancellation_type::none;
}

}  // namespace

core::result<std::string> airlock_tool_name(std::string_view upstream_name) {
    // "__" (an upstream that is itself a gateway: another airlock's server__tool) becomes "_.",
    // shown on the wire as "_-": outer__inner_-tool. The client maps names back through the
    // listing, so the escape never has to be undone by parsing.
    auto name = core::ref_spelling(upstream_name);
    if (auto p = core::tool_id_component_problem(name, "tool name"); !p.empty())
        return core::make_error("unrepresentable_tool_name", "upstream tool '" + std::string(upstream_name) + "': " + p);
    return name;
}

mcp_client::mcp_client(std::unique_ptr<transport> t, client_options options)
    : transport_(std::move(t)), options_(std::move(options)) {}

mcp_client::~mcp_client() = default;

era mcp_client::current_era() const {
    std::lock_guard lock(mutex_);
    return era_;
}

std::string mcp_client::protocol_version() const {
    std::lock_guard lock(mutex_);
    return version_;
}

std::optional<std::string> mcp_client::instructions() const {
    std::lock_guard lock(mutex_);
    return instructions_;
}

std::optional<boost::json::object> mcp_client::server_capabilities() const {
    std::lock_guard lock(mutex_);
    return server_capabilities_;
}

core::destination mcp_client::destination_of(core::tool_id const&) const { return transport_->destination(); }

core::destination mcp_client::destination() const { return transport_->destination(); }

std::uint64_t mcp_client::connection() const {
    std::lock_guard lock(mutex_);
    return connected_ && transport_->losses() == losses_at_handshake_ ? handshakes_ : 0;
}

std::string mcp_client::next_id() { return "airlock-" + std::to_string(++ids_); }

tool_error mcp_client::to_tool_error(transport_error const& e, std::string const& tool) const {
    tool_error_kind k = tool_error_kind::unreachable;
    switch (e.what) {
        case transport_error::kind::not_sent: k = tool_error_kind::unreachable; break;
        case transport_error::kind::no_reply:
        case transport_error::kind::deadline:
        case transport_error::kind::cancelled: k = tool_error_kind::timed_out; break;
        case transport_error::kind::session_expired: k = tool_error_kind::unreachable; break;
        case transport_error::kind::http_status:
            // A 4xx says the server turned the request away; a 5xx may have come after the work.
            k = (e.http_status >= 400 && e.http_status < 500) ? tool_error_kind::refused : tool_error_kind::timed_out;
            break;
        case transport_error::kind::protocol: k = tool_error_kind::malformed; break;
    }
    return tool_error{k, tool, options_.server_name + ": " + std::string(to_string(e.what)) + ": " + e.detail};
}

asio::awaitable<core::tool_result<void>> mcp_client::async_connect() { co_return co_await async_ensure_connected(); }

asio::awaitable<core::tool_result<void>> mcp_client::async_ensure_connected() {
    // One coroutine connects; others wait for it. Connecting is rare (start, restart, expired
    // session), so waiting by polling a short timer is simpler than an async condition variable.
    auto started = std::chrono::steady_clock::now();
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            // A server lost since the handshake (a stdio child that exited while idle) is another
            // server: it gets its own handshake, and connection() changes.
            if (connected_ && transport_->losses() != losses_at_handshake_) connected_ = false;
            if (connected_) co_return core::tool_result<void>{};
            if (!connecting_) {
                connecting_ = true;
                losses_at_handshake_ = transport_->losses();
                break;
            }
        }
        if (std::chrono::steady_clock::now() - started > options_.connect_deadline)
            co_return tool_error{tool_error_kind::unreachable, "", options_.server_name + ": connect timed out"};
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(10));
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }

    // Whichever way this coroutine ends (an error, or an exception when its caller was cancelled
    // before the handshake could start), the next caller may connect: a flag left set would make
    // every later caller wait connect_deadline and fail "connect timed out" while the server is fine.
    struct connecting_ends {
        mcp_client& c;
        ~connecting_ends() {
            std::lock_guard lock(c.mutex_);
            c.connecting_ = false;
        }
    } ends{*this};
    // The handshake is every waiting caller's, not only this one's: a caller that gives up (its
    // client disconnected) must not cut it off halfway, so it runs without the caller's
    // cancellation and this caller waits for it to end (each of its steps has a deadline).
    auto exec = co_await asio::this_coro::executor;
    auto handshake = async_handshake();
    auto uncancelled = asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable);
    co_return co_await asio::co_spawn(exec, std::move(handshake), uncancelled);
}

asio::awaitable<core::tool_result<void>> mcp_client::async_handshake() {
    auto opened = co_await transport_->async_open();
    if (!opened) co_return to_tool_error(opened.error(), "");

    era_detector::options dopts;
    dopts.transport = options_.kind;
    dopts.client_info = options_.client_info;
    dopts.client_capabilities = options_.capabilities;
    era_detector detector(dopts);
    auto step = detector.start();
    for (int round = 0; round < 8; ++round) {
        switch (step.kind) {
            case era_detector::step_kind::send: {
                request_options ro;
                ro.deadline = options_.connect_deadline;
                auto reply = co_await transport_->async_request(*step.request, ro);
                if (reply) {
                    step = detector.on_reply(probe_reply{std::nullopt, std::move(*reply)});
                } else if (reply.error().what == transport_error::kind::deadline) {
                    step = detector.on_timeout();
                } else if (reply.error().what == transport_error::kind::http_status) {
                    step = detector.on_reply(probe_reply{reply.error().http_status, std::nullopt});
                } else {
                    co_return to_tool_error(reply.error(), "");
                }
                break;
            }
            case era_detector::step_kind::done: {
                transport_->set_protocol_version(step.version);
                if (step.notification) {
                    auto sent = co_await transport_->async_notify(*step.notification);
                    if (!sent) co_return to_tool_error(sent.error(), "");
                }
                spdlog::info("upstream {}: {} era, protocol {} ({})", options_.server_name, to_string(step.decided_era),
                             step.version, step.reason);
                std::lock_guard lock(mutex_);
                era_ = step.decided_era;
                version_ = step.version;
                if (step.initialized) {
                    server_capabilities_ = step.initialized->capabilities;
                    instructions_ = step.initialized->instructions;
                } else if (step.discovered) {
                    server_capabilities_ = step.discovered->capabilities;
                    instructions_ = step.discovered->instructions;
                } else if (!server_capabilities_) {
                    // Modern without a DiscoverResult (chosen from an error's version list): the
                    // server said nothing about itself; an empty set promises nothing.
                    server_capabilities_ = boost::json::object{};
                }
                connected_ = true;
                ++handshakes_;
                co_return core::tool_result<void>{};
            }
            case era_detector::step_kind::failed:
                co_return tool_error{tool_error_kind::unreachable, "",
                                     options_.server_name + ": cannot agree on a protocol: " + step.reason};
            case era_detector::step_kind::wait:
                co_return tool_error{tool_error_kind::malformed, "",
                                     options_.server_name + ": unexpected reply during the handshake"};
        }
    }
    co_return tool_error{tool_error_kind::malformed, "", options_.server_name + ": handshake did not settle"};
}

asio::awaitable<transport_result<message>> mcp_client::async_send(std::string method, boost::json::object params,
                                                                  request_options opts) {
    era e;
    std::string version;
    {
        std::lock_guard lock(mutex_);
        e = era_;
        version = version_;
    }
    auto id = next_id();
    bool wants_progress = static_cast<bool>(opts.on_notification);
    if (e == era::modern) {
        request_meta meta;
        meta.protocol_version = version;
        meta.client_info = options_.client_info;
        if (wants_progress) meta.progress = progress_token{id};
        set_request_meta(params, meta);
    } else if (wants_progress) {
        auto& m = params["_meta"];
        if (!m.is_object()) m = boost::json::object{};
        m.as_object()[meta_key::progress_token] = id;
    }
    request req{id, std::move(method), std::move(params)};
    co_return co_await transport_->async_request(std::move(req), std::move(opts));
}

asio::awaitable<core::tool_result<std::vector<upstream_tool>>> mcp_client::async_list_tools() {
    if (auto c = co_await async_ensure_connected(); !c) co_return c.error();
    std::vector<upstream_tool> out;
    std::map<std::string, std::string> names;
    std::map<std::string, std::shared_ptr<tool const>> specs;
    std::optional<std::string> cursor;
    // Bounded: a server that pages forever is cut off rather than followed forever.
    for (int page = 0; page < 1000; ++page) {
        boost::json::object params;
        if (cursor) params["cursor"] = *cursor;
        request_options ro;
        ro.deadline = options_.call_deadline;
        auto reply = co_await async_send(std::string(method::tools_list), std::move(params), ro);
        if (!reply) {
            auto const what = reply.error().what;
            bool const gave_up = co_await async_caller_gave_up();
            if (what != transport_error::kind::not_sent && what != transport_error::kind::protocol &&
                what != transport_error::kind::cancelled && !gave_up) {
                std::lock_guard lock(mutex_);
                connected_ = false;
            }
            co_return to_tool_error(reply.error(), "");
        }
        if (auto const* err = std::get_if<error_response>(&*reply))
            co_return tool_error{tool_error_kind::refused, "",
                                 options_.server_name + ": tools/list: " + err->error.message};
        auto const* res = std::get_if<response>(&*reply);
        if (!res) co_return tool_error{tool_error_kind::malformed, "", options_.server_name + ": tools/list: not a response"};
        auto listed = parse_list_tools_result(res->result);
        if (!listed) co_return tool_error{tool_error_kind::malformed, "", options_.server_name + ": " + listed.error().message};
        for (auto const& r : listed->rejected)
            spdlog::warn("upstream {}: tool #{} '{}' skipped: {}", options_.server_name, r.index, r.name, r.reason);
        for (auto& t : listed->tools) {
            auto name = airlock_tool_name(t.name);
            if (!name) {
                spdlog::warn("upstream {}: {}", options_.server_name, name.error().message);
                continue;
            }
            auto id = core::tool_id::make(options_.server_name, *name);
            if (!id) {
                spdlog::warn("upstream {}: tool '{}': {}", options_.server_name, t.name, id.error().message);
                continue;
            }
            if (names.contains(*name)) {
                spdlog::warn("upstream {}: tools '{}' and '{}' both map to {}; the second is skipped",
                             options_.server_name, names[*name], t.name, id->uri());
                continue;
            }
            names[*name] = t.name;
            specs[t.name] = std::make_shared<tool const>(t);
            out.push_back(upstream_tool{*id, t.name, std::move(t)});
        }
        if (!listed->next_cursor || listed->next_cursor->empty()) break;
        cursor = listed->next_cursor;
    }
    {
        std::lock_guard lock(mutex_);
        upstream_names_ = std::move(names);
        upstream_specs_ = std::move(specs);
    }
    co_return out;
}

namespace {

// Progress notifications of a call go to its progress callback; every other notification to the
// caller's notification callback. Empty when the caller wants neither.
std::function<void(notification const&)> progress_router(std::function<void(progress_params const&)> on_progress,
                                                          std::function<void(notification const&)> on_notification) {
    if (!on_progress && !on_notification) return {};
    return [on_progress = std::move(on_progress), on_notification = std::move(on_notification)](notification const& n) {
        if (n.method != method::progress) {
            if (on_notification) on_notification(n);
            return;
        }
        if (!on_progress || !n.params) return;
        if (auto p = parse_progress_params(*n.params)) on_progress(*p);
    };
}

// A JSON-RPC error to tools/call: the codes that say the request itself was wrong are a refusal
// (nothing ran); any other code is the tool failing.
tool_error call_error(error_response const& err, std::string const& uri) {
    auto const code = err.error.code;
    bool const refused = code == rpc_code::parse_error || code == rpc_code::invalid_request ||
                         code == rpc_code::method_not_found || code == rpc_code::invalid_params ||
                         code == rpc_code::header_mismatch || code == rpc_code::missing_required_client_capability ||
                         code == rpc_code::unsupported_protocol_version;
    return tool_error{refused ? tool_error_kind::refused : tool_error_kind::tool_failed, uri,
                      "JSON-RPC error " + std::to_string(code) + ": " + err.error.message};
}

tool_error about(tool_error e, std::string const& uri) {
    e.tool = uri;
    return e;
}

bool same_definition(mcp::tool const* before, mcp::tool const* now) {
    return before && now && now->name == before->name && now->description == before->description &&
           now->input_schema == before->input_schema;
}

}  // namespace

asio::awaitable<core::tool_result<call_tool_result>> mcp_client::async_call_tool(
    core::tool_id tool, boost::json::value arguments, std::optional<core::provenance> prov,
    std::function<void(progress_params const&)> on_progress, std::optional<std::chrono::milliseconds> deadline,
    std::function<void(notification const&)> on_notification, server_request_handler on_server_request) {
    auto const uri = tool.uri();
    if (tool.server() != options_.server_name)
        co_return tool_error{tool_error_kind::unreachable, uri,
                             "this client serves '" + options_.server_name + "', not '" + tool.server() + "'"};
    if (!arguments.is_object() && !arguments.is_null())
        co_return tool_error{tool_error_kind::refused, uri, "arguments must be a JSON object"};
    if (auto c = co_await async_ensure_connected(); !c) co_return about(c.error(), uri);
    // The definition travels with the call: a modern HTTP transport mirrors its x-mcp-header
    // arguments into headers. Held, so a concurrent re-listing cannot pull it away mid-call.
    std::shared_ptr<mcp::tool const> spec;
    auto lookup = [&]() -> std::optional<std::string> {
        std::lock_guard lock(mutex_);
        auto it = upstream_names_.find(tool.name());
        if (it == upstream_names_.end()) return std::nullopt;
        if (auto s = upstream_specs_.find(it->second); s != upstream_specs_.end()) spec = s->second;
        return it->second;
    };
    auto upstream = lookup();
    if (!upstream) {
        // The catalogue may be stale (or never read): read it once before refusing.
        if (auto listed = co_await async_relist_for(uri); !listed) co_return listed.error();
        upstream = lookup();
        if (!upstream) co_return tool_error{tool_error_kind::refused, uri, options_.server_name + " has no such tool"};
    }

    for (int attempt = 0; attempt < 2; ++attempt) {
        boost::json::object params;
        params["name"] = *upstream;
        if (arguments.is_object()) params["arguments"] = arguments;
        if (prov) core::attach_provenance(params, *prov);
        request_options ro;
        ro.deadline = deadline.value_or(options_.call_deadline);
        ro.called = spec.get();
        ro.on_server_request = on_server_request;
        ro.on_notification = progress_router(on_progress, on_notification);
        auto reply = co_await async_send(std::string(method::tools_call), std::move(params), std::move(ro));
        if (!reply) {
            auto const& te = reply.error();
            if (te.what == transport_error::kind::session_expired && attempt == 0) {
                // Legacy HTTP: the server forgot our session before the call ran; start a new one
                // and send again once. Nothing ran, so this cannot double an effect.
                {
                    std::lock_guard lock(mutex_);
                    connected_ = false;
                }
                if (auto c = co_await async_ensure_connected(); !c) co_return about(c.error(), uri);
                // A new session may be a new server: the call goes again only to the same
                // definition of the tool as the one it was made for.
                auto before = spec;
                if (auto listed = co_await async_relist_for(uri); !listed) co_return listed.error();
                upstream = lookup();
                if (!upstream || !same_definition(before.get(), spec.get()))
                    co_return tool_error{tool_error_kind::refused, uri,
                                         options_.server_name + ": the server's session ended and its new session " +
                                             "lists this tool differently; the call was not sent again"};
                continue;
            }
            bool const gave_up = co_await async_caller_gave_up();
            if ((te.what == transport_error::kind::no_reply || te.what == transport_error::kind::not_sent) && !gave_up) {
                std::lock_guard lock(mutex_);
                connected_ = false;  // a restarted child needs a new handshake
            }
            co_return to_tool_error(te, uri);
        }
        if (auto const* err = std::get_if<error_response>(&*reply)) co_return call_error(*err, uri);
        auto const* res = std::get_if<response>(&*reply);
        if (!res) co_return tool_error{tool_error_kind::malformed, uri, "the reply is not a response"};
        auto parsed = parse_call_tool_result(res->result);
        if (!parsed) co_return tool_error{tool_error_kind::malformed, uri, parsed.error().message};
        co_return std::move(*parsed);
    }
    co_return tool_error{tool_error_kind::unreachable, uri, "session could not be re-established"};
}

asio::awaitable<core::tool_result<boost::json::value>> mcp_client::async_call(core::tool_id tool,
                                                                             boost::json::value arguments,
                                                                             std::optional<core::provenance> prov) {
    auto uri = tool.uri();
    auto r = co_await async_call_tool(std::move(tool), std::move(arguments), std::move(prov));
    if (!r) co_return r.error();
    if (r->is_error.value_or(false)) {
        std::string text;
        for (auto const& block : r->content) {
            auto const* o = block.if_object();
            if (!o) continue;
            auto const* t = o->if_contains("text");
            if (t && t->is_string()) {
                if (!text.empty()) text += "\n";
                text += t->get_string();
            }
        }
        co_return tool_error{tool_error_kind::tool_failed, uri, text.empty() ? "the tool reported an error" : text};
    }
    if (r->structured_content) co_return *r->structured_content;
    co_return boost::json::value(boost::json::object{{"content", r->content}});
}

void mcp_client::set_notification_handler(std::function<void(notification const&)> handler) {
    transport_->set_notification_handler(std::move(handler));
}

void mcp_client::set_server_request_handler(server_request_handler handler) {
    transport_->set_server_request_handler(std::move(handler));
}

asio::awaitable<forward_result> mcp_client::async_forward(std::string method, boost::json::object params,
                                                         forward_options opts) {
    auto failed = [this, &method](std::string why) {
        return forward_result(error_object{rpc_code::internal_error,
                                           "upstream " + options_.server_name + ": " + method + ": " + why, std::nullopt});
    };
    if (auto c = co_await async_ensure_connected(); !c) co_return failed(c.error().detail);
    // The caller's progress token means nothing to this server: airlock's own replaces it when the
    // caller wants notifications, and is removed otherwise.
    if (auto* m = params.if_contains("_meta"); m && m->is_object()) {
        m->as_object().erase(meta_key::progress_token);
        if (m->as_object().empty()) params.erase("_meta");
    }
    request_options ro;
    ro.deadline = opts.deadline.value_or(options_.call_deadline);
    ro.on_notification = std::move(opts.on_notification);
    ro.on_server_request = std::move(opts.on_server_request);
    auto reply = co_await async_send(method, std::move(params), std::move(ro));
    if (!reply) {
        auto const& te = reply.error();
        bool const gave_up = co_await async_caller_gave_up();
        if (te.what == transport_error::kind::session_expired ||
            ((te.what == transport_error::kind::no_reply || te.what == transport_error::kind::not_sent) && !gave_up)) {
            std::lock_guard lock(mutex_);
            connected_ = false;  // the next request starts a new handshake
        }
        co_return failed(std::string(to_string(te.what)) + ": " + te.detail);
    }
    if (auto* err = std::get_if<error_response>(&*reply)) co_return std::move(err->error);
    auto* res = std::get_if<response>(&*reply);
    if (!res) co_return failed("the reply is not a response");
    co_return std::move(res->result);
}

asio::awaitable<core::tool_result<void>> mcp_client::async_relist_for(std::string const& uri) {
    auto listed = co_await async_list_tools();
    if (listed) co_return core::tool_result<void>{};
    auto e = listed.error();
    e.tool = uri;
    co_return e;
}

asio::awaitable<core::tool_result<void>> mcp_client::async_ping(std::chrono::milliseconds deadline) {
    // A server that forgot our session is alive: the ping goes again on a new session, once.
    for (int attempt = 0;; ++attempt) {
        if (auto c = co_await async_ensure_connected(); !c) co_return c.error();
        request_options ro;
        ro.deadline = deadline;
        std::string method = "ping";
        boost::json::object params;
        auto reply = co_await async_send(std::move(method), std::move(params), std::move(ro));
        if (reply) co_return core::tool_result<void>{};
        auto const& te = reply.error();
        bool const gave_up = co_await async_caller_gave_up();
        if (te.what == transport_error::kind::session_expired ||
            ((te.what == transport_error::kind::no_reply || te.what == transport_error::kind::not_sent) && !gave_up)) {
            std::lock_guard lock(mutex_);
            connected_ = false;
        }
        if (te.what != transport_error::kind::session_expired || attempt > 0) co_return to_tool_error(te, "");
    }
}

asio::awaitable<void> mcp_client::async_close() {
    co_await transport_->async_close();
    std::lock_guard lock(mutex_);
    connected_ = false;
}

}  // namespace airlock::mcp
