#pragma once
// The HTTP(S) client model providers talk through: JSON POSTs over the MCP transport's keep-alive
// pool (TLS verification with SNI, resolved-address egress checks), a deadline per attempt, 429
// and 5xx retried a bounded number of times honouring Retry-After, and every failure classified
// like a tool error: did it happen, is it in doubt, did it land.

#include "core/model.hpp"
#include "core/policy.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::service::providers {

struct http_client_options {
    std::string provider;  // names the provider in errors and log lines, e.g. "model://openai/gpt"
    std::string base_url;  // http(s)://host[:port][/path]; request paths are appended to it
    // Sent on every request; never logged.
    std::vector<std::pair<std::string, std::string>> headers;
    // Credentials (the API key): scrubbed from every error detail, whatever the provider echoes.
    std::vector<std::string> secrets;
    bool verify_peer = true;
    std::optional<std::string> ca_file;

    std::chrono::milliseconds deadline{120'000};        // one attempt: connect, send, the whole response
    std::chrono::milliseconds connect_timeout{10'000};  // resolve + connect + TLS, within the deadline
    unsigned max_retries = 2;                           // further attempts after a 429 or 5xx
    // The longest wait between attempts. A Retry-After asking for longer ends the retries: the
    // provider said when to come back, and coming back sooner would only be refused again.
    std::chrono::milliseconds max_retry_wait{60'000};
    std::chrono::milliseconds retry_backoff{500};  // first wait when no Retry-After is given; doubles
    std::size_t max_body_bytes = 16 * 1024 * 1024;  // a response body
    // Requests in flight at once, each on a connection of its own; more wait their turn, in order
    // of arrival, within their deadline. Thousands of runs asking one provider at the same moment
    // then share a bounded set of kept-alive connections instead of opening a socket each (a burst
    // of connects overflows the listener's backlog and ends in connect timeouts).
    std::size_t max_connections = 256;
    std::size_t pool_size = 256;  // idle kept-alive connections kept for reuse

    // The deployment's egress allowlist: a base_url it does not name is refused before anything is
    // sent, and restricted addresses (loopback, private, metadata) are connected to only when named.
    core::egress_allowlist egress;
};

// Seconds to wait from a Retry-After value: delay-seconds, or an HTTP-date taken relative to
// `now`. nullopt when the value is neither; a date in the past is zero.
std::optional<std::chrono::seconds> parse_retry_after(std::string_view value,
                                                      std::chrono::system_clock::time_point now);

// `text` with every occurrence of each secret replaced by "[redacted]".
std::string scrub(std::string text, std::vector<std::string> const& secrets);

class http_client {
public:
    http_client(boost::asio::any_io_executor exec, http_client_options opts);
    ~http_client();
    http_client(http_client const&) = delete;
    http_client& operator=(http_client const&) = delete;

    // POSTs `body` as JSON to base_url + `path` and parses the 2xx answer as JSON. Errors:
    // refused (egress, 4xx, 429 after retries), unreachable (no connection), timed_out (sent, no
    // complete answer), tool_failed (5xx after retries), malformed (a 2xx body that is not JSON or
    // is too large). Details name the provider and the status, never a credential.
    boost::asio::awaitable<core::model_result<boost::json::value>> async_post_json(std::string path,
                                                                                    boost::json::value body);

    // remote{scheme, host, port} of base_url; a default remote when base_url does not parse.
    core::destination destination() const;
    // Why nothing can be sent (bad base_url, header or CA file); nullopt when fine.
    std::optional<std::string> setup_problem() const;

    struct state;

private:
    std::shared_ptr<state> state_;
};

}  // namespace airlock::service::providers
