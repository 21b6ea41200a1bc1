#pragma once
// What the HTTP server refuses in a request before any handler sees it, as pure functions over the
// request Beast parsed (or the bytes it read): fields given twice that must be given once, and a
// framing (Transfer-Encoding, Content-Length) the server does not read as its sender meant.

#include "service/http/http_server.hpp"

#include <optional>
#include <string_view>

namespace airlock::service {

// Fields that hold one value. Sent twice, two parts of airlock (or a proxy and airlock) could each
// read a different one: the credentials checked need not be those a later reader sees. The first
// such field the request repeats; nullopt when none.
std::optional<std::string_view> repeated_singleton_field(http_request const& req);

// The target of the request line at the start of `bytes`; empty when that line is not there whole.
std::string_view request_line_target(std::string_view bytes);

// A request whose framing the server does not read as its sender meant, refused before its body is
// read. Transfer-Encoding in HTTP/1.0 (which has none), beside Content-Length (two lengths that a
// proxy and airlock could each take differently: how requests are smuggled), or without chunked
// as its last coding, once (the body's end cannot be known): 400, as RFC 9112 asks. A coding
// other than chunked before it (gzip, deflate, ...): 501, since none is decoded, and a body still
// gzipped would otherwise be read as the JSON it encodes. nullopt for chunked alone, a length, or neither.
struct framing_refusal {
    http::status status;
    std::string_view code;
    std::string_view message;
};
std::optional<framing_refusal> refuse_framing(http_request const& req);

}  // namespace airlock::service
