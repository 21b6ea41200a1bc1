#pragma once
// One request of airlock's to an authorization server (its metadata, its JWKS, its introspection
// endpoint): over https (plain http only for this machine), with the issuer's TLS settings, to a
// destination egress permits (each resolved address checked too), and a JSON object back.

#include "core/error.hpp"
#include "core/policy.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace airlock::service {

struct oauth_issuer_source {
    std::string issuer;  // exact
    bool verify_peer = true;
    std::optional<std::string> ca_file;
};

struct oauth_request {
    std::string url;
    std::optional<std::string> form_body;  // set: a POST of application/x-www-form-urlencoded
    std::string authorization;             // the Authorization header's value, if any (a secret)
};

// The 200 answer's JSON object; an error ("oauth_fetch") naming the URL and what failed.
boost::asio::awaitable<core::result<boost::json::object>> async_fetch_json(
    boost::asio::any_io_executor exec, oauth_request rq, oauth_issuer_source const& src,
    core::egress_allowlist const& egress, std::chrono::milliseconds deadline, std::size_t max_bytes);

}  // namespace airlock::service
