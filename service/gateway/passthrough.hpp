#pragma once
// Everything of an upstream other than its tools, governed per server: a principal sees the
// resources, resource templates and prompts of an upstream only when it sees that upstream (it is
// granted at least one of its tools). Lists are merged across upstreams in configuration order and
// paged with airlock's own cursors; every resources/read and prompts/get is journaled (a note:
// who read or got what); completion, subscriptions and logging/setLevel go to the owning upstreams.
// Its own lock, over who owns which URI, template and prompt, and who subscribes to what.

#include "mcp/protocol/list_cursor.hpp"
#include "mcp/server/backend.hpp"
#include "service/gateway/catalogue.hpp"
#include "service/gateway/relays.hpp"
#include "service/gateway/roster.hpp"
#include "service/gateway/session_runs.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::service {

// The position params.cursor names (nullopt: the first page), or why the cursor is refused.
core::result<std::optional<mcp::list_position>> cursor_of(mcp::list_cursor_sealer const& cursors, mcp::request const& req,
                                                          std::string_view list, std::string const& principal);

struct passthrough_options {
    std::size_t list_page_size = 100;
    std::optional<std::chrono::milliseconds> call_deadline;  // every forwarded request's, when set
};

class passthrough {
public:
    passthrough(passthrough_options options, std::shared_ptr<roster const> who, std::shared_ptr<catalogue const> tools,
                std::shared_ptr<session_runs> runs, std::shared_ptr<relays> streams,
                std::shared_ptr<mcp::list_cursor_sealer const> cursors);

    // resources/*, prompts/*, completion/complete, logging/setLevel, ping; -32601 for anything else.
    boost::asio::awaitable<mcp::handler_result> async_handle(mcp::request const& req, mcp::request_context& ctx);

    // The sessions (session_runs::key_of keys) subscribed to `uri`.
    std::set<std::string> subscribers_of(std::string const& uri) const;
    // A session ended: its subscriptions end with it; an upstream nobody else listens to is told.
    // Needs an executor for the unsubscribes it sends.
    void session_closed(std::string const& session_id, boost::asio::any_io_executor const& exec);

    struct list_kind;

private:
    boost::asio::awaitable<mcp::handler_result> async_list(list_kind const& kind, mcp::request const& req,
                                                          gateway_principal const& p);
    boost::asio::awaitable<mcp::handler_result> async_list_page(gateway_upstream const& up, list_kind const& kind,
                                                                boost::json::object params);
    // Learns who owns what from a listed item (URIs are never renamed; prompt names are when prefixed).
    void learn_owner(gateway_upstream const& up, list_kind const& kind, boost::json::object const& item);  // under mutex_
    boost::asio::awaitable<boost::json::array> async_list_all(gateway_upstream const& up, list_kind const& kind);
    boost::asio::awaitable<void> async_refresh(gateway_principal const& p, list_kind const& kind);
    boost::asio::awaitable<gateway_upstream const*> async_resource_owner(gateway_principal const& p, std::string const& uri);
    boost::asio::awaitable<std::optional<std::pair<gateway_upstream const*, std::string>>> async_prompt_owner(
        gateway_principal const& p, std::string const& exposed);
    boost::asio::awaitable<mcp::handler_result> async_forward(gateway_upstream const& up, std::string method,
                                                              boost::json::object params, mcp::request_context& ctx);
    boost::asio::awaitable<mcp::handler_result> async_read(gateway_principal const* p, mcp::request const& req,
                                                           boost::json::object params, mcp::request_context& ctx);
    boost::asio::awaitable<mcp::handler_result> async_subscribe(gateway_principal const& p, std::string const& uri,
                                                                bool subscribe, mcp::request_context& ctx);
    boost::asio::awaitable<mcp::handler_result> async_get_prompt(gateway_principal const* p, boost::json::object params,
                                                                 mcp::request_context& ctx);
    boost::asio::awaitable<mcp::handler_result> async_complete(gateway_principal const* p, boost::json::object params,
                                                               mcp::request_context& ctx);
    boost::asio::awaitable<mcp::handler_result> async_set_level(gateway_principal const& p, boost::json::object params,
                                                                mcp::request_context& ctx);

    passthrough_options options_;
    std::shared_ptr<roster const> roster_;
    std::shared_ptr<catalogue const> tools_;
    std::shared_ptr<session_runs> runs_;
    std::shared_ptr<relays> streams_;
    std::shared_ptr<mcp::list_cursor_sealer const> cursors_;

    mutable std::mutex mutex_;
    std::set<std::string> reported_;  // problems already logged once
    // Who owns what, learnt from listings (URIs are never renamed; prompt names are when prefixed).
    std::map<std::string, std::string> resource_owner_;                        // uri → upstream
    std::vector<std::pair<std::string, std::string>> template_owner_;           // (uriTemplate, upstream)
    std::map<std::string, std::pair<std::string, std::string>> prompt_owner_;  // exposed → (upstream, name)
    // Resource subscriptions: uri → (session key → principal); the upstream is subscribed while any remain.
    std::map<std::string, std::map<std::string, std::string>> subscribers_;
    std::map<std::string, std::string> subscribed_upstream_;  // uri → upstream
};

}  // namespace airlock::service
