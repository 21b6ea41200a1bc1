#pragma once
// One tools/call, performed: the caller's run admitted, the tool resolved in the catalogue, the
// plan made (call_plan.hpp), a refusal journaled, or the call journaled before it leaves, signed,
// sent with the caller's cancellation, progress and questions relayed, and its outcome journaled
// after the reply.

#include "core/provenance.hpp"
#include "mcp/server/backend.hpp"
#include "service/gateway/call_plan.hpp"
#include "service/gateway/catalogue.hpp"
#include "service/gateway/relays.hpp"
#include "service/gateway/roster.hpp"
#include "service/gateway/session_runs.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace airlock::service {

class airlock_metrics;

struct call_options {
    std::shared_ptr<core::provenance_signer const> signer;  // absent: calls carry an unsigned block
    std::chrono::seconds provenance_lifetime{300};
    std::optional<std::chrono::milliseconds> call_deadline;  // every call's, when set
    std::function<std::chrono::system_clock::time_point()> clock;
    std::function<void(std::uint8_t*, std::size_t)> random;
    std::shared_ptr<airlock_metrics> metrics;  // calls and denials are counted here when set
};

class call {
public:
    call(call_options options, std::shared_ptr<roster const> who, std::shared_ptr<catalogue> tools,
         std::shared_ptr<session_runs> runs, std::shared_ptr<relays> streams);

    boost::asio::awaitable<mcp::handler_result> async_run(mcp::request const& req, mcp::request_context& ctx);

private:
    // What plan_call needs to know of the upstream the call concerns.
    std::optional<upstream_facts> facts_of(std::string const& name, catalogue_entry const* resolved) const;
    // A call refused as not granted to a caller whose token lacks an upstream's scope, when the
    // principal itself holds the grant: the refusal names the scope (so the client can ask for it).
    boost::asio::awaitable<void> async_explain_scope(call_refusal& refusal, mcp::request_context const& ctx,
                                                     gateway_principal const& narrowed, std::string const& name);
    boost::asio::awaitable<mcp::handler_result> async_refuse(call_refusal const& refusal, std::string const& run,
                                                             gateway_principal const& p);
    // Journals effect_started with a (signed) provenance block; the effect key, or the reply that
    // refuses the call.
    struct started {
        std::string effect_key;
        core::provenance provenance;
    };
    boost::asio::awaitable<boost::system::result<started, mcp::error_object>> async_start(
        planned_call const& plan, boost::json::value const& arguments, std::string const& run,
        gateway_principal const& p, mcp::request_context const& ctx);
    boost::asio::awaitable<mcp::handler_result> async_send(planned_call const& plan, boost::json::value arguments,
                                                           std::string run, gateway_principal const& p,
                                                           mcp::request_context& ctx, std::shared_ptr<void> hold);
    std::string nonce();

    call_options options_;
    std::shared_ptr<roster const> roster_;
    std::shared_ptr<catalogue> tools_;
    std::shared_ptr<session_runs> runs_;
    std::shared_ptr<relays> streams_;
};

}  // namespace airlock::service
