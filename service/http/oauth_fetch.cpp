#include "service/http/oauth_fetch.hpp"

#include "core/ascii.hpp"
#include "mcp/client/http_pool.hpp"
#include "mcp/client/on_strand.hpp"
#include "mcp/client/router.hpp"
#include "service/http/door.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/parse.hpp>

namespace airlock::service {

namespace asio = boost::asio;
namespace json = boost::json;
using std::chrono::milliseconds;

namespace {

// Runs on a strand of its own (the pool's members must).
asio::awaitable<core::result<json::object>> fetch_on(asio::strand<asio::any_io_executor> strand, oauth_request rq,
                                                     oauth_issuer_source src, core::egress_allowlist egress,
                                                     milliseconds deadline_in, std::size_t max_bytes) {
    auto const& url = rq.url;
    auto e = mcp::parse_http_url(url);
    if (!e) co_return core::make_error("oauth_fetch", url + ": " + e.error().message);
    if (e->scheme != "https" && !is_loopback_host(e->host))
        co_return core::make_error("oauth_fetch", url + " is not https:// (plain http only for this machine)");
    core::destination dest = core::remote_destination{e->scheme, core::ascii_lowercase(e->host), e->port};
    if (auto gate = core::destination_gate(egress, dest); !gate)
        co_return core::make_error("oauth_fetch", url + ": egress does not permit " + core::to_string(dest) +
                                                      " (add it to egress)");
    mcp::http_pool_options po;
    po.log_name = "oauth";
    po.url = url;
    po.verify_peer = src.verify_peer;
    po.ca_file = src.ca_file;
    po.connect_timeout = deadline_in;
    po.pool_size = 0;
    po.allow_address = [egress, scheme = e->scheme, port = e->port](asio::ip::address const& a) {
        return mcp::address_permitted(egress, scheme, port, a);
    };
    mcp::http_pool pool(strand, std::move(po));
    if (auto const& p = pool.setup_problem()) co_return core::make_error("oauth_fetch", url + ": " + *p);
    auto const deadline = std::chrono::steady_clock::now() + deadline_in;
    mcp::http_wire::outgoing out;
    out.verb = rq.form_body ? boost::beast::http::verb::post : boost::beast::http::verb::get;
    out.headers.add("Accept", "application/json");
    if (rq.form_body) {
        out.body = std::move(*rq.form_body);
        out.headers.add("Content-Type", "application/x-www-form-urlencoded");
    }
    // A credential (the introspection client's): never in a message below.
    if (!rq.authorization.empty()) out.headers.add("Authorization", rq.authorization);
    auto ex = co_await pool.async_send(std::move(out), deadline);
    if (!ex) co_return core::make_error("oauth_fetch", url + ": " + ex.error().detail);
    auto const status = ex->status();
    auto body = co_await mcp::http_wire::read_body(*ex, max_bytes, deadline);
    ex->conn->close();
    if (body.too_large)
        co_return core::make_error("oauth_fetch", url + " answered more than " + std::to_string(max_bytes) + " bytes");
    if (body.ec) co_return core::make_error("oauth_fetch", url + ": " + mcp::http_wire::describe(body.ec));
    if (status != 200) co_return core::make_error("oauth_fetch", url + " answered HTTP " + std::to_string(status));
    boost::system::error_code jec;
    json::parse_options opt;
    opt.max_depth = 32;
    auto v = json::parse(body.text, jec, {}, opt);
    if (jec || !v.is_object()) co_return core::make_error("oauth_fetch", url + " did not answer a JSON object");
    co_return std::move(v.get_object());
}

}  // namespace

asio::awaitable<core::result<json::object>> async_fetch_json(asio::any_io_executor exec, oauth_request rq,
                                                             oauth_issuer_source const& src,
                                                             core::egress_allowlist const& egress, milliseconds deadline,
                                                             std::size_t max_bytes) {
    auto strand = asio::make_strand(exec);
    co_return co_await mcp::co_await_on(strand, fetch_on(strand, std::move(rq), src, egress, deadline, max_bytes));
}

}  // namespace airlock::service
