#include "service/rest/problem.hpp"

#include "core/secrets.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

// http_status is a switch with no default: a new errc without a status is a compile error here.
#pragma GCC diagnostic error "-Wswitch"

namespace airlock::service {

namespace json = boost::json;

namespace {

constexpr std::string_view problem_type_base = "https://airlock.dev/problems/";

}  // namespace

http::status http_status(core::errc code) noexcept {
    using core::errc;
    switch (code) {
    case errc::bad_request: return http::status::bad_request;
    case errc::invalid_field:
    case errc::invalid_input:
    case errc::too_deep:
    case errc::unknown_agent:
    case errc::unknown_capability: return http::status::unprocessable_entity;
    case errc::unsupported_media_type: return http::status::unsupported_media_type;
    case errc::not_found:
    case errc::unknown_run: return http::status::not_found;
    case errc::method_not_allowed: return http::status::method_not_allowed;
    case errc::forbidden_host:
    case errc::forbidden_origin:
    case errc::forbidden: return http::status::forbidden;
    case errc::unauthorized: return http::status::unauthorized;
    case errc::not_running:
    case errc::sealed:
    case errc::not_pending:
    case errc::divergence:
    case errc::conflict:
    case errc::not_an_agent_run: return http::status::conflict;
    case errc::at_capacity: return http::status::too_many_requests;
    case errc::unavailable:
    case errc::closed: return http::status::service_unavailable;
    // A provider, a run id or a record airlock cannot use is airlock's fault, not the caller's.
    case errc::unknown_provider:
    case errc::invalid_run:
    case errc::invalid_runner:
    case errc::malformed_record:
    case errc::not_admitted:
    case errc::internal: return http::status::internal_server_error;
    }
    return http::status::internal_server_error;  // not reached: every errc is a case above
}

http_response problem(http::status status, std::string_view title, std::string_view detail, field_errors fields,
                      unsigned version) {
    json::object o;
    o["type"] = std::string(problem_type_base) + std::string(title);
    o["title"] = title;
    o["status"] = static_cast<unsigned>(status);
    o["detail"] = detail;
    if (!fields.empty()) {
        json::array errors;
        for (auto& [field, message] : fields) {
            json::object e;
            e["field"] = field;
            e["message"] = message;
            errors.push_back(std::move(e));
        }
        o["errors"] = std::move(errors);
    }
    core::secrets::redact(o);
    auto res = json_response(status, json::serialize(o), version);
    res.set(http::field::content_type, "application/problem+json");
    return res;
}

http_response problem(core::errc code, std::string_view detail, field_errors fields, unsigned version) {
    return problem(http_status(code), core::to_string(code), detail, std::move(fields), version);
}

http_response problem(http::status status, core::errc code, std::string_view detail, field_errors fields,
                      unsigned version) {
    return problem(status, core::to_string(code), detail, std::move(fields), version);
}

http::status problem_status(std::string_view code) noexcept {
    if (auto e = core::errc_from_string(code)) return http_status(*e);
    return http::status::internal_server_error;
}

http_response problem_for(core::error const& e, unsigned version, std::string_view field) {
    field_errors fields;
    if (!field.empty()) fields.emplace_back(std::string(field), e.message);
    return problem(problem_status(e.code), e.code, e.message, std::move(fields), version);
}

}  // namespace airlock::service
