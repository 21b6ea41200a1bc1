#pragma once
// The REST API's errors on the wire: RFC 9457 problem documents, and the one map from airlock's
// error codes (core/errc.hpp) to HTTP statuses.

#include "core/errc.hpp"
#include "core/error.hpp"
#include "service/http/http_server.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::service {

// (field, message) pairs: what a problem's `errors` name.
using field_errors = std::vector<std::pair<std::string, std::string>>;

// The status a code answers with. Exhaustive: a new errc without a status does not compile.
http::status http_status(core::errc code) noexcept;

// RFC 9457: {type, title, status, detail, errors?:[{field, message}]}.
http_response problem(http::status status, std::string_view title, std::string_view detail,
                      field_errors fields = {}, unsigned version = 11);
// The same, titled with the code's spelling and answered with its status.
http_response problem(core::errc code, std::string_view detail, field_errors fields = {}, unsigned version = 11);
// For the few places a code is answered with another status than its own: a query parameter at fault
// is a 400 invalid_field, where a body's field at fault is a 422.
http_response problem(http::status status, core::errc code, std::string_view detail, field_errors fields = {},
                      unsigned version = 11);

// The HTTP status of an error code as run_control and the journal return them: the errc's when the
// code is one, 500 for anything else (a store's own codes are its faults, not the caller's).
http::status problem_status(std::string_view code) noexcept;
// A problem for an error from the runtime or the journal, titled with its code; `field`, when given,
// is named in its errors with the error's message.
http_response problem_for(core::error const& e, unsigned version, std::string_view field = {});

}  // namespace airlock::service
