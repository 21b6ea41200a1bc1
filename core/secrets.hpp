#pragma once
// Configured secret values, and the one function that hides them in whatever airlock writes or
// relays: log lines, replies to clients (results, errors, notifications), model requests, the
// journal. A secret is replaced by "[redacted]" wherever it occurs, also as it reads inside a JSON
// string (a tool's text is often JSON) and percent-encoded (a URL in an error text).

#include <boost/json/fwd.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::core {

// A set of secret values; redacting with it is a pure function of the set and the text.
class secret_set {
public:
    // Values shorter than this are not secrets anyone could rely on, and hiding them would mangle
    // ordinary words and numbers in every output: they are ignored (`airlock check` warns).
    static constexpr std::size_t min_bytes = 6;
    static constexpr std::string_view mark = "[redacted]";

    // False when `secret` is ignored for being shorter than min_bytes.
    bool add(std::string_view secret);
    bool empty() const noexcept { return forms_.empty(); }

    // Each returns true when it replaced something.
    bool redact(std::string& text) const;
    // `text` was cut short by airlock (an excerpt, a capped line): beyond redact, a trailing piece
    // of at least 3 bytes that begins a secret is replaced too, so a cut never shows half a secret.
    bool redact_cut(std::string& text) const;
    // Every string and object key, at any depth; a number whose digits hold a secret becomes the
    // string "[redacted]".
    bool redact(boost::json::value& v) const;
    bool redact(boost::json::object& o) const;
    bool found_in(std::string_view text) const;

private:
    std::vector<std::string> forms_;  // every secret as written and escaped, longest first
    bool numeric_ = false;            // some form could be written as a JSON number
};

// The process's secrets: every layer reaches the same set, so no output can use a list of its
// own that misses one. Values are registered when a configuration loads (see
// service::register_secrets) and stay registered: a value once configured stays hidden after a
// reload drops it. The functions are safe to call from any thread.
namespace secrets {

void add(std::string_view secret);
// Forgets every secret (tests only).
void clear();
std::shared_ptr<secret_set const> current();

void redact(std::string& text);
std::string redacted(std::string_view text);
void redact_cut(std::string& text);
void redact(boost::json::value& v);
void redact(boost::json::object& o);

}  // namespace secrets
}  // namespace airlock::core
